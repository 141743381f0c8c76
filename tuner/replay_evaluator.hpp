// ReplayEvaluator: answers trials without a GPU, from a table of what each config costs: a true
// median and a per-sample noise (a synthetic landscape), or the samples a real sweep recorded in a
// results database. Each trial is "measured" under its rung's policy the way the timing core does
// it: warm-up until WarmupSettle says so, then samples until the policy's stopping rules fire; the
// trial's cost is the time those launches would have taken (a launch shorter than the policy's
// graph threshold is sampled as a graph of graph_sample_us, as the graph timer does). So every
// strategy can be compared on the CPU by outcome and by measurement time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/kernel_config.hpp"
#include "measure/timing_policy.hpp"
#include "tuner/strategy.hpp"

namespace attn {

class Store;

struct ReplayCase {
  bool ok = true;                // false: the config fails (replays as a failed trial)
  double true_us = 0;            // synthetic: the median a perfect measurement finds
  double noise = 0.02;           // synthetic: relative standard deviation of one sample
  std::vector<double> recorded;  // replayed: samples drawn from these instead (with replacement)
  double median() const;         // true_us, or the median of `recorded`
};

class ReplayEvaluator {
 public:
  ReplayEvaluator(std::vector<ReplayCase> cases, uint64_t seed);
  // The passed measurements of one variant on one workload and device in `store`, matched to
  // `configs` by config key (all rows of a config pooled); a config without one replays as failed.
  static ReplayEvaluator from_store(const Store& store, const std::string& workload_hash,
                                    const std::string& device_fingerprint,
                                    const std::string& variant,
                                    const std::vector<KernelConfig>& configs, uint64_t seed);

  Outcome evaluate(const Trial& trial, const MeasurePolicy& policy);
  const std::vector<ReplayCase>& cases() const { return cases_; }
  // The lowest true median over the cases that are ok.
  double best_median() const;

 private:
  double draw(const ReplayCase& c);
  std::vector<ReplayCase> cases_;
  uint64_t state_;
};

}  // namespace attn
