// Warm-up until the first samples settle: module load, first-touch page mapping, the clock ramping
// up from idle and the instruction cache all make the first launches slow. The warm-up is over when
// at least `min_launches` ran and the medians of the last two windows of `window` samples agree
// within `tolerance`, or when `max_seconds` passed (a kernel that never settles is then sampled
// anyway, and its noise shows in the result).
#pragma once

#include <cstddef>
#include <vector>

#include "measure/timing_policy.hpp"

namespace attn {

class WarmupSettle {
 public:
  explicit WarmupSettle(const MeasurePolicy& policy);
  // Adds one warm-up sample (microseconds); true when the warm-up is over.
  bool add(double sample_us, double elapsed_seconds);
  const std::vector<double>& samples() const { return samples_; }
  bool settled() const { return settled_; }  // ended by agreement, not by the time cap

 private:
  size_t min_launches_, window_;
  double tolerance_, max_seconds_;
  std::vector<double> samples_;
  bool settled_ = false;
};

}  // namespace attn
