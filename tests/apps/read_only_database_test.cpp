// The commands that only read (`attn-tune db info`, `export`, `compare`, `report`) work on a
// WAL-mode database in a folder the user cannot write, where SQLite cannot create the -shm file
// a WAL reader needs ("attempt to write a readonly database" before). The tests run as root here
// and in CI, and root ignores file permissions: as root each command runs as `nobody` (uid and gid
// 65534) in a forked child, from a copy of the binary in the test's folder (the build folder may
// be closed to other users); otherwise as the test's own user. Either way the test first checks
// that this user really cannot create a file in the database's folder.
#include <fcntl.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "results/sqlite.hpp"
#include "results/store.hpp"
#include "tests/apps/cli_runner.hpp"
#include "tests/results/export_fixture.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

constexpr uid_t kNobody = 65534;

class ReadOnlyDatabase : public testing::Cli {
 protected:
  void SetUp() override {
    Cli::SetUp();
    fs::permissions(dir_, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec);
    locked_ = dir_ / "locked";
    fs::create_directories(locked_);
    out_ = dir_ / "out";  // where the command writes (report -o), open to the user
    fs::create_directories(out_);
    binary_ = ATTN_TUNE_BINARY;
    if (::geteuid() == 0) {
      fs::copy_file(ATTN_TUNE_BINARY, dir_ / "attn-tune");
      binary_ = (dir_ / "attn-tune").string();
      if (::chown(out_.c_str(), kNobody, kNobody) != 0) ADD_FAILURE() << "chown " << out_;
    }
  }
  void TearDown() override {
    fs::permissions(locked_, fs::perms::owner_all);
    Cli::TearDown();
  }

