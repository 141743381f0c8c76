// A results database with a damaged b-tree page, through the real binaries: `attn-bench run`
// refuses it with the environment exit code before writing anything, so the file stays byte for
// byte as it was (it used to exit 1 with a run row written into it), and `attn-tune db check`
// reports the damage with exit code 4, and a sound file with 0 (docs/database.md).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "results/sqlite.hpp"
#include "tests/apps/cli_runner.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;
using testing::CliResult;

std::string bytes_of_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

class CorruptDatabase : public testing::Cli {
 protected:
  CliResult tune(const std::vector<std::string>& args) {
    const std::string saved = binary_;
    binary_ = ATTN_TUNE_BINARY;
    CliResult r = run(args);
    binary_ = saved;
    return r;
  }
};

// 256 bytes of garbage over the cells of the `samples` table's page (they fill a page from its
// end), after folding the write-ahead log into the file.
void damage_the_samples_page(const fs::path& path) {
  int64_t page = 0, page_size = 0;
  {
    Database db(path.string(), SQLITE_OPEN_READWRITE);
    db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    Statement size(db, "PRAGMA page_size");
    ASSERT_TRUE(size.step());
    page_size = size.column_int64(0);
    Statement root(db, "SELECT rootpage FROM sqlite_master WHERE name = 'samples'");
    ASSERT_TRUE(root.step());
    page = root.column_int64(0);
  }
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  file.seekp(std::streamoff(page * page_size - 400));
  const std::string garbage(256, '\xA5');
  file.write(garbage.data(), std::streamsize(garbage.size()));
}

TEST_F(CorruptDatabase, IsRefusedBeforeAnyWriteAndReportedByDbCheck) {
  const std::string db = (dir_ / "results.db").string();
  const std::vector<std::string> run_args = {"run",      "--cpu", "--samples", "60",
                                             "--warmup", "0",     "--noise",   "0.9",
                                             "--db",     db,      "--preset",  "default"};
  ASSERT_EQ(run(run_args).exit_code, 0);
  CliResult check = tune({"db", "check", "--db", db});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  EXPECT_EQ(check.out.rfind("ok: " + db + " passes SQLite's integrity check (", 0), 0u)
      << check.out;

  damage_the_samples_page(dir_ / "results.db");
  const std::string before = bytes_of_file(db);
  const CliResult r = run(run_args);
  EXPECT_EQ(r.exit_code, testing::kEnvironment) << r.out << r.err;
  EXPECT_NE(r.err.find("attn-bench: environment: '" + db +
                       "' is damaged: SQLite's quick_check "
                       "reports: "),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("attn-tune db check --db " + db), std::string::npos) << r.err;
  EXPECT_EQ(bytes_of_file(db), before) << "the damaged file was written to";
  EXPECT_FALSE(fs::exists(db + "-wal") && fs::file_size(db + "-wal") > 0);

  check = tune({"db", "check", "--db", db});
  EXPECT_EQ(check.exit_code, testing::kEnvironment) << check.out << check.err;
  EXPECT_EQ(check.out.rfind("damaged: " + db + " fails SQLite's integrity check", 0), 0u)
      << check.out;
  EXPECT_NE(check.out.find("\n  *** in database main ***\n"), std::string::npos) << check.out;
  EXPECT_EQ(bytes_of_file(db), before) << "db check wrote to it";

  // Not an SQLite file at all; no file.
  std::ofstream(dir_ / "text.db") << "not a database\n";
  EXPECT_EQ(tune({"db", "check", "--db", (dir_ / "text.db").string()}).exit_code,
            testing::kEnvironment);
  EXPECT_EQ(tune({"db", "check", "--db", (dir_ / "none.db").string()}).exit_code, testing::kUsage);
}

}  // namespace
}  // namespace attn
