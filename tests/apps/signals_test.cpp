// Ctrl-C (SIGINT) sent to the real binaries during CPU runs (apps/interrupt.hpp): the first one
// ends the case in progress after the sample in hand (`run` records it with what it sampled; `tune`
// does not record it and measures it again on resume), prints the summary of what ran and exits
// 130 with the run marked 'interrupted'; a second one exits at once with 130. The database is
// consistent either way, and `attn-tune tune` resumes from it.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <regex>
#include <string>
#include <vector>

#include "base/exit_codes.hpp"
#include "results/sqlite.hpp"
#include "tests/apps/cli_runner.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;
using testing::Child;
using testing::eventually;

using testing::kInterrupted;

// Under a millisecond per CPU reference launch: a case that never meets its noise target on a busy
// machine still ends at its 2000 samples within about a second.
constexpr const char* kTunePrefill = R"({
  "schema_version": 1,
  "name": "signals-tune",
  "model": {"num_q_heads": 2, "num_kv_heads": 1, "head_dim": 64, "dtype": "bf16"},
  "kv_cache": {"page_size": 16},
  "sequences": [{"context_len": 56, "query_len": 8}],
  "seed": 7
})";

// About 1.5 ms per CPU reference launch.
constexpr const char* kSmallPrefill = R"({
  "schema_version": 1,
  "name": "signals-small",
  "model": {"num_q_heads": 4, "num_kv_heads": 2, "head_dim": 64, "dtype": "bf16"},
  "kv_cache": {"page_size": 16},
  "sequences": [{"context_len": 40, "query_len": 8, "count": 2}],
  "seed": 7
})";

// About a quarter of a second per CPU reference launch on one thread: a tuning case (confirm
// policy: verification, warm-up and some twenty samples) takes several seconds.
constexpr const char* kMidPrefill = R"({
  "schema_version": 1,
  "name": "signals-mid",
  "model": {"num_q_heads": 8, "num_kv_heads": 2, "head_dim": 128, "dtype": "bf16"},
  "kv_cache": {"page_size": 16},
  "sequences": [{"context_len": 512, "query_len": 16, "count": 2}],
  "seed": 5
})";

