// Strategies: what to measure next. A strategy sees the space as points (one integer coordinate per
// axis) and the outcomes so far, and proposes the next batch of trials; it never touches CUDA, a
// database or a clock, so every strategy runs the same against the real evaluator (attn-tune tune)
// and the replay evaluator (tests). run_search() drives one against an evaluation function under a
// budget of trials or measurement seconds.
//
// A trial is a config at a rung: rung 0 is the cheapest fidelity and rung rungs()-1 the strictest;
// the caller maps rungs to measurement policies (rung_policy): the top rung is always `confirm`,
// rung 0 of a multi-rung strategy is `screen`. Only top-rung outcomes compete for the winner.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/kernel_config.hpp"
#include "measure/timing_policy.hpp"

namespace attn {

// The configs of one variant as numeric points: points[i][a] is config i's value of axis a.
struct SpacePoints {
  std::vector<std::string> axes;
  std::vector<std::vector<int64_t>> points;
  size_t size() const { return points.size(); }
  // From configs that all have the same axes (a SearchSpace's survivors).
  static SpacePoints from_configs(const std::vector<KernelConfig>& configs);
};

struct Trial {
  size_t config = 0;
  int rung = 0;
  bool operator==(const Trial& o) const { return config == o.config && rung == o.rung; }
};

struct Outcome {
  Trial trial;
  bool ok = false;  // measured and verified; median_us and samples are valid
  double median_us = 0;
  std::vector<double> samples;  // kept samples, microseconds
  double cost_seconds = 0;      // measurement time this trial took
};

// An observation of the same variant on another workload or device (attn-tune tune reads them from
// the database): a prior for model-based search. log_time is centred per source (only the shape of
// the landscape carries over, not the absolute times).
struct PriorObservation {
  size_t config = 0;
  double log_time = 0;
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string name() const = 0;
  virtual int rungs() const { return 1; }
  // The next trials, given every outcome so far in the order evaluated; empty when done. A trial
  // already in `history` is not proposed again.
  virtual std::vector<Trial> propose(const std::vector<Outcome>& history) = 0;
};

std::unique_ptr<Strategy> make_exhaustive_strategy(const SpacePoints& space);
// A seeded permutation, in batches; ends when the space or the budget is used up.
std::unique_ptr<Strategy> make_random_strategy(const SpacePoints& space, uint64_t seed);
// Successive halving with racing: every config at rung 0, then at each rung the best 1/eta (at
// least `min_keep`) and any config whose median interval still overlaps the leader's go up one
// rung, up to twice the quota.
struct HalvingOptions {
  int rungs = 2;
  double eta = 12;
  size_t min_keep = 3;
};
std::unique_ptr<Strategy> make_halving_strategy(const SpacePoints& space, HalvingOptions options);
// Model-based: an additive model of log-time over the axis values plus a nearest-neighbour
// correction of its residuals (which carries the interactions), fit to the outcomes and any
// priors; proposes the configs with the lowest predicted time, with one exploration pick per batch,
// and stops after `patience` batches that did not improve the best by more than `min_gain`.
struct ModelOptions {
  uint64_t seed = 1;
  size_t initial = 0;  // configs in the initial design; 0: max(2 * axes + 2, 3% of the space)
  size_t batch = 4;
  size_t patience = 6;
  double min_gain = 0.005;
  std::vector<PriorObservation> priors;
  double prior_weight = 0.3;  // of one prior observation relative to one outcome
};
std::unique_ptr<Strategy> make_model_strategy(const SpacePoints& space, ModelOptions options);

// "exhaustive", "random", "halving", "model"; throws UsageError for another name.
std::unique_ptr<Strategy> make_strategy(const std::string& name, const SpacePoints& space,
                                        uint64_t seed, std::vector<PriorObservation> priors = {});
std::vector<std::string> strategy_names();

// The policy of a rung: the top rung is `confirm`, lower rungs `screen`.
MeasurePolicy rung_policy(int rung, int rungs);

struct Budget {
  std::optional<size_t> trials;   // evaluations at any rung
  std::optional<double> seconds;  // sum of the outcomes' cost_seconds
  bool exhausted(size_t trials_done, double seconds_spent) const;
};

// Trials `strategy` is expected to make over a space of n configs under `budget` (the sweep's
// progress line counts down from it; a planned sweep estimates its cost from it). Halving: a screen
// of every config, then about 2 x max(3, n / 8) confirms; model: its initial design and some
// batches; exhaustive and random: every config.
size_t planned_trials(const std::string& strategy, size_t n, const Budget& budget);

struct SearchResult {
  std::vector<Outcome> history;
  double cost_seconds = 0;
  bool budget_exhausted = false;
};

// Asks the strategy for batches and evaluates each trial until it proposes nothing or the budget is
// spent (checked before each trial). `history` starts with outcomes already known (a resumed
// sweep); they are not evaluated again and do not count against the budget.
SearchResult run_search(Strategy& strategy, const Budget& budget,
                        const std::function<Outcome(const Trial&)>& evaluate,
                        std::vector<Outcome> history = {});

// The index of the best top-rung outcome (lowest median) in `history`, or nullopt.
std::optional<size_t> best_outcome(const std::vector<Outcome>& history, int top_rung);

}  // namespace attn
