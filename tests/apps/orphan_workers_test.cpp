// No `attn-tune worker` outlives its orchestrator by more than a second after a kill -9: the
// worker is started with PR_SET_PDEATHSIG set before it runs anything (between fork and exec,
// then a check that the parent is still the one that forked it), so the kernel kills it with its
// parent even while it is still starting (a worker hung in its set-up never reaches its own code).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "tests/apps/cli_runner.hpp"
#include "tests/apps/sweep_processes.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;
using testing::eventually;

class OrphanWorkers : public testing::Cli {
 protected:
  // Seconds until no process carries `marker` any more (at most `limit`).
  static double seconds_until_none_left(const std::string& marker, double limit) {
    const auto start = std::chrono::steady_clock::now();
    eventually([&] { return testing::processes_with(marker) == 0; }, limit);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
};

// A worker hung while it starts (before it sets up its batch, so before any code of its own could
// ask for PR_SET_PDEATHSIG) dies with its orchestrator.
TEST_F(OrphanWorkers, AWorkerHungInItsStartUpDiesWithItsKilledOrchestrator) {
  const fs::path workload = write("hung-start.json", testing::tiny_prefill_json("hung-start"));
  const std::string marker = "orphan-start-" + std::to_string(::getpid());
  std::vector<std::string> env = testing::sweep_env(marker);
  env.push_back("ATTN_TUNE_WORKER_FAULTS=hang@startup:hung-start.json");
  testing::Child tune(testing::sweep_args(workload, dir_ / "start.db", true), env, dir_ / "out",
                      dir_ / "err");
  ASSERT_GT(tune.pid(), 0);
  ASSERT_TRUE(eventually([&] { return testing::processes_with(marker) == 2; }, 30))
      << "the orchestrator and its starting worker\n"
      << testing::slurp(dir_ / "err");
  ::usleep(200000);  // the worker is in its hang
  ::kill(tune.pid(), SIGKILL);
  tune.wait();
  const double seconds = seconds_until_none_left(marker, 5);
  EXPECT_EQ(testing::processes_with(marker), 0) << "the starting worker outlived its orchestrator";
  EXPECT_LT(seconds, 1.0);
}

// kill -9 at random points of sweeps with a worker: each time, no worker is left a second later.
TEST_F(OrphanWorkers, NoWorkerIsLeftASecondAfterKill9AtRandomPointsOfASweep) {
  const fs::path workload = write("tiny.json", testing::tiny_prefill_json("orphan-random"));
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("random seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> delay(0.0, 0.3);
  double slowest = 0;
  for (int kill = 0; kill < 8; ++kill) {
    SCOPED_TRACE("kill " + std::to_string(kill));
    const std::string marker =
        "orphan-random-" + std::to_string(::getpid()) + "-" + std::to_string(kill);
    // A new database each time: a resumed sweep with little left could end before it is killed.
    const fs::path db = dir_ / ("random" + std::to_string(kill) + ".db");
    testing::Child tune(testing::sweep_args(workload, db, true), testing::sweep_env(marker),
                        dir_ / "out", dir_ / "err");
    ASSERT_GT(tune.pid(), 0);
    // Once the worker exists, a random moment of the sweep.
    ASSERT_TRUE(eventually([&] { return testing::processes_with(marker) == 2; }, 30))
        << "the orchestrator and its worker\n"
        << testing::slurp(dir_ / "err");
    ::usleep(useconds_t(delay(rng) * 1e6));
    ::kill(tune.pid(), SIGKILL);
    tune.wait();
    const double seconds = seconds_until_none_left(marker, 5);
    EXPECT_EQ(testing::processes_with(marker), 0) << "a worker outlived its orchestrator";
    EXPECT_LT(seconds, 1.0);
    slowest = std::max(slowest, seconds);
  }
  std::cout << "[ orphan workers ] 8 kills -9 of a sweep with a worker: every worker gone within "
            << slowest << " s\n";
}

}  // namespace
}  // namespace attn
