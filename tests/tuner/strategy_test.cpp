// Every strategy against the replay evaluator, on the CPU: a synthetic landscape the size of
// paged_decode.sm80_simt's space and rows replayed from a results database. The bar for the
// cheap strategies: within 2% of the exhaustive best using at most 25% of its measurement time.
#include <gtest/gtest.h>

#include <set>

#include "results/store.hpp"
#include "tests/tuner/tuner_test_spaces.hpp"
#include "tuner/replay_evaluator.hpp"
#include "tuner/strategy.hpp"

namespace attn {
namespace {

struct SearchRun {
  SearchResult result;
  double best_true_us = 0;  // the true time of the config the strategy picked
};

SearchRun search(const std::string& name, const std::vector<KernelConfig>& configs,
                 std::vector<ReplayCase> cases, uint64_t seed, const Budget& budget = {},
                 std::vector<PriorObservation> priors = {}) {
  const SpacePoints points = SpacePoints::from_configs(configs);
  std::unique_ptr<Strategy> strategy = make_strategy(name, points, seed, std::move(priors));
  ReplayEvaluator replay(cases, seed * 31 + 7);
  const int rungs = strategy->rungs();
  SearchRun run;
  run.result = run_search(*strategy, budget, [&](const Trial& t) {
    return replay.evaluate(t, rung_policy(t.rung, rungs));
  });
  const std::optional<size_t> best = best_outcome(run.result.history, rungs - 1);
  if (best) run.best_true_us = cases[run.result.history[*best].trial.config].median();
  return run;
}

TEST(Strategies, ExhaustiveMeasuresEveryConfigOnce) {
  const auto configs = testing::sm80_simt_like_configs();
  const SearchRun run =
      search("exhaustive", configs, testing::sm80_simt_like_landscape(configs, 1), 1);
  EXPECT_EQ(run.result.history.size(), configs.size());
  std::set<size_t> seen;
  for (const Outcome& o : run.result.history) seen.insert(o.trial.config);
  EXPECT_EQ(seen.size(), configs.size());
  EXPECT_FALSE(run.result.budget_exhausted);
}

// Halving and model: several landscapes (seeds), each judged against exhaustive on the same one.
class CheapStrategies : public ::testing::TestWithParam<std::string> {};

// Measured on this replay (seeds 1 to 4): model about 4.4% of exhaustive's time; halving about
// 18.5%: its rung 0 screens every config (screen: at least 2 warm-up launches, 3 samples), its
// rung 1 confirms the best 1/12 and the configs racing them.
constexpr double kTimeBound = 0.25;

TEST_P(CheapStrategies, WithinTwoPercentOfExhaustiveInAFractionOfItsTime) {
  const auto configs = testing::sm80_simt_like_configs();
  for (uint64_t seed : {1, 2, 3, 4}) {
    const auto cases = testing::sm80_simt_like_landscape(configs, seed);
    const SearchRun exhaustive = search("exhaustive", configs, cases, seed);
    const SearchRun cheap = search(GetParam(), configs, cases, seed);
    ASSERT_GT(cheap.best_true_us, 0) << "seed " << seed;
    EXPECT_LE(cheap.best_true_us, 1.02 * exhaustive.best_true_us)
        << GetParam() << " seed " << seed << ": true time of its pick vs exhaustive's";
    EXPECT_LE(cheap.result.cost_seconds, kTimeBound * exhaustive.result.cost_seconds)
        << GetParam() << " seed " << seed << ": " << cheap.result.cost_seconds << " s vs "
        << exhaustive.result.cost_seconds << " s";
  }
}

INSTANTIATE_TEST_SUITE_P(Replay, CheapStrategies, ::testing::Values("halving", "model"));

TEST(Strategies, RandomStopsAtItsBudget) {
  const auto configs = testing::sm80_simt_like_configs();
  const auto cases = testing::sm80_simt_like_landscape(configs, 4);
  Budget trials;
  trials.trials = 50;
  const SearchRun by_trials = search("random", configs, cases, 4, trials);
  EXPECT_EQ(by_trials.result.history.size(), 50u);
  EXPECT_TRUE(by_trials.result.budget_exhausted);
  Budget seconds;
  seconds.seconds = 0.5;
  const SearchRun by_time = search("random", configs, cases, 4, seconds);
  EXPECT_TRUE(by_time.result.budget_exhausted);
  EXPECT_GE(by_time.result.cost_seconds, 0.5);
  // The budget is checked before each trial: it is passed by at most the last one.
  EXPECT_LT(by_time.result.cost_seconds - by_time.result.history.back().cost_seconds, 0.5);
  // Distinct configs only.
  std::set<size_t> seen;
  for (const Outcome& o : by_trials.result.history) seen.insert(o.trial.config);
  EXPECT_EQ(seen.size(), 50u);
}

TEST(Strategies, ModelUsesPriorsFromAnotherWorkload) {
  const auto configs = testing::sm80_simt_like_configs();
  const auto cases = testing::sm80_simt_like_landscape(configs, 5);
  // The "other workload": the same landscape shape, twice as slow, every 3rd config measured.
  std::vector<PriorObservation> priors;
  double mean = 0;
  size_t n = 0;
  for (size_t i = 0; i < cases.size(); i += 3) mean += std::log(2 * cases[i].true_us), ++n;
  mean /= double(n);
  for (size_t i = 0; i < cases.size(); i += 3) {
    priors.push_back({i, std::log(2 * cases[i].true_us) - mean});
  }
  const SearchRun exhaustive = search("exhaustive", configs, cases, 5);
  const SearchRun with = search("model", configs, cases, 5, {}, priors);
  const SearchRun without = search("model", configs, cases, 5);
  EXPECT_LE(with.best_true_us, 1.02 * exhaustive.best_true_us);
  EXPECT_LE(with.result.cost_seconds, without.result.cost_seconds * 1.5);
  EXPECT_LE(with.result.cost_seconds, 0.25 * exhaustive.result.cost_seconds);
}

// A strategy is a function of the history: stopping part-way and going on with what was measured
// proposes exactly what one uninterrupted search does (what a resumed sweep relies on).
TEST(Strategies, ResumingFromAPartialHistoryProposesTheSameTrials) {
  const auto configs = testing::sm80_simt_like_configs();
  const auto cases = testing::sm80_simt_like_landscape(configs, 6);
  const SpacePoints points = SpacePoints::from_configs(configs);
  for (const std::string& name : strategy_names()) {
    auto evaluate_with = [&](ReplayEvaluator& replay, int rungs) {
      return [&replay, rungs](const Trial& t) {
        return replay.evaluate(t, rung_policy(t.rung, rungs));
      };
    };
    Budget full;
    full.trials = 400;
    auto whole = make_strategy(name, points, 9);
    ReplayEvaluator r1(cases, 3);
    const SearchResult once = run_search(*whole, full, evaluate_with(r1, whole->rungs()));

    Budget part;
    part.trials = 150;
    auto first = make_strategy(name, points, 9);
    ReplayEvaluator r2(cases, 3);
    const SearchResult interrupted = run_search(*first, part, evaluate_with(r2, first->rungs()));
    auto second = make_strategy(name, points, 9);
    Budget rest;
    rest.trials = 400 - 150;
    const SearchResult resumed =
        run_search(*second, rest, evaluate_with(r2, second->rungs()), interrupted.history);
    ASSERT_EQ(resumed.history.size(), once.history.size()) << name;
    for (size_t i = 0; i < once.history.size(); ++i) {
      ASSERT_EQ(resumed.history[i].trial, once.history[i].trial) << name << " trial " << i;
    }
  }
}

// Rows a real sweep stored: the replay evaluator reads them from a database and resamples them.
TEST(Strategies, ReplayedRowsFromADatabase) {
  std::vector<KernelConfig> configs;
  for (const KernelConfig& c : testing::sm80_simt_like_configs()) {
    if (c.get("stages") == 3 && c.get("num_splits") <= 8) configs.push_back(c);
  }
  ASSERT_EQ(configs.size(), 4u * 4 * 5 * 5);
  const auto truth = testing::sm80_simt_like_landscape(configs, 8);
  Store store(":memory:");
  const int64_t run = store.begin_run({"attn-tune tune", "t", "c", "Release", "x", "h", ""});
  DeviceRecord device;
  device.kind = "gpu";
  device.name = "replayed";
  const int64_t device_id = store.upsert_device(device);
  const int64_t workload_id = store.upsert_workload({"replay-hash", "replay", "{}"});
  ReplayEvaluator recorder(truth, 11);
  for (size_t i = 0; i < configs.size(); ++i) {
    Measurement m;
    m.family = "paged_decode";
    m.variant = "paged_decode.sm80_simt";
    m.config_key = configs[i].key();
    m.config_json = configs[i].to_json().dump();
    m.backend = "cuda";
    m.policy = "confirm";
    if (truth[i].ok) {
      m.disposition = Disposition::passed;
      m.samples_us = recorder.evaluate({i, 0}, confirm_policy()).samples;
      m.stats = summarize(m.samples_us);
    } else {
      m.disposition = Disposition::incorrect;
    }
    store.add_measurement(run, device_id, workload_id, m);
  }
  const ReplayEvaluator replayed = ReplayEvaluator::from_store(
      store, "replay-hash", device.fingerprint(), "paged_decode.sm80_simt", configs, 1);
  ASSERT_EQ(replayed.cases().size(), configs.size());
  for (size_t i = 0; i < configs.size(); ++i) {
    EXPECT_EQ(replayed.cases()[i].ok, truth[i].ok) << i;
    if (truth[i].ok) {
      EXPECT_NEAR(replayed.cases()[i].median(), truth[i].true_us, 0.03 * truth[i].true_us);
    }
  }
  const SearchRun exhaustive = search("exhaustive", configs, replayed.cases(), 2);
  for (const char* name : {"halving", "model"}) {
    const SearchRun cheap = search(name, configs, replayed.cases(), 2);
    EXPECT_LE(cheap.best_true_us, 1.02 * exhaustive.best_true_us) << name;
    EXPECT_LT(cheap.result.cost_seconds, 0.5 * exhaustive.result.cost_seconds) << name;
  }
}

TEST(Strategies, UnknownNameIsAUsageError) {
  EXPECT_ANY_THROW(make_strategy("annealing", SpacePoints{}, 1));
  EXPECT_EQ(rung_policy(0, 2).name, "screen");
  EXPECT_EQ(rung_policy(1, 2).name, "confirm");
  EXPECT_EQ(rung_policy(0, 1).name, "confirm");
}

}  // namespace
}  // namespace attn
