// A run never stays `running` once its process is gone: one killed with SIGKILL is marked
// `interrupted` by the next command that opens the database for writing (its row records the
// process: host, pid and start time), one whose process is alive is left alone, and one that
// aborts closes its own row on the way out. `attn-tune db info` shows the status.
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/apps/cli_runner.hpp"
#include "tests/apps/sweep_processes.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;
using testing::Child;
using testing::db_number;
using testing::db_text;
using testing::eventually;

class StaleRuns : public testing::Cli {
 protected:
  StaleRuns() { binary_ = ATTN_TUNE_BINARY; }
  // Starts a sweep into `db` (exhaustive, or `strategy`) and waits until it has recorded
  // `measurements`.
  std::unique_ptr<Child> sweep_until(const fs::path& workload, const fs::path& db, int measurements,
                                     const std::string& tag,
                                     const std::string& strategy = "exhaustive") {
    std::vector<std::string> args = testing::sweep_args(workload, db, false);
    args[6] = strategy;  // the value of --strategy
    auto child = std::make_unique<Child>(args, testing::sweep_env(marker_), dir_ / (tag + ".out"),
                                         dir_ / (tag + ".err"));
    EXPECT_GT(child->pid(), 0);
    EXPECT_TRUE(eventually(
        [&] { return db_number(db, "SELECT count(*) FROM measurements") >= measurements; }, 60))
        << testing::slurp(dir_ / (tag + ".err"));
    return child;
  }
  // True when a write transaction can begin at once (no other process holds the lock).
  static bool can_write(const fs::path& db) {
    try {
      Database handle(db.string(), SQLITE_OPEN_READWRITE);
      handle.exec("BEGIN IMMEDIATE");
      handle.exec("ROLLBACK");
      return true;
    } catch (const std::exception&) {
      return false;
    }
  }
  // A sweep of some seconds (the tiny workload's can end before a test stops it).
  static std::string slower_prefill_json(const std::string& name, int context_len) {
    return R"({"schema_version": 1, "name": ")" + name +
           R"(", "model": {"num_q_heads": 2, "num_kv_heads": 1, "head_dim": 64, "dtype": "bf16"},
  "kv_cache": {"page_size": 16}, "sequences": [{"context_len": )" +
           std::to_string(context_len) + R"(, "query_len": 8}], "seed": 7})";
  }
  const std::string marker_ = "stale-runs-" + std::to_string(::getpid());
};

// kill -9 in the middle of a sweep leaves its run `running`; the next `attn-tune tune` on the
// database (the resume) finds the process gone and marks the run `interrupted`, with the time.
TEST_F(StaleRuns, AKilledRunIsMarkedInterruptedByTheNextCommandThatWrites) {
  const fs::path workload = write("tiny.json", testing::tiny_prefill_json("stale-killed"));
  const fs::path db = dir_ / "killed.db";
  std::unique_ptr<Child> tune = sweep_until(workload, db, 2, "first");
  ::kill(tune->pid(), SIGKILL);
  const int status = tune->wait();
  ASSERT_TRUE(WIFSIGNALED(status)) << status;
  EXPECT_EQ(db_text(db, "SELECT status FROM runs WHERE id = 1"), "running");
  EXPECT_EQ(db_text(db, "SELECT finished_at FROM runs WHERE id = 1"), "NULL");
  // db info (read-only) says so, and changes nothing.
  const testing::CliResult before = run({"db", "info", "--db", db.string()});
  ASSERT_EQ(before.exit_code, 0) << before.err;
  EXPECT_NE(before.out.find("running, but its process " + std::to_string(tune->pid()) +
                            " is gone (the next command that writes to this database marks it "
                            "interrupted)"),
            std::string::npos)
      << before.out;
  const testing::CliResult json = run({"db", "info", "--db", db.string(), "--json"});
  EXPECT_NE(json.out.find("\"process\": \"gone\""), std::string::npos) << json.out;
  EXPECT_EQ(db_text(db, "SELECT status FROM runs WHERE id = 1"), "running");

  Child resume(testing::sweep_args(workload, db, false), testing::sweep_env(marker_),
               dir_ / "resume.out", dir_ / "resume.err");
  ASSERT_EQ(resume.wait(), 0) << testing::slurp(dir_ / "resume.err");
  EXPECT_EQ(db_text(db, "SELECT status FROM runs WHERE id = 1"), "interrupted");
  EXPECT_NE(db_text(db, "SELECT finished_at FROM runs WHERE id = 1"), "NULL");
  EXPECT_EQ(db_text(db, "SELECT status FROM runs WHERE id = 2"), "completed");

  const testing::CliResult info = run({"db", "info", "--db", db.string()});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_NE(info.out.find("  interrupted, "), std::string::npos) << info.out;
  EXPECT_EQ(info.out.find("  running, "), std::string::npos) << info.out;
}

