// Crash safety of the results database (docs/reliability.md): `attn-tune tune` killed with SIGKILL
// at random points of CPU sweeps, at least 50 times, then resumed to completion: the file passes
// `PRAGMA integrity_check`, no measurement is half-written, every attempt left 'started' belongs
// to a killed run, and no (workload, device, variant, config, policy) is measured twice. And two
// `attn-tune tune` processes writing one database at once both finish, with no "database is
// locked".
//
// The sweeps are of test.cpu_reference_copies (ATTN_BENCH_TEST_VARIANTS=1): the CPU reference
// under two axes of 24 configs, about 30 evaluations under halving. The workload is small (under a
// millisecond a launch), so that a confirm measurement that never meets its noise target on a
// busy machine still ends at its 2000 samples within about a second: a sweep takes half a second
// alone and a few seconds at worst.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "base/exit_codes.hpp"
#include "results/sqlite.hpp"
#include "results/store.hpp"
#include "tests/apps/cli_runner.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

constexpr int kKills = 50;
constexpr int kSpace = 24;  // configs of test.cpu_reference_copies

std::string workload_json(int seed) {
  return R"({
  "schema_version": 1,
  "name": "crash-safety-)" +
         std::to_string(seed) + R"(",
  "model": {"num_q_heads": 2, "num_kv_heads": 1, "head_dim": 64, "dtype": "bf16"},
  "kv_cache": {"page_size": 16},
  "sequences": [{"context_len": 56, "query_len": 8}],
  "seed": )" +
         std::to_string(seed) + "\n}\n";
}

int64_t scalar(Database& db, const std::string& sql) {
  Statement s(db, sql);
  EXPECT_TRUE(s.step()) << sql;
  return s.column_int64(0);
}

// What every database the tests leave must satisfy, whatever was killed when.
void expect_consistent(const fs::path& path, int kills) {
  SCOPED_TRACE(path.string());
  Database db(path.string(), SQLITE_OPEN_READONLY);
  {
    Statement check(db, "PRAGMA integrity_check");
    ASSERT_TRUE(check.step());
    EXPECT_EQ(check.column_text(0), "ok");
  }
  {
    Statement fk(db, "PRAGMA foreign_key_check");
    EXPECT_FALSE(fk.step()) << "a row points at nothing";
  }
  // A kill while the schema was being created leaves the file at the version of the last step that
  // committed (each step is one transaction; 0: nothing yet): nothing was recorded in it.
  const int64_t version = scalar(db, "PRAGMA user_version");
  EXPECT_LE(version, Store::kSchemaVersion);
  if (version < Store::kSchemaVersion) {
    if (version >= 1) {
      EXPECT_EQ(scalar(db, "SELECT count(*) FROM runs"), 0);
    }
    return;
  }
  // No half-written measurement: each has all the samples its statistics were computed from.
  EXPECT_EQ(scalar(db, R"sql(
    SELECT count(*) FROM measurements m
    WHERE m.sample_count != (SELECT count(*) FROM samples s
                             WHERE s.measurement_id = m.id AND s.discarded = 0))sql"),
            0);
  // A measurement and its attempt's finish are one transaction: each measurement has exactly one
  // finished attempt, and each finished attempt has its measurement.
  EXPECT_EQ(scalar(db, R"sql(
    SELECT count(*) FROM measurements m
    WHERE (SELECT count(*) FROM attempts a
           WHERE a.measurement_id = m.id AND a.status = 'finished') != 1)sql"),
            0);
  EXPECT_EQ(scalar(db, R"sql(
    SELECT count(*) FROM attempts a
    WHERE a.status = 'finished'
      AND NOT EXISTS (SELECT 1 FROM measurements m WHERE m.id = a.measurement_id))sql"),
            0);
  // Attempts left 'started' are accounted for: each belongs to a killed run (still 'running' if it
  // was the last thing done to the file, else closed as 'interrupted' by the next process that
  // opened it), at most one per run (evaluations run one at a time), and no more than there were
  // kills.
  EXPECT_EQ(scalar(db, R"sql(
    SELECT count(*) FROM attempts a JOIN runs r ON r.id = a.run_id
    WHERE a.status = 'started' AND r.status NOT IN ('running', 'interrupted'))sql"),
            0);
  // Every killed run but the last was closed by the next opening, with the time of its last
  // record.
  EXPECT_LE(scalar(db, "SELECT count(*) FROM runs WHERE status = 'running'"), 1);
  EXPECT_EQ(scalar(db, R"sql(
    SELECT count(*) FROM runs WHERE status = 'interrupted' AND finished_at IS NULL)sql"),
            0);
  EXPECT_EQ(scalar(db, R"sql(
    SELECT count(*) FROM (SELECT run_id FROM attempts WHERE status = 'started'
                          GROUP BY run_id HAVING count(*) > 1))sql"),
            0);
  EXPECT_LE(scalar(db, "SELECT count(*) FROM attempts WHERE status = 'started'"), kills);
  EXPECT_LE(scalar(db, "SELECT count(*) FROM runs WHERE status IN ('running', 'interrupted')"),
            kills);
  // No duplicates: the sweep measured each (workload, device, variant, config, policy) once.
  EXPECT_EQ(scalar(db, R"sql(
    SELECT count(*) FROM (SELECT 1 FROM measurements
                          WHERE disposition NOT IN ('crashed', 'timed_out')
                          GROUP BY workload_id, device_id, variant, config_key, policy
                          HAVING count(*) > 1))sql"),
            0);
}