  // Puts `source` (a WAL database, closed: no -wal or -shm beside it) into the locked folder as
  // results.db, then takes write permission from the folder and the file.
  std::string lock(const std::string& source) {
    const fs::path db = locked_ / "results.db";
    fs::copy_file(source, db);
    fs::permissions(db, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
    fs::permissions(locked_, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                                 fs::perms::group_exec | fs::perms::others_read |
                                 fs::perms::others_exec);
    return db.string();
  }

  // Runs `argv` (argv[0] the program) with stdout and stderr to files, as a user who cannot write
  // the locked folder: `nobody` when the test runs as root, else the test's own user.
  testing::CliResult run_unprivileged(const std::vector<std::string>& argv) {
    const fs::path out = dir_ / "stdout", err = dir_ / "stderr";
    const pid_t pid = ::fork();
    if (pid == 0) {
      // The child: open the output files (as root, before dropping), drop to nobody, exec.
      const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (o < 0 || e < 0 || ::dup2(o, 1) < 0 || ::dup2(e, 2) < 0) ::_exit(126);
      if (::geteuid() == 0 &&
          (::setgroups(0, nullptr) != 0 || ::setgid(kNobody) != 0 || ::setuid(kNobody) != 0)) {
        ::_exit(125);
      }
      if (::chdir(out_.c_str()) != 0) ::_exit(124);
      std::vector<std::string> storage = argv;
      std::vector<char*> args;
      for (std::string& a : storage) args.push_back(a.data());
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    testing::CliResult r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = testing::slurp(out);
    r.err = testing::slurp(err);
    return r;
  }

  testing::CliResult tune(std::vector<std::string> args) {
    args.insert(args.begin(), binary_);
    return run_unprivileged(args);
  }

  // The premise: this user cannot create a file in the locked folder (SQLite's -shm included).
  void expect_folder_is_not_writable() {
    const testing::CliResult r = run_unprivileged(
        {"/bin/sh", "-c", "touch " + testing::quote((locked_ / "probe").string())});
    ASSERT_NE(r.exit_code, 0) << "the test user can write " << locked_;
    ASSERT_FALSE(fs::exists(locked_ / "probe"));
  }

  void expect_nothing_written(const std::string& db, const std::string& before,
                              std::vector<std::string> files = {"results.db"}) {
    EXPECT_EQ(testing::slurp(db), before);
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(locked_)) names.push_back(e.path().filename());
    std::sort(names.begin(), names.end());
    EXPECT_EQ(names, files);
  }

  fs::path locked_, out_;
};

TEST_F(ReadOnlyDatabase, ACurrentWalDatabaseIsReadByEveryReadingCommand) {
  const std::string source = (dir_ / "source.db").string();
  {
    Store store(source);
    ASSERT_EQ(store.opening().journal_mode, "wal");
    testing::ExportFixture fixture(store);
    fixture.add_h100_results();
    fixture.add_h200_results();
  }
  const std::string db = lock(source);
  const std::string before = testing::slurp(db);
  expect_folder_is_not_writable();

  testing::CliResult r = tune({"db", "info", "--db", db});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(
      r.out.find("schema      version " + std::to_string(Store::kSchemaVersion) + ", current"),
      std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("NVIDIA H200"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("read as an immutable file"), std::string::npos) << r.out;

  r = tune({"db", "info", "--db", db, "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["counts"]["runs"], 1);
  EXPECT_EQ(nlohmann::json::parse(r.out)["read_as_immutable"], true);

  r = tune({"export", "--db", db, "--device", "H100"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["devices"].size(), 1u);

  r = tune({"compare", "--db", db, "--device", "H100", "--device", "H200"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("| decode-b40-c4000 |"), std::string::npos) << r.out;

  r = tune({"report", "--db", db, "--no-plots", "-o", (out_ / "report").string()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(fs::exists(out_ / "report" / "report.md"));

  expect_nothing_written(db, before);
}

// An older schema in a locked folder: read through the in-memory migrated copy, the file as it was.
TEST_F(ReadOnlyDatabase, AnOlderWalDatabaseIsMigratedInMemoryOnly) {
  // A copy of the committed schema v3 database, checked before it is locked (a reader beside it
  // leaves -wal and -shm files, which would let the locked one be read without the fix).
  const std::string source = (dir_ / "v3.db").string();
  fs::copy_file(
      fs::path(ATTN_SOURCE_DIR) / "docs" / "reports" / "2026-11-21-h100-vs-h200" / "results.db",
      source);
  {
    Database raw(source, SQLITE_OPEN_READONLY);
    Statement s(raw, "PRAGMA user_version");
    ASSERT_TRUE(s.step());
    ASSERT_LT(s.column_int64(0), Store::kSchemaVersion);
  }
  const std::string db = lock(source);
  const std::string before = testing::slurp(db);
  expect_folder_is_not_writable();
  testing::CliResult r = tune({"db", "info", "--db", db});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("shown as migrated in memory"), std::string::npos) << r.out;
  r = tune({"compare", "--db", db, "--device", "H100", "--device", "H200", "--format", "json"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["summary"]["workloads"], 5);
  r = tune({"export", "--db", db, "--all-devices", "--format", "cpp"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("inline constexpr Device kDevices[]"), std::string::npos);
  expect_nothing_written(db, before);
}

// A -wal file left beside the database (a writer that has not checkpointed, or died) with no -shm:
// read as immutable, the database file alone is shown, and every command says that the -wal's
// changes are not.
TEST_F(ReadOnlyDatabase, ChangesLeftInTheWalFileAreNamedAsNotShown) {
  const std::string source = (dir_ / "source.db").string();
  {
    Store store(source);
    testing::ExportFixture fixture(store);
    fixture.add_h100_results();
  }
  std::string db;
  {
    // A writer's change that stays in the -wal file while this connection is open: the files are
    // copied then (closing it would checkpoint the change into the database file).
    Database writer(source, SQLITE_OPEN_READWRITE);
    writer.exec("PRAGMA wal_autocheckpoint = 0");
    writer.exec("UPDATE runs SET status = 'edited, not checkpointed'");
    ASSERT_GT(fs::file_size(source + "-wal"), 0u);
    fs::copy_file(source + "-wal", locked_ / "results.db-wal");
    fs::permissions(locked_ / "results.db-wal",
                    fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
    db = lock(source);
  }
  const std::string before = testing::slurp(db);
  expect_folder_is_not_writable();

  testing::CliResult r = tune({"db", "info", "--db", db});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("journal     wal\naccess      read as an immutable file"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("-wal file holds"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("completed"), std::string::npos) << "the file's own status" << r.out;
  EXPECT_EQ(r.out.find("not checkpointed"), std::string::npos) << r.out;
  r = tune({"export", "--db", db});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("attn-tune: note: '" + db + "' was read as an immutable file"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("not shown"), std::string::npos) << r.err;
  expect_nothing_written(db, before, {"results.db", "results.db-wal"});
}

}  // namespace
}  // namespace attn