// About a second per CPU reference launch on one thread: a case takes many seconds.
constexpr const char* kLongPrefill = R"({
  "schema_version": 1,
  "name": "signals-long",
  "model": {"num_q_heads": 8, "num_kv_heads": 2, "head_dim": 128, "dtype": "bf16"},
  "kv_cache": {"page_size": 16},
  "sequences": [{"context_len": 512, "query_len": 128, "count": 2}],
  "seed": 5
})";

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The value of `sql` in the database at `path`, or -1 while it cannot be read yet (not created, or
// its schema not yet made).
int64_t query(const fs::path& path, const std::string& sql) {
  if (!fs::exists(path)) return -1;
  try {
    Database db(path.string(), SQLITE_OPEN_READONLY);
    Statement s(db, sql);
    return s.step() ? s.column_int64(0) : -1;
  } catch (const std::exception&) {
    return -1;
  }
}

std::string text(const fs::path& path, const std::string& sql) {
  Database db(path.string(), SQLITE_OPEN_READONLY);
  Statement s(db, sql);
  EXPECT_TRUE(s.step()) << sql;
  return s.column_optional_text(0).value_or("NULL");
}

// integrity_check, and no measurement without all its samples.
void expect_consistent(const fs::path& path) {
  EXPECT_EQ(text(path, "PRAGMA integrity_check"), "ok");
  EXPECT_EQ(query(path, R"sql(
    SELECT count(*) FROM measurements m
    WHERE m.sample_count != (SELECT count(*) FROM samples s
                             WHERE s.measurement_id = m.id AND s.discarded = 0))sql"),
            0);
}

class Signals : public testing::Cli {
 protected:
  // attn-tune's sweeps are of test.cpu_reference_copies; attn-bench runs the normal registry.
  std::vector<std::string> env(bool test_variants = true) const {
    return {std::string("ATTN_BENCH_TEST_VARIANTS=") + (test_variants ? "1" : ""),
            "ATTN_DB=", "ATTN_SIGNALS_MARKER=" + marker_,
            "ATTN_JIT_CACHE_DIR=" + (dir_ / "jit").string()};
  }
  int exit_code(int status) const { return WIFEXITED(status) ? WEXITSTATUS(status) : -1; }
  // The environment of a sweep whose worker hangs on the config copy=1,repeat=1.
  std::vector<std::string> hanging_env() const {
    std::vector<std::string> e = env();
    e.push_back("ATTN_TUNE_WORKER_FAULTS=hang:copy=1,repeat=1");
    return e;
  }
  // Waits until the worker hangs in that config (its attempt begun).
  bool worker_hangs(const fs::path& db) const {
    return eventually(
        [&] {
          return query(db,
                       "SELECT count(*) FROM attempts WHERE config_key = 'copy=1,repeat=1' AND "
                       "status = 'started'") == 1;
        },
        60);
  }
  const std::string marker_ = "signals-" + std::to_string(::getpid());
};

// attn-bench run: Ctrl-C between cases. Many short cases (repetitions of the two CPU variants that
// take a prefill); once two are recorded, one SIGINT: the case in progress finishes, no other
// starts, the table of what ran is printed, the run is marked interrupted, exit 130.
TEST_F(Signals, BenchRunStopsAfterTheCaseInProgressWithASummary) {
  const fs::path workload = write("small.json", kSmallPrefill);
  const fs::path db = dir_ / "run.db";
  Child bench(
      {ATTN_BENCH_BINARY, "run", "--cpu", workload.string(), "--db", db.string(), "--threads", "1",
       "--samples", "100", "--warmup", "0", "--noise", "0.9", "--benchmark_repetitions=40"},
      env(false), dir_ / "out", dir_ / "err");
  ASSERT_GT(bench.pid(), 0);
  ASSERT_TRUE(eventually(
      [&] {
        return query(db, "SELECT count(*) FROM measurements WHERE disposition = 'passed'") >= 2;
      },
      60))
      << testing::slurp(dir_ / "err");
  const auto sent = std::chrono::steady_clock::now();
  ::kill(bench.pid(), SIGINT);
  const int status = bench.wait();
  const double stop_seconds = seconds_since(sent);
  const std::string out = testing::slurp(dir_ / "out"), err = testing::slurp(dir_ / "err");
  ASSERT_EQ(exit_code(status), kInterrupted) << status << out << err;
  EXPECT_LT(stop_seconds, 10) << "it should stop after the case in progress";
  EXPECT_NE(err.find("attn-bench: Ctrl-C: stopping after the sample in hand"), std::string::npos)
      << err;
  std::smatch m;
  const std::regex summary(
      "attn-bench: interrupted: ([0-9]+) of ([0-9]+) cases ran and are recorded in run 1");
  ASSERT_TRUE(std::regex_search(err, m, summary)) << err;
  const int ran = std::stoi(m[1]), total = std::stoi(m[2]);
  EXPECT_EQ(total, 5 * 40);  // the five CPU variants (three decline the batch) x 40 repetitions
  EXPECT_GE(ran, 2);
  EXPECT_LT(ran, total);
  // The table of what ran, and where it is recorded.
  EXPECT_NE(out.find("prefix_prefill.cpu_reference"), std::string::npos) << out;
  EXPECT_NE(out.find("recorded  run 1 in "), std::string::npos) << out;

  EXPECT_EQ(text(db, "SELECT status FROM runs WHERE id = 1"), "interrupted");
  EXPECT_NE(text(db, "SELECT finished_at FROM runs WHERE id = 1"), "NULL");
  EXPECT_EQ(query(db, "SELECT count(*) FROM measurements"), ran);
  expect_consistent(db);
}

// attn-bench run: Ctrl-C in the middle of a case that would sample for many minutes stops its
// sampling after the sample in hand: the case is recorded with what it sampled (stop reason
// 'interrupted'), the run is marked interrupted, and the process exits within a second or two.
TEST_F(Signals, BenchRunStopsWithinASampleNotAfterTheCase) {
  const fs::path workload = write("small.json", kSmallPrefill);
  const fs::path db = dir_ / "run.db";
  Child bench({ATTN_BENCH_BINARY,
               "run",
               "--cpu",
               workload.string(),
               "--db",
               db.string(),
               "--threads",
               "1",
               "--variant",
               "prefix_prefill.cpu_reference",
               "--warmup",
               "0",
               "--min-samples",
               "1000000",
               "--max-samples",
               "1000000",
               "--max-time",
               "3600",
               "--noise",
               "0.0000001"},
              env(false), dir_ / "out", dir_ / "err");
  ASSERT_GT(bench.pid(), 0);
  ASSERT_TRUE(eventually([&] { return query(db, "SELECT count(*) FROM runs") == 1; }, 60))
      << testing::slurp(dir_ / "err");
  ::usleep(1500000);  // verified, and well into its million samples
  int status = 0;
  ASSERT_FALSE(bench.exited(status)) << testing::slurp(dir_ / "err");
  const auto sent = std::chrono::steady_clock::now();
  ::kill(bench.pid(), SIGINT);
  status = bench.wait();
  const double stop_seconds = seconds_since(sent);
  const std::string out = testing::slurp(dir_ / "out"), err = testing::slurp(dir_ / "err");
  ASSERT_EQ(exit_code(status), kInterrupted) << status << out << err;
  EXPECT_LT(stop_seconds, 2.0) << "Ctrl-C should stop sampling between two samples";
  EXPECT_EQ(text(db, "SELECT status FROM runs WHERE id = 1"), "interrupted");
  EXPECT_EQ(text(db, "SELECT stop_reason FROM measurements"), "interrupted");
  EXPECT_GT(query(db, "SELECT sample_count FROM measurements"), 10);
  EXPECT_NE(out.find("prefix_prefill.cpu_reference"), std::string::npos) << out;
  expect_consistent(db);
}

// attn-bench run: a second Ctrl-C during a long case exits at once, and the database stays
// consistent; the quitting process still closes its run row as 'interrupted'.
TEST_F(Signals, BenchRunSecondCtrlCExitsAtOnce) {
  const fs::path workload = write("long.json", kLongPrefill);
  const fs::path db = dir_ / "run.db";
  Child bench({ATTN_BENCH_BINARY, "run", "--cpu", workload.string(), "--db", db.string(),
               "--threads", "1", "--variant", "prefix_prefill.*", "--samples", "20"},
              env(false), dir_ / "out", dir_ / "err");
  ASSERT_GT(bench.pid(), 0);
  // The run row is written just before the first case starts.
  ASSERT_TRUE(eventually([&] { return query(db, "SELECT count(*) FROM runs") == 1; }, 60))
      << testing::slurp(dir_ / "err");
  ::usleep(300000);
  ::kill(bench.pid(), SIGINT);
  ::usleep(500000);
  int status = 0;
  ASSERT_FALSE(bench.exited(status)) << "the first Ctrl-C waits for the case in progress\n"
                                     << testing::slurp(dir_ / "err");
  const auto sent = std::chrono::steady_clock::now();
  ::kill(bench.pid(), SIGINT);
  status = bench.wait();
  EXPECT_LT(seconds_since(sent), 2.0);
  const std::string err = testing::slurp(dir_ / "err");
  EXPECT_EQ(exit_code(status), kInterrupted) << status << err;
  EXPECT_NE(err.find("attn-bench: Ctrl-C again: quitting now"), std::string::npos) << err;
  EXPECT_EQ(text(db, "SELECT status FROM runs WHERE id = 1"), "interrupted");
  EXPECT_NE(text(db, "SELECT finished_at FROM runs WHERE id = 1"), "NULL");
  EXPECT_EQ(query(db, "SELECT count(*) FROM measurements"), 0);
  expect_consistent(db);
}

// attn-tune tune, in process: Ctrl-C stops with the summary; the database holds what was measured
// (no attempt left 'started'), and the same command finishes the sweep from it.
TEST_F(Signals, TuneStopsBetweenTrialsWithASummaryAndResumes) {
  const fs::path workload = write("tune.json", kTunePrefill);
  const fs::path db = dir_ / "tune.db";
  const std::vector<std::string> args = {ATTN_TUNE_BINARY,
                                         "tune",
                                         workload.string(),
                                         "--variant",
                                         "test.cpu_reference_copies",
                                         "--strategy",
                                         "exhaustive",
                                         "--db",
                                         db.string(),
                                         "--cpu",
                                         "--threads",
                                         "1"};
  Child tune(args, env(), dir_ / "out", dir_ / "err");
  ASSERT_GT(tune.pid(), 0);
  ASSERT_TRUE(eventually([&] { return query(db, "SELECT count(*) FROM measurements") >= 3; }, 60))
      << testing::slurp(dir_ / "err");
  ::kill(tune.pid(), SIGINT);
  const int status = tune.wait();
  const std::string out = testing::slurp(dir_ / "out"), err = testing::slurp(dir_ / "err");
  ASSERT_EQ(exit_code(status), kInterrupted) << status << out << err;
  EXPECT_NE(err.find("attn-tune: Ctrl-C: stopping after the sample in hand"), std::string::npos)
      << err;
  EXPECT_NE(err.find("attn-tune: interrupted; the database is consistent"), std::string::npos)
      << err;
  std::smatch m;
  const std::regex summary(
      "test\\.cpu_reference_copies: 24 configs \\(24 in shard 0/1\\): ([0-9]+) measured");
  ASSERT_TRUE(std::regex_search(out, m, summary)) << out;
  const int measured = std::stoi(m[1]);
  EXPECT_GE(measured, 3);
  EXPECT_LT(measured, 24);
  EXPECT_NE(out.find("recorded  run 1 in "), std::string::npos) << out;
  EXPECT_EQ(text(db, "SELECT status FROM runs WHERE id = 1"), "interrupted");
  EXPECT_EQ(query(db, "SELECT count(*) FROM measurements"), measured);
  EXPECT_EQ(query(db, "SELECT count(*) FROM attempts WHERE status = 'started'"), 0);
  expect_consistent(db);

  Child again(args, env(), dir_ / "out", dir_ / "err");
  EXPECT_EQ(again.wait(), 0) << testing::slurp(dir_ / "err");
  const std::string resumed = testing::slurp(dir_ / "out");
  EXPECT_NE(resumed.find(std::to_string(24 - measured) + " measured, " + std::to_string(measured) +
                         " from the database"),
            std::string::npos)
      << resumed;
  EXPECT_EQ(query(db, "SELECT count(DISTINCT config_key) FROM measurements"), 24);
  EXPECT_EQ(query(db, "SELECT count(*) FROM measurements"), 24);
  expect_consistent(db);
}

// attn-tune tune, in process and with a worker: Ctrl-C in the middle of a case that samples for
// seconds stops it after the sample in hand, within a second or so. The case cut short is not
// recorded (its attempt is removed), so a resume measures it again; the run is 'interrupted'.
TEST_F(Signals, TuneStopsWithinASampleNotAfterTheCase) {
  const fs::path workload = write("mid.json", kMidPrefill);
  for (const std::string isolate : {"none", "workers"}) {
    SCOPED_TRACE(isolate);
    const fs::path db = dir_ / (isolate + ".db");
    Child tune({ATTN_TUNE_BINARY, "tune", workload.string(), "--variant",
                "test.cpu_reference_copies", "--strategy", "exhaustive", "--db", db.string(),
                "--cpu", "--threads", "1", "--isolate", isolate, "--stop-grace", "30"},
               env(), dir_ / "out", dir_ / "err");
    ASSERT_GT(tune.pid(), 0);
    ASSERT_TRUE(eventually([&] { return query(db, "SELECT count(*) FROM attempts") == 1; }, 60))
        << testing::slurp(dir_ / "err");
    ::usleep(2000000);  // verified, and sampling
    int status = 0;
    ASSERT_FALSE(tune.exited(status)) << testing::slurp(dir_ / "err");
    ASSERT_EQ(query(db, "SELECT count(*) FROM measurements"), 0) << "still in its first case";
    const auto sent = std::chrono::steady_clock::now();
    ::kill(tune.pid(), SIGINT);
    status = tune.wait();
    const double stop_seconds = seconds_since(sent);
    const std::string out = testing::slurp(dir_ / "out"), err = testing::slurp(dir_ / "err");
    ASSERT_EQ(exit_code(status), kInterrupted) << status << out << err;
    // A sample is a quarter of a second (more on a busy machine); the case, several seconds.
    EXPECT_LT(stop_seconds, 3.0) << "Ctrl-C should stop sampling between two samples";
    EXPECT_NE(err.find("attn-tune: Ctrl-C: stopping after the sample in hand"), std::string::npos)
        << err;
    EXPECT_NE(err.find("cut short by the stop request (between two samples); not recorded, "
                       "measured again on resume"),
              std::string::npos)
        << err;
    EXPECT_EQ(text(db, "SELECT status FROM runs WHERE id = 1"), "interrupted");
    EXPECT_EQ(query(db, "SELECT count(*) FROM measurements"), 0);
    EXPECT_EQ(query(db, "SELECT count(*) FROM attempts"), 0);
    EXPECT_TRUE(eventually([&] { return testing::processes_with(marker_) == 0; }, 5));
    expect_consistent(db);
  }
}

// attn-tune tune with a worker that hangs: it does not answer the stop request, so it is killed
// after the grace (--stop-grace, 1 s by default) and the sweep stops; the case is not recorded.
TEST_F(Signals, TuneKillsAWorkerThatDoesNotAnswerTheStopRequest) {
  const fs::path workload = write("tune.json", kTunePrefill);
  const fs::path db = dir_ / "tune.db";
  Child tune({ATTN_TUNE_BINARY, "tune", workload.string(), "--variant", "test.cpu_reference_copies",
              "--strategy", "exhaustive", "--db", db.string(), "--cpu", "--threads", "1",
              "--isolate", "workers", "--deadline-seconds", "120"},
             hanging_env(), dir_ / "out", dir_ / "err");
  ASSERT_GT(tune.pid(), 0);
  ASSERT_TRUE(worker_hangs(db)) << testing::slurp(dir_ / "err");
  const auto sent = std::chrono::steady_clock::now();
  ::kill(tune.pid(), SIGINT);
  const int status = tune.wait();
  const double stop_seconds = seconds_since(sent);
  const std::string err = testing::slurp(dir_ / "err");
  ASSERT_EQ(exit_code(status), kInterrupted) << status << err;
  EXPECT_GE(stop_seconds, 1.0) << "the grace";
  EXPECT_LT(stop_seconds, 3.0);
  EXPECT_NE(err.find("the worker did not answer the stop request within 1 s; worker killed by "
                     "signal 9"),
            std::string::npos)
      << err;
  EXPECT_TRUE(eventually([&] { return testing::processes_with(marker_) == 0; }, 5))
      << "the hung worker outlived the orchestrator";
  EXPECT_EQ(text(db, "SELECT status FROM runs WHERE id = 1"), "interrupted");
  EXPECT_EQ(query(db, "SELECT count(*) FROM attempts WHERE status = 'started'"), 0);
  EXPECT_EQ(query(db, "SELECT count(*) FROM attempts WHERE config_key = 'copy=1,repeat=1'"), 0);
  EXPECT_EQ(query(db, "SELECT count(*) FROM measurements"),
            query(db, "SELECT count(*) FROM attempts WHERE status = 'finished'"));
  expect_consistent(db);
}

// attn-tune tune with a worker that hangs and a long stop grace: the first Ctrl-C waits for the
// case in flight (up to the grace), a second one exits at once; the worker does not outlive it, the
// run is closed as 'interrupted', the attempt in flight is left 'started' (its owner gone: it is
// evaluated again on resume and does not count towards the quarantine), and the sweep resumes.
TEST_F(Signals, TuneSecondCtrlCExitsAtOnceAndLeavesNoWorker) {
  const fs::path workload = write("tune.json", kTunePrefill);
  const fs::path db = dir_ / "tune.db";
  std::vector<std::string> args = {ATTN_TUNE_BINARY,
                                   "tune",
                                   workload.string(),
                                   "--variant",
                                   "test.cpu_reference_copies",
                                   "--strategy",
                                   "exhaustive",
                                   "--db",
                                   db.string(),
                                   "--cpu",
                                   "--threads",
                                   "1",
                                   "--isolate",
                                   "workers",
                                   "--deadline-seconds",
                                   "120",
                                   "--quarantine-after",
                                   "5",
                                   "--stop-grace",
                                   "60"};
  Child tune(args, hanging_env(), dir_ / "out", dir_ / "err");
  ASSERT_GT(tune.pid(), 0);
  ASSERT_TRUE(worker_hangs(db)) << testing::slurp(dir_ / "err");
  EXPECT_EQ(testing::processes_with(marker_), 2) << "the orchestrator and its worker";
  ::kill(tune.pid(), SIGINT);
  ::usleep(500000);
  int status = 0;
  ASSERT_FALSE(tune.exited(status)) << "the first Ctrl-C waits for the case in flight";
  const auto sent = std::chrono::steady_clock::now();
  ::kill(tune.pid(), SIGINT);
  status = tune.wait();
  EXPECT_LT(seconds_since(sent), 2.0);
  const std::string err = testing::slurp(dir_ / "err");
  EXPECT_EQ(exit_code(status), kInterrupted) << status << err;
  EXPECT_NE(err.find("attn-tune: Ctrl-C again: quitting now"), std::string::npos) << err;
  EXPECT_TRUE(eventually([&] { return testing::processes_with(marker_) == 0; }, 5))
      << "the hung worker outlived the orchestrator";
  EXPECT_EQ(text(db, "SELECT status FROM runs WHERE id = 1"), "interrupted");
  EXPECT_EQ(query(db, "SELECT count(*) FROM attempts WHERE status = 'started'"), 1);
  // What came before the hang was recorded, each with its finished attempt.
  EXPECT_GE(query(db, "SELECT count(*) FROM measurements"), 1);
  EXPECT_EQ(query(db, "SELECT count(*) FROM measurements"),
            query(db, "SELECT count(*) FROM attempts WHERE status = 'finished'"));
  expect_consistent(db);

  // Without the fault the same command finishes the sweep.
  Child again(args, env(), dir_ / "out", dir_ / "err");
  EXPECT_EQ(again.wait(), 0) << testing::slurp(dir_ / "err");
  EXPECT_EQ(query(db, "SELECT count(*) FROM measurements"), 24);
  expect_consistent(db);
}

}  // namespace
}  // namespace attn
