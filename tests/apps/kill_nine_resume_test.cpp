// kill -9 of `attn-tune tune` costs no config (docs/tuning.md, "Resume"): an evaluation cut off by
// the orchestrator's own death leaves its attempt open with its owner gone; the resume evaluates
// that config again and never counts the attempt towards the quarantine. 50 SIGKILLs at random
// points of exhaustive CPU sweeps (10 per database, in process and with a worker in turn), most of
// them while a config is being evaluated, so that configs are cut off twice or more (more kills
// follow, up to 50, until at least one is); then one plain resume of each database, with the
// default quarantine, measures every config of the space exactly once.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "tests/apps/cli_runner.hpp"
#include "tests/apps/sweep_processes.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;
using testing::db_number;

constexpr int kKillCount = 50;
constexpr int kKillsPerSweep = 10;

class KillNine : public testing::Cli {
 protected:
  const std::string marker_ = "kill-nine-" + std::to_string(::getpid());
};

TEST_F(KillNine, FiftyKillsCostNoConfigAndOnePlainResumeMeasuresEachOnce) {
  const auto start = std::chrono::steady_clock::now();
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("random seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  // Where a kill lands: 15% in start-up (before or while the database is opened), 70% within 3 ms
  // of an evaluation's start (an evaluation takes 5 to 60 ms, so inside it, and again and again
  // on the same config, which a resume must evaluate again), 15% anywhere in the next 150 ms. With
  // 60% within 8 ms, a run cut no config twice about one time in four on the 2-core CPU machine.
  std::discrete_distribution<int> where({15, 70, 15});
  std::uniform_real_distribution<double> startup_delay(0.0, 0.03), soon(0.0, 0.003),
      later(0.0, 0.15);

  struct Sweep {
    fs::path workload, db;
    bool workers = false;
    int kills = 0;
  };
  std::vector<Sweep> sweeps;
  int kills = 0, finished_alone = 0;
  // Kills on new databases until `until` kills have landed.
  auto kill_sweeps = [&](int until) {
    while (kills < until) {
      Sweep sweep;
      const int index = int(sweeps.size());
      sweep.workload = write("w" + std::to_string(index) + ".json",
                             testing::tiny_prefill_json("kill-nine-" + std::to_string(index)));
      sweep.db = dir_ / ("sweep" + std::to_string(index) + ".db");
      sweep.workers = index % 2 == 1;
      while (kills < until && sweep.kills < kKillsPerSweep) {
        const int64_t attempts_before =
            std::max<int64_t>(0, db_number(sweep.db, "SELECT count(*) FROM attempts"));
        testing::Child child(testing::sweep_args(sweep.workload, sweep.db, sweep.workers),
                             testing::sweep_env(marker_), dir_ / "out", dir_ / "err");
        ASSERT_GT(child.pid(), 0);
        int status = 0;
        bool exited = false;
        const int place = where(rng);
        if (place == 0) {
          ::usleep(useconds_t(startup_delay(rng) * 1e6));
        } else {
          // Once the process has begun its first evaluation (polled every 2 ms).
          const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
          while (!(exited = child.exited(status)) &&
                 db_number(sweep.db, "SELECT count(*) FROM attempts") <= attempts_before &&
                 std::chrono::steady_clock::now() < until) {
            ::usleep(2000);
          }
          ::usleep(useconds_t((place == 1 ? soon(rng) : later(rng)) * 1e6));
        }
        if (!exited) {
          ::kill(child.pid(), SIGKILL);
          status = child.wait();
        }
        if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
          ++sweep.kills;
          ++kills;
          continue;
        }
        // The sweep ended before its kill came: the next database takes the remaining kills.
        ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
            << status << testing::slurp(dir_ / "out") << testing::slurp(dir_ / "err");
        ++finished_alone;
        break;
      }
      sweeps.push_back(sweep);
    }
  };
  // Configs cut off more than once in one database.
  auto cut_off_twice_in = [](const fs::path& db) {
    return std::max<int64_t>(0, db_number(db, R"sql(
      SELECT count(*) FROM (SELECT 1 FROM attempts WHERE status = 'started'
                            GROUP BY variant, config_key HAVING count(*) >= 2))sql"));
  };
  kill_sweeps(kKillCount);
  // Chance may leave no config cut off twice (a sweep often ends before its next kill): more kills,
  // on new databases, until one is (at most kKillCount more).
  auto any_cut_off_twice = [&] {
    for (const Sweep& sweep : sweeps)
      if (cut_off_twice_in(sweep.db) > 0) return true;
    return false;
  };
  while (!any_cut_off_twice() && kills < 2 * kKillCount) kill_sweeps(kills + kKillsPerSweep);
  ASSERT_GE(kills, kKillCount);

  int64_t cut_off = 0, cut_off_twice = 0, missing = 0, twice = 0, quarantined = 0;
  const std::regex quarantine_count("([0-9]+) quarantined");
  for (const Sweep& sweep : sweeps) {
    SCOPED_TRACE(sweep.db.string());
    // Evaluations the kills cut off, and configs cut off more than once (which a quarantine that
    // counted them would skip after two).
    cut_off += std::max<int64_t>(
        0, db_number(sweep.db, "SELECT count(*) FROM attempts WHERE status = 'started'"));
    cut_off_twice += cut_off_twice_in(sweep.db);
    // One plain resume: the same command, the default --quarantine-after.
    testing::Child resume(testing::sweep_args(sweep.workload, sweep.db, sweep.workers),
                          testing::sweep_env(marker_), dir_ / "out", dir_ / "err");
    const int status = resume.wait();
    const std::string out = testing::slurp(dir_ / "out");
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << status << out << testing::slurp(dir_ / "err");
    for (std::sregex_iterator it(out.begin(), out.end(), quarantine_count), end; it != end; ++it) {
      quarantined += std::stoll((*it)[1]);
    }
    const int64_t measured = db_number(sweep.db, R"sql(
      SELECT count(*) FROM (SELECT DISTINCT variant, config_key FROM measurements
                            WHERE disposition = 'passed'))sql");
    EXPECT_EQ(measured, testing::kSweepConfigs) << out;
    missing += testing::kSweepConfigs - measured;
    const int64_t duplicated = db_number(sweep.db, R"sql(
      SELECT count(*) FROM (SELECT 1 FROM measurements WHERE disposition = 'passed'
                            GROUP BY variant, config_key, policy HAVING count(*) > 1))sql");
    EXPECT_EQ(duplicated, 0);
    twice += duplicated;
    EXPECT_EQ(db_number(sweep.db, "SELECT count(*) FROM runs WHERE status = 'running'"), 0);
  }
  EXPECT_EQ(quarantined, 0);
  // The kills landed in evaluations, and often on one config more than once: what a quarantine
  // that counted them would have lost.
  EXPECT_GE(cut_off, kKillCount / 4);
  EXPECT_GE(cut_off_twice, 1);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "[ kill-nine ] " << kills << " kills over " << sweeps.size() << " sweeps of "
            << testing::kSweepConfigs << " configs (" << finished_alone
            << " ended before their kill): " << cut_off << " evaluations cut off, " << cut_off_twice
            << " configs cut off twice or more; after one plain resume each: " << missing
            << " configs missing, " << twice << " measured twice, " << quarantined
            << " quarantined; " << seconds << " s\n";
}

}  // namespace
}  // namespace attn
