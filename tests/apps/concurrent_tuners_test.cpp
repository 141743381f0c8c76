// Several `attn-tune tune` processes on one sweep (the same workload, variants and database) share
// the work (docs/tuning.md, "Claims"): each config is claimed in the database before it is
// evaluated, so 2 and 4 tuners started together measure every config of the space exactly once
// between them, and each ends with the same winner over the whole space.
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "tests/apps/cli_runner.hpp"
#include "tests/apps/sweep_processes.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;
using testing::db_number;

class ConcurrentTuners : public testing::Cli {
 protected:
  const std::string marker_ = "concurrent-tuners-" + std::to_string(::getpid());
};

TEST_F(ConcurrentTuners, TwoAndFourTunersOnOneSweepMeasureEachConfigOnce) {
  // Longer evaluations than the sweeps of the other tests (the 26 configs in about a second on
  // one core), so that tuners started together overlap on a busy machine.
  const fs::path workload = write("shared.json", R"({
  "schema_version": 1,
  "name": "concurrent",
  "model": {"num_q_heads": 2, "num_kv_heads": 1, "head_dim": 64, "dtype": "bf16"},
  "kv_cache": {"page_size": 16},
  "sequences": [{"context_len": 24, "query_len": 8}],
  "seed": 7
})");
  for (const int tuners : {2, 4}) {
    SCOPED_TRACE(std::to_string(tuners) + " tuners");
    const fs::path db = dir_ / ("shared" + std::to_string(tuners) + ".db");
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::unique_ptr<testing::Child>> children;
    for (int i = 0; i < tuners; ++i) {
      children.push_back(std::make_unique<testing::Child>(
          testing::sweep_args(workload, db, false), testing::sweep_env(marker_),
          dir_ / ("out" + std::to_string(i)), dir_ / ("err" + std::to_string(i))));
    }
    for (int i = 0; i < tuners; ++i) {
      EXPECT_EQ(children[i]->wait(), 0) << testing::slurp(dir_ / ("out" + std::to_string(i)))
                                        << testing::slurp(dir_ / ("err" + std::to_string(i)));
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // Every config has exactly one passed measurement, and nothing else was measured.
    EXPECT_EQ(db_number(db, R"sql(
      SELECT count(*) FROM (SELECT DISTINCT variant, config_key FROM measurements
                            WHERE disposition = 'passed'))sql"),
              testing::kSweepConfigs);
    EXPECT_EQ(db_number(db, "SELECT count(*) FROM measurements"), testing::kSweepConfigs);
    EXPECT_EQ(db_number(db, "SELECT count(*) FROM attempts"), testing::kSweepConfigs);
    // Each completed its run, and the work was shared (how it splits depends on the machine's
    // load: a tuner that starts late may find every config taken).
    EXPECT_EQ(db_number(db, "SELECT count(*) FROM runs WHERE status = 'completed'"), tuners);
    EXPECT_GE(db_number(db, "SELECT count(DISTINCT run_id) FROM measurements"), 2);
    // Each chose its winner over the whole space: the same config.
    EXPECT_EQ(
        db_number(db, "SELECT count(*) FROM winners WHERE scope = '*' AND verdict = 'winner'"),
        tuners);
    EXPECT_EQ(db_number(db, R"sql(
      SELECT count(DISTINCT variant || ' ' || config_key) FROM winners
      WHERE scope = '*' AND verdict = 'winner')sql"),
              1);
    std::string split;
    for (int run = 1; run <= tuners; ++run) {
      split += (run > 1 ? " + " : "") +
               std::to_string(db_number(
                   db, "SELECT count(*) FROM measurements WHERE run_id = " + std::to_string(run)));
    }
    std::cout << "[ concurrent tuners ] " << tuners << " tuners, " << testing::kSweepConfigs
              << " configs: " << db_number(db, "SELECT count(*) FROM measurements")
              << " measurements (" << split << "), " << seconds << " s\n";
  }
}

}  // namespace
}  // namespace attn