class CrashSafety : public testing::Cli {
 protected:
  CrashSafety() { binary_ = ATTN_TUNE_BINARY; }

  std::vector<std::string> tune_args(const fs::path& workload, const fs::path& db,
                                     bool workers) const {
    std::vector<std::string> args = {ATTN_TUNE_BINARY,
                                     "tune",
                                     workload.string(),
                                     "--variant",
                                     "test.cpu_reference_copies",
                                     "--strategy",
                                     "halving",
                                     "--db",
                                     db.string(),
                                     "--cpu",
                                     "--threads",
                                     "1"};
    if (workers) {
      args.insert(args.end(), {"--isolate", "workers", "--deadline-seconds", "60"});
    }
    return args;
  }
  std::vector<std::string> env() const {
    return {"ATTN_BENCH_TEST_VARIANTS=1", "ATTN_DB=", "ATTN_CRASH_SAFETY_MARKER=" + marker_};
  }
  const std::string marker_ = "crash-safety-" + std::to_string(::getpid());
};

// At least 50 SIGKILLs at random points of halving sweeps (start-up and schema creation included:
// every workload gets a fresh database), half of them with worker processes; each workload's sweep
// is then resumed to the end, and run once more to show that nothing is left to measure.
TEST_F(CrashSafety, KillNineAtRandomPointsLosesNothingAndResumesWithoutDuplicates) {
  const auto start = std::chrono::steady_clock::now();
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("random seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> early(0.0, 0.012), anywhere(0.0, 0.5);
  std::bernoulli_distribution pick_early(0.2);

  struct Round {
    fs::path workload, db;
    bool workers = false;
    int kills = 0;
    bool finished_alone = false;  // a run ended by itself before its kill came
  };
  std::vector<Round> rounds;
  int kills = 0;
  while (kills < kKills) {
    Round round;
    const int index = int(rounds.size());
    round.workload = write("w" + std::to_string(index) + ".json", workload_json(index + 1));
    round.db = dir_ / ("kill" + std::to_string(index) + ".db");
    round.workers = index % 2 == 1;
    // Kill this sweep until one of its runs ends by itself (or, to bound the time, after 8 kills;
    // the resume below finishes it).
    while (kills < kKills && round.kills < 8) {
      testing::Child child(tune_args(round.workload, round.db, round.workers), env(), dir_ / "out",
                           dir_ / "err");
      ASSERT_GT(child.pid(), 0);
      const double delay = pick_early(rng) ? early(rng) : anywhere(rng);
      ::usleep(useconds_t(delay * 1e6));
      ::kill(child.pid(), SIGKILL);
      const int status = child.wait();
      if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
        ++round.kills;
        ++kills;
        continue;
      }
      ASSERT_TRUE(WIFEXITED(status)) << status;
      ASSERT_EQ(WEXITSTATUS(status), 0)
          << testing::slurp(dir_ / "out") << testing::slurp(dir_ / "err");
      round.finished_alone = true;
      break;
    }
    rounds.push_back(round);
  }
  EXPECT_GE(kills, kKills);
  // No worker outlives its killed orchestrator (PR_SET_PDEATHSIG).
  const auto gone_by = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (testing::processes_with(marker_) > 0 && std::chrono::steady_clock::now() < gone_by) {
    ::usleep(20000);
  }
  EXPECT_EQ(testing::processes_with(marker_), 0) << "a worker outlived its orchestrator";

  int64_t started_attempts = 0, killed_runs = 0, unmigrated = 0;
  for (const Round& round : rounds) {
    SCOPED_TRACE(round.db.string());
    if (fs::exists(round.db)) {
      // A kill during the schema's creation leaves the file at an older version (or empty), whose
      // tables may not exist yet: the next open migrates it.
      bool current = false;
      {
        Database db(round.db.string(), SQLITE_OPEN_READONLY);
        current = scalar(db, "PRAGMA user_version") == Store::kSchemaVersion;
        unmigrated += !current;
      }
      expect_consistent(round.db, round.kills);
      if (current) {
        Database db(round.db.string(), SQLITE_OPEN_READONLY);
        started_attempts += scalar(db, "SELECT count(*) FROM attempts WHERE status = 'started'");
        killed_runs +=
            scalar(db, "SELECT count(*) FROM runs WHERE status IN ('running', 'interrupted')");
      }
    }
    // The same command resumes and completes the sweep.
    testing::Child resume(tune_args(round.workload, round.db, round.workers), env(), dir_ / "out",
                          dir_ / "err");
    const int status = resume.wait();
    const std::string out = testing::slurp(dir_ / "out");
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << status << out << testing::slurp(dir_ / "err");
    EXPECT_NE(out.find("test.cpu_reference_copies: 24 configs (24 in shard 0/1)"),
              std::string::npos)
        << out;
    EXPECT_NE(out.find("0 quarantined"), std::string::npos) << out;
    expect_consistent(round.db, round.kills);
    Database db(round.db.string(), SQLITE_OPEN_READONLY);
    EXPECT_EQ(scalar(db, "SELECT count(*) FROM runs WHERE status = 'running'"), 0);
    // Halving screens every config; each was measured exactly once under screen.
    EXPECT_EQ(scalar(db,
                     "SELECT count(DISTINCT config_key) FROM measurements WHERE policy = 'screen' "
                     "AND disposition = 'passed'"),
              kSpace);
    EXPECT_GE(scalar(db, "SELECT count(*) FROM measurements WHERE policy = 'confirm'"), 1);
    {
      Statement last(db, "SELECT status FROM runs ORDER BY id DESC LIMIT 1");
      ASSERT_TRUE(last.step());
      EXPECT_EQ(last.column_text(0), "completed");
    }
    EXPECT_EQ(scalar(db, R"sql(
      SELECT count(*) FROM winners WHERE verdict = 'winner'
        AND run_id = (SELECT max(id) FROM runs))sql"),
              1);
  }
  // Once more on each database: nothing is left to measure.
  for (const Round& round : rounds) {
    SCOPED_TRACE(round.db.string());
    testing::Child again(tune_args(round.workload, round.db, false), env(), dir_ / "out",
                         dir_ / "err");
    ASSERT_EQ(again.wait(), 0) << testing::slurp(dir_ / "err");
    const std::string out = testing::slurp(dir_ / "out");
    EXPECT_NE(out.find(": 0 measured, "), std::string::npos) << out;
    expect_consistent(round.db, round.kills);
  }
  // The kills landed in the middle of sweeps, not only at start-up: many runs were cut off, and
  // some of them with an evaluation in flight.
  EXPECT_GE(killed_runs, kKills / 2);
  EXPECT_GE(started_attempts, 5);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "[ crash-safety ] " << kills << " kills over " << rounds.size()
            << " sweeps: " << kills - killed_runs << " before the run row was written, "
            << killed_runs << " runs cut off, " << started_attempts
            << " with an evaluation in flight, " << unmigrated
            << " databases left below the current schema, " << seconds << " s\n";
}

