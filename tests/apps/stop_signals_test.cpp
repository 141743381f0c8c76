// SIGTERM (from `timeout`, a scheduler) and SIGHUP (a closed terminal) are handled like Ctrl-C
// (apps/interrupt.hpp): the case in flight finishes and is recorded, the run is closed as
// 'interrupted', the workers are stopped, and the process exits 130. Those signals reach the whole
// process group, workers included: a worker ignores them (its orchestrator stops it), so none is
// recorded as a crash of the config it was evaluating.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "base/exit_codes.hpp"
#include "tests/apps/cli_runner.hpp"
#include "tests/apps/sweep_processes.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;
using testing::db_number;
using testing::db_text;
using testing::eventually;

class StopSignals : public testing::Cli {
 protected:
  StopSignals() { binary_ = ATTN_TUNE_BINARY; }

  // Waits for the sweep into `db` to record two measurements, sends `signal` with `send`, and
  // checks what it must leave: exit 130, the run 'interrupted' with its end time, the case in
  // flight finished, no crash recorded, no worker left a second after the exit. Then the same
  // command finishes the sweep, each config once.
  void expect_stopped_cleanly(testing::Child& tune, const fs::path& workload, const fs::path& db,
                              const std::string& marker, const std::function<void()>& send,
                              const std::string& what) {
    ASSERT_GT(tune.pid(), 0);
    ASSERT_TRUE(
        eventually([&] { return db_number(db, "SELECT count(*) FROM measurements") >= 2; }, 60))
        << testing::slurp(dir_ / "err");
    const auto sent = std::chrono::steady_clock::now();
    send();
    const int status = tune.wait();
    const double stop_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count();
    const std::string out = testing::slurp(dir_ / "out"), err = testing::slurp(dir_ / "err");
    ASSERT_TRUE(WIFEXITED(status)) << what << " killed it: " << status << "\n" << err;
    EXPECT_EQ(WEXITSTATUS(status), int(ExitCode::interrupted)) << out << err;
    EXPECT_NE(err.find("attn-tune: " + what + ": stopping after the sample in hand"),
              std::string::npos)
        << err;
    EXPECT_NE(err.find("attn-tune: interrupted; the database is consistent"), std::string::npos)
        << err;
    EXPECT_LT(stop_seconds, 10) << "it should stop after the case in progress";
    EXPECT_EQ(db_text(db, "SELECT status FROM runs WHERE id = 1"), "interrupted");
    EXPECT_NE(db_text(db, "SELECT finished_at FROM runs WHERE id = 1"), "NULL");
    EXPECT_EQ(db_number(db, "SELECT count(*) FROM attempts WHERE status = 'started'"), 0);
    EXPECT_EQ(db_number(db, "SELECT count(*) FROM measurements WHERE disposition != 'passed'"), 0)
        << "a worker killed by the signal was recorded as a crash of its config";
    const auto exited = std::chrono::steady_clock::now();
    eventually([&] { return testing::processes_with(marker) == 0; }, 5);
    const double workers_gone =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - exited).count();
    EXPECT_EQ(testing::processes_with(marker), 0) << "a worker outlived the orchestrator";
    EXPECT_LT(workers_gone, 1.0);
    std::cout << "[ stop signals ] " << what << ": exit " << WEXITSTATUS(status) << " after "
              << stop_seconds << " s, workers gone " << workers_gone << " s after the exit\n";

    testing::Child again(testing::sweep_args(workload, db, true), testing::sweep_env(marker),
                         dir_ / "out", dir_ / "err");
    EXPECT_EQ(again.wait(), 0) << testing::slurp(dir_ / "err");
    EXPECT_EQ(db_number(db, R"sql(
      SELECT count(*) FROM (SELECT DISTINCT variant, config_key FROM measurements
                            WHERE disposition = 'passed'))sql"),
              testing::kSweepConfigs);
    EXPECT_EQ(db_number(db, "SELECT count(*) FROM measurements"), testing::kSweepConfigs);
  }
};

// `timeout` sends SIGTERM to the command and then to its whole process group (it leads one), as a
// batch scheduler signals every process of a job: here when the timeout process itself is told to
// stop, so that the moment is chosen by the test rather than by a clock.
TEST_F(StopSignals, SigtermFromTimeoutStopsTheSweepAndItsWorkerCleanly) {
  const fs::path timeout = "/usr/bin/timeout";
  if (!fs::exists(timeout)) GTEST_SKIP() << "no " << timeout;
  const fs::path workload = write("tiny.json", testing::tiny_prefill_json("stop-sigterm"));
  const fs::path db = dir_ / "term.db";
  const std::string marker = "stop-sigterm-" + std::to_string(::getpid());
  std::vector<std::string> args = {timeout.string(), "--preserve-status", "600"};
  for (const std::string& a : testing::sweep_args(workload, db, true)) args.push_back(a);
  testing::Child tune(args, testing::sweep_env(marker), dir_ / "out", dir_ / "err");
  expect_stopped_cleanly(
      tune, workload, db, marker, [&] { ::kill(tune.pid(), SIGTERM); }, "SIGTERM");
}

