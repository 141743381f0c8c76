#include "measure/warmup.hpp"

#include <algorithm>
#include <cmath>

#include "base/sample_statistics.hpp"

namespace attn {

WarmupSettle::WarmupSettle(const MeasurePolicy& policy)
    : min_launches_(policy.warmup_min),
      window_(std::max<size_t>(policy.warmup_window, 1)),
      tolerance_(policy.warmup_tolerance),
      max_seconds_(policy.warmup_max_seconds) {}

bool WarmupSettle::add(double sample_us, double elapsed_seconds) {
  samples_.push_back(sample_us);
  const size_t n = samples_.size();
  if (n >= std::max(min_launches_, 2 * window_)) {
    const auto end = samples_.end();
    const double recent = median_of({end - std::ptrdiff_t(window_), end});
    const double before =
        median_of({end - std::ptrdiff_t(2 * window_), end - std::ptrdiff_t(window_)});
    if (before > 0 && std::fabs(recent - before) / before <= tolerance_) {
      settled_ = true;
      return true;
    }
  }
  return n >= min_launches_ && elapsed_seconds >= max_seconds_;
}

}  // namespace attn