// Two `attn-tune tune` processes write one database at once (a fresh one, so that they also race
// to create it): different workloads, and two shards of one workload. Both finish, neither meets
// "database is locked", and their writes interleaved in time.
TEST_F(CrashSafety, TwoTunersWritingOneDatabaseAtOnceBothFinish) {
  const fs::path a = write("a.json", workload_json(101));
  const fs::path b = write("b.json", workload_json(102));
  struct Pair {
    std::vector<std::string> first, second;
    fs::path db;
  };
  std::vector<Pair> pairs;
  for (int i = 0; i < 3; ++i) {
    const fs::path db = dir_ / ("two" + std::to_string(i) + ".db");
    pairs.push_back({tune_args(a, db, i == 2), tune_args(b, db, i == 2), db});
  }
  {
    const fs::path db = dir_ / "shards.db";
    Pair shards{tune_args(a, db, false), tune_args(a, db, false), db};
    shards.first.insert(shards.first.end(), {"--shard", "0/2"});
    shards.second.insert(shards.second.end(), {"--shard", "1/2"});
    pairs.push_back(shards);
  }
  for (const Pair& pair : pairs) {
    SCOPED_TRACE(pair.db.string());
    testing::Child first(pair.first, env(), dir_ / "out1", dir_ / "err1");
    testing::Child second(pair.second, env(), dir_ / "out2", dir_ / "err2");
    const int status1 = first.wait(), status2 = second.wait();
    const std::string err1 = testing::slurp(dir_ / "err1"), err2 = testing::slurp(dir_ / "err2");
    EXPECT_EQ(status1, 0) << testing::slurp(dir_ / "out1") << err1;
    EXPECT_EQ(status2, 0) << testing::slurp(dir_ / "out2") << err2;
    for (const std::string* err : {&err1, &err2}) {
      EXPECT_EQ(err->find("locked"), std::string::npos) << *err;
      EXPECT_EQ(err->find("busy"), std::string::npos) << *err;
    }
    expect_consistent(pair.db, 0);
    Database db(pair.db.string(), SQLITE_OPEN_READONLY);
    EXPECT_EQ(scalar(db, "SELECT count(*) FROM runs WHERE status = 'completed'"), 2);
    EXPECT_EQ(scalar(db, "SELECT count(*) FROM attempts WHERE status != 'finished'"), 0);
    // The two runs wrote at the same time: each one's first measurement came before the other's
    // last.
    EXPECT_EQ(scalar(db, R"sql(
      SELECT count(*) FROM (SELECT run_id, min(created_at) AS first, max(created_at) AS last
                            FROM measurements GROUP BY run_id) x
      JOIN (SELECT run_id, min(created_at) AS first, max(created_at) AS last
            FROM measurements GROUP BY run_id) y ON x.run_id < y.run_id
      WHERE x.first < y.last AND y.first < x.last)sql"),
              1)
        << "the two sweeps did not overlap in time";
  }
  // The shards cover the space once between them.
  Database db((dir_ / "shards.db").string(), SQLITE_OPEN_READONLY);
  EXPECT_EQ(
      scalar(db, "SELECT count(DISTINCT config_key) FROM measurements WHERE policy = 'screen'"),
      kSpace);
}

}  // namespace
}  // namespace attn