// While a sweep runs, another command writing the same database leaves its run `running`: its
// process is alive.
TEST_F(StaleRuns, ARunWhoseProcessIsAliveIsLeftRunning) {
  // Not the tiny workload: its sweep can end before it is stopped below.
  const fs::path slow = write("slow.json", slower_prefill_json("stale-alive", 256));
  const fs::path other = write("other.json", testing::tiny_prefill_json("stale-other", 12));
  const fs::path db = dir_ / "alive.db";
  std::unique_ptr<Child> tune = sweep_until(slow, db, 1, "slow");
  // Stopped, it stays alive in the middle of its sweep; not inside a write transaction, which would
  // hold the lock the second command needs.
  for (int tries = 0; tries < 100; ++tries) {
    ::kill(tune->pid(), SIGSTOP);
    ::usleep(10000);
    if (can_write(db)) break;
    ::kill(tune->pid(), SIGCONT);
    ::usleep(20000);
  }
  std::vector<std::string> args = testing::sweep_args(other, db, false);
  args[4] = "flash_fwd.cpu_reference";  // the --variant
  Child second(args, testing::sweep_env(marker_), dir_ / "second.out", dir_ / "second.err");
  const int status = second.wait();
  ::kill(tune->pid(), SIGCONT);
  ASSERT_EQ(status, 0) << testing::slurp(dir_ / "second.err");
  EXPECT_EQ(db_text(db, "SELECT status FROM runs WHERE id = 1"), "running");
  EXPECT_EQ(db_text(db, "SELECT status FROM runs WHERE id = 2"), "completed");
  // Its owner closes it: stopped now (the whole sweep takes long), it says `interrupted`.
  ::kill(tune->pid(), SIGTERM);
  const int stopped = tune->wait();
  EXPECT_TRUE(WIFEXITED(stopped) && WEXITSTATUS(stopped) == 130)
      << testing::slurp(dir_ / "slow.err");
  EXPECT_EQ(db_text(db, "SELECT status FROM runs WHERE id = 1"), "interrupted");
}

// SIGABRT (what abort() raises) while a config is evaluated: the process closes its run row before
// it dies of the signal. (One that dies inside a write transaction of its own cannot: its run is
// closed as 'interrupted' by the next writer, as after a kill -9.)
TEST_F(StaleRuns, AnAbortClosesTheRunRowOnTheWayOut) {
  // Some hundred microseconds per CPU reference launch: the sweep takes seconds, so it is still
  // in progress when the signal comes.
  const fs::path workload = write("slower.json", slower_prefill_json("stale-abort", 512));
  const fs::path db = dir_ / "abort.db";
  // No core file: the process dies of SIGABRT on purpose.
  struct rlimit previous {};
  ::getrlimit(RLIMIT_CORE, &previous);
  struct rlimit none = previous;
  none.rlim_cur = 0;
  ::setrlimit(RLIMIT_CORE, &none);
  // Halving: its first evaluations (the screen policy) are the short ones.
  std::unique_ptr<Child> tune = sweep_until(workload, db, 1, "abort", "halving");
  ::setrlimit(RLIMIT_CORE, &previous);
  const int64_t attempts = db_number(db, "SELECT count(*) FROM attempts");
  ASSERT_TRUE(
      eventually([&] { return db_number(db, "SELECT count(*) FROM attempts") > attempts; }, 60));
  // The signal must not land while the process holds a write transaction of its own (then its
  // handler cannot close the row: see above). Stop it where no write lock is held, send the
  // signal, and let it go on: the signal is delivered before it runs another instruction.
  bool outside_a_write = false;
  for (int tries = 0; tries < 200 && !outside_a_write; ++tries) {
    ::kill(tune->pid(), SIGSTOP);
    ::usleep(5000);
    outside_a_write = can_write(db);
    if (!outside_a_write) {
      ::kill(tune->pid(), SIGCONT);
      ::usleep(3000);
    }
  }
  ASSERT_TRUE(outside_a_write);
  ::kill(tune->pid(), SIGABRT);
  ::kill(tune->pid(), SIGCONT);
  const int status = tune->wait();
  ASSERT_TRUE(WIFSIGNALED(status)) << status;
  EXPECT_EQ(WTERMSIG(status), SIGABRT);
  EXPECT_EQ(db_text(db, "SELECT status FROM runs WHERE id = 1"),
            "error: killed by signal 6 (Aborted)");
  EXPECT_NE(db_text(db, "SELECT finished_at FROM runs WHERE id = 1"), "NULL");
}

}  // namespace
}  // namespace attn