// A closed terminal: SIGHUP to the job's process group, orchestrator and workers alike.
TEST_F(StopSignals, SighupToTheProcessGroupStopsTheSweepAndItsWorkerCleanly) {
  const fs::path workload = write("tiny.json", testing::tiny_prefill_json("stop-sighup"));
  const fs::path db = dir_ / "hup.db";
  const std::string marker = "stop-sighup-" + std::to_string(::getpid());
  testing::Child tune(testing::sweep_args(workload, db, true), testing::sweep_env(marker),
                      dir_ / "out", dir_ / "err", /*own_process_group=*/true);
  expect_stopped_cleanly(
      tune, workload, db, marker, [&] { ::kill(-tune.pid(), SIGHUP); }, "SIGHUP");
}

// attn-bench run stops on SIGTERM the same way: the case in progress is recorded, the run closed.
TEST_F(StopSignals, SigtermStopsABenchRunBetweenCases) {
  const fs::path workload = write("tiny.json", testing::tiny_prefill_json("stop-bench"));
  const fs::path db = dir_ / "bench.db";
  testing::Child bench({ATTN_BENCH_BINARY, "run", "--cpu", workload.string(), "--db", db.string(),
                        "--threads", "1", "--benchmark_repetitions=400"},
                       {"ATTN_DB="}, dir_ / "out", dir_ / "err");
  ASSERT_GT(bench.pid(), 0);
  ASSERT_TRUE(
      eventually([&] { return db_number(db, "SELECT count(*) FROM measurements") >= 2; }, 60))
      << testing::slurp(dir_ / "err");
  ::kill(bench.pid(), SIGTERM);
  const int status = bench.wait();
  const std::string err = testing::slurp(dir_ / "err");
  ASSERT_TRUE(WIFEXITED(status)) << status << err;
  EXPECT_EQ(WEXITSTATUS(status), int(ExitCode::interrupted)) << err;
  EXPECT_NE(err.find("attn-bench: SIGTERM: stopping after the sample in hand"), std::string::npos)
      << err;
  EXPECT_EQ(db_text(db, "SELECT status FROM runs WHERE id = 1"), "interrupted");
  const int64_t measured = db_number(db, "SELECT count(*) FROM measurements");
  EXPECT_GE(measured, 2);
  EXPECT_LT(measured, 6 * 400);
}

// One SIGTERM delivered twice (what `timeout` does: to its command, then to its process group) is
// one request: the case in progress still finishes. A SIGTERM from another sender is a second
// request and quits at once (as is the same sender's after 0.25 s: Signals.*SecondCtrlC*). A
// case of this workload takes well over a second on the CPU.
TEST_F(StopSignals, ASigtermDeliveredTwiceIsOneRequestAnotherSendersQuitsAtOnce) {
  const fs::path workload = write("long.json", R"({
  "schema_version": 1,
  "name": "stop-twice",
  "model": {"num_q_heads": 8, "num_kv_heads": 2, "head_dim": 128, "dtype": "bf16"},
  "kv_cache": {"page_size": 16},
  "sequences": [{"context_len": 512, "query_len": 128, "count": 2}],
  "seed": 5
})");
  const fs::path db = dir_ / "twice.db";
  testing::Child bench({ATTN_BENCH_BINARY, "run", "--cpu", workload.string(), "--db", db.string(),
                        "--threads", "1", "--variant", "prefix_prefill.*", "--samples", "20"},
                       {"ATTN_DB="}, dir_ / "out", dir_ / "err");
  ASSERT_GT(bench.pid(), 0);
  ASSERT_TRUE(eventually([&] { return db_number(db, "SELECT count(*) FROM runs") == 1; }, 60))
      << testing::slurp(dir_ / "err");
  ::usleep(200000);
  ::kill(bench.pid(), SIGTERM);
  // Once the handler has run (it says so), so that the second copy is not merged with the first:
  // the same sender, at once, as `timeout` does.
  ASSERT_TRUE(eventually(
      [&] { return testing::slurp(dir_ / "err").find("SIGTERM: stopping") != std::string::npos; },
      10));
  ::kill(bench.pid(), SIGTERM);
  ::usleep(400000);
  int status = 0;
  ASSERT_FALSE(bench.exited(status)) << "the same sender's repeat quit the case in progress\n"
                                     << testing::slurp(dir_ / "err");
  // Another sender: /bin/kill.
  const auto sent = std::chrono::steady_clock::now();
  testing::Child other({"/bin/kill", "-TERM", std::to_string(bench.pid())}, {}, dir_ / "kill.out",
                       dir_ / "kill.err");
  EXPECT_EQ(other.wait(), 0) << testing::slurp(dir_ / "kill.err");
  status = bench.wait();
  const double quit_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count();
  const std::string err = testing::slurp(dir_ / "err");
  ASSERT_TRUE(WIFEXITED(status)) << status << err;
  EXPECT_EQ(WEXITSTATUS(status), int(ExitCode::interrupted)) << err;
  EXPECT_LT(quit_seconds, 2.0);
  const std::string first = "attn-bench: SIGTERM: stopping after the sample in hand";
  ASSERT_NE(err.find(first), std::string::npos) << err;
  EXPECT_EQ(err.find(first, err.find(first) + 1), std::string::npos) << err;
  EXPECT_NE(err.find("attn-bench: SIGTERM again: quitting now"), std::string::npos) << err;
  EXPECT_EQ(db_text(db, "SELECT status FROM runs WHERE id = 1"), "interrupted");
  EXPECT_EQ(db_number(db, "SELECT count(*) FROM measurements"), 0);
}

}  // namespace
}  // namespace attn
