#include "tuner/strategy.hpp"

#include "base/errors.hpp"

namespace attn {

SpacePoints SpacePoints::from_configs(const std::vector<KernelConfig>& configs) {
  SpacePoints out;
  if (configs.empty()) return out;
  for (const auto& [axis, value] : configs.front().values()) out.axes.push_back(axis);
  for (const KernelConfig& c : configs) {
    ATTN_ASSERT(c.values().size() == out.axes.size(), "configs of one space share their axes");
    std::vector<int64_t> point;
    for (const std::string& axis : out.axes) point.push_back(c.get(axis));
    out.points.push_back(std::move(point));
  }
  return out;
}

std::unique_ptr<Strategy> make_strategy(const std::string& name, const SpacePoints& space,
                                        uint64_t seed, std::vector<PriorObservation> priors) {
  if (name == "exhaustive") return make_exhaustive_strategy(space);
  if (name == "random") return make_random_strategy(space, seed);
  if (name == "halving") return make_halving_strategy(space, {});
  if (name == "model") {
    ModelOptions options;
    options.seed = seed;
    options.priors = std::move(priors);
    return make_model_strategy(space, std::move(options));
  }
  throw UsageError("--strategy '" + name + "': use exhaustive, random, halving or model");
}

std::vector<std::string> strategy_names() {
  return {"exhaustive", "random", "halving", "model"};
}

MeasurePolicy rung_policy(int rung, int rungs) {
  return rung + 1 >= rungs ? confirm_policy() : screen_policy();
}

size_t planned_trials(const std::string& strategy, size_t n, const Budget& budget) {
  size_t planned = n;
  if (strategy == "halving") planned = n + std::min(n, std::max<size_t>(3, n / 8) * 2);
  if (strategy == "model") planned = std::min(n, std::max<size_t>(12, n / 33) + 40);
  if (budget.trials) planned = std::min(planned, *budget.trials);
  return planned;
}

bool Budget::exhausted(size_t trials_done, double seconds_spent) const {
  return (trials && trials_done >= *trials) || (seconds && seconds_spent >= *seconds);
}

SearchResult run_search(Strategy& strategy, const Budget& budget,
                        const std::function<Outcome(const Trial&)>& evaluate,
                        std::vector<Outcome> history) {
  SearchResult result;
  result.history = std::move(history);
  size_t trials = 0;
  while (true) {
    const std::vector<Trial> batch = strategy.propose(result.history);
    if (batch.empty()) break;
    for (const Trial& trial : batch) {
      if (budget.exhausted(trials, result.cost_seconds)) {
        result.budget_exhausted = true;
        return result;
      }
      Outcome outcome = evaluate(trial);
      outcome.trial = trial;
      result.cost_seconds += outcome.cost_seconds;
      ++trials;
      result.history.push_back(std::move(outcome));
    }
  }
  return result;
}

std::optional<size_t> best_outcome(const std::vector<Outcome>& history, int top_rung) {
  std::optional<size_t> best;
  for (size_t i = 0; i < history.size(); ++i) {
    const Outcome& o = history[i];
    if (!o.ok || o.trial.rung != top_rung) continue;
    if (!best || o.median_us < history[*best].median_us) best = i;
  }
  return best;
}

}  // namespace attn
