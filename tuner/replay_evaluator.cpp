#include "tuner/replay_evaluator.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "base/errors.hpp"
#include "base/sample_statistics.hpp"
#include "measure/stopping_rule.hpp"
#include "measure/warmup.hpp"
#include "results/store.hpp"

namespace attn {

namespace {

uint64_t splitmix(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double uniform01(uint64_t& state) {
  return (double(splitmix(state) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

}  // namespace

double ReplayCase::median() const {
  return recorded.empty() ? true_us : median_of(recorded);
}

ReplayEvaluator::ReplayEvaluator(std::vector<ReplayCase> cases, uint64_t seed)
    : cases_(std::move(cases)), state_(seed) {}

ReplayEvaluator ReplayEvaluator::from_store(const Store& store, const std::string& workload_hash,
                                            const std::string& device_fingerprint,
                                            const std::string& variant,
                                            const std::vector<KernelConfig>& configs,
                                            uint64_t seed) {
  std::map<std::string, std::vector<double>> samples;
  for (const StoredMeasurement& row :
       store.measurements_for(workload_hash, device_fingerprint, variant)) {
    if (row.measurement.disposition != Disposition::passed) continue;
    for (double s : row.measurement.kept_samples())
      samples[row.measurement.config_key].push_back(s);
  }
  std::vector<ReplayCase> cases;
  for (const KernelConfig& c : configs) {
    ReplayCase r;
    auto it = samples.find(c.key());
    r.ok = it != samples.end() && !it->second.empty();
    if (r.ok) r.recorded = it->second;
    cases.push_back(std::move(r));
  }
  return ReplayEvaluator(std::move(cases), seed);
}

double ReplayEvaluator::draw(const ReplayCase& c) {
  if (!c.recorded.empty()) {
    return c.recorded[size_t(uniform01(state_) * double(c.recorded.size())) % c.recorded.size()];
  }
  // Box-Muller: a lognormal sample around the true median, and now and then a slow outlier (an
  // interrupt, a clock dip) as real samples have.
  const double u1 = uniform01(state_), u2 = uniform01(state_);
  const double normal = std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
  const double outlier = uniform01(state_) < 0.02 ? 1.2 : 1.0;
  return c.true_us * std::exp(c.noise * normal) * outlier;
}

Outcome ReplayEvaluator::evaluate(const Trial& trial, const MeasurePolicy& policy) {
  ATTN_ASSERT(trial.config < cases_.size(), "replay: trial outside the space");
  const ReplayCase& c = cases_[trial.config];
  Outcome out;
  out.trial = trial;
  // A failed config still costs its verification launch.
  if (!c.ok) {
    out.cost_seconds = 1e-3;
    return out;
  }
  const double median = c.median();
  const bool graph = policy.timer == TimerMode::graph ||
                     (policy.timer == TimerMode::automatic && median < policy.graph_below_us);
  const double launches = graph ? std::max(1.0, std::floor(policy.graph_sample_us / median)) : 1;
  const double per_sample_s = launches * median * 1e-6;
  double elapsed = per_sample_s;  // the verification launch
  WarmupSettle warmup(policy);
  while (!warmup.add(draw(c), elapsed)) elapsed += per_sample_s;
  elapsed += per_sample_s;
  StoppingRules rules = stopping_rules_for(policy);
  std::vector<double> kept;
  double sampling = 0;
  while (true) {
    // A graph sample is the mean of its launches: its noise shrinks with their number.
    double sample = draw(c);
    if (graph && launches > 1) sample = median + (sample - median) / std::sqrt(launches);
    kept.push_back(sample);
    sampling += per_sample_s;
    if (rules.check({kept, kept.size(), sampling}) != StopReason::none) break;
  }
  out.ok = true;
  out.samples = kept;
  out.median_us = median_of(kept);
  out.cost_seconds = elapsed + sampling;
  return out;
}

double ReplayEvaluator::best_median() const {
  double best = std::numeric_limits<double>::infinity();
  for (const ReplayCase& c : cases_) {
    if (c.ok) best = std::min(best, c.median());
  }
  return best;
}

}  // namespace attn
