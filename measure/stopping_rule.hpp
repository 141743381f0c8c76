// Stopping rules: small plug-ins behind one interface, asked after every sample whether sampling
// may stop. A policy's rules (stopping_rules_for) are, in order:
//   noise   the relative noise of the median (sample_statistics.hpp) is at or under the target and
//           at least min_samples samples were kept
//   samples max_samples samples were taken, kept or discarded
//   time    max_seconds of sampling passed (twice that while no sample was kept)
// The first rule that fires names the stop reason recorded with the result. A result that did not
// stop on `noise` missed its target and is flagged unstable.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "measure/timing_policy.hpp"

namespace attn {

// interrupted: the caller asked sampling to stop (Ctrl-C between samples), not a rule.
enum class StopReason { none, noise, samples, time, interrupted };
std::string to_string(StopReason reason);

struct SamplingState {
  const std::vector<double>& kept;  // samples that count (taken at the expected clock)
  size_t taken = 0;                 // every sample taken, discarded ones too
  double elapsed_seconds = 0;       // since sampling began
};

class StoppingRule {
 public:
  virtual ~StoppingRule() = default;
  // StopReason::none to go on sampling.
  virtual StopReason check(const SamplingState& state) = 0;
  virtual std::string describe() const = 0;
};

std::unique_ptr<StoppingRule> noise_rule(double target, size_t min_samples);
std::unique_ptr<StoppingRule> sample_cap_rule(size_t max_samples);
std::unique_ptr<StoppingRule> time_cap_rule(double max_seconds);

class StoppingRules {
 public:
  void add(std::unique_ptr<StoppingRule> rule) { rules_.push_back(std::move(rule)); }
  StopReason check(const SamplingState& state);
  std::string describe() const;

 private:
  std::vector<std::unique_ptr<StoppingRule>> rules_;
};

StoppingRules stopping_rules_for(const MeasurePolicy& policy);

}  // namespace attn
