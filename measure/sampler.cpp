#include "measure/sampler.hpp"

#include <chrono>

#include "base/sample_statistics.hpp"
#include "measure/clock_filter.hpp"
#include "measure/warmup.hpp"

namespace attn {

namespace {
double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
}  // namespace

double WarmupResult::median_us() const {
  if (samples_us.empty()) return 0;
  const size_t w = std::min(window, samples_us.size());
  return median_of({samples_us.end() - std::ptrdiff_t(w), samples_us.end()});
}

WarmupResult warm_up(SampleTimer& timer, const MeasurePolicy& policy, const SamplingHooks& hooks) {
  WarmupSettle settle(policy);
  const auto began = std::chrono::steady_clock::now();
  static const std::vector<double> kNone;
  size_t taken = 0;
  while (!settle.add(timer.sample_us(), seconds_since(began))) {
    ++taken;
    if (hooks.on_sample) hooks.on_sample({true, taken, &kNone, seconds_since(began), &policy});
    if (hooks.stop_requested && hooks.stop_requested()) break;
  }
  WarmupResult result;
  result.samples_us = settle.samples();
  result.settled = settle.settled();
  result.window = std::max<size_t>(policy.warmup_window, 1);
  return result;
}

SamplingResult sample(SampleTimer& timer, const MeasurePolicy& policy,
                      const std::function<double()>& read_clock, double reference_clock_mhz,
                      const SamplingHooks& hooks) {
  SamplingResult r;
  StoppingRules rules = stopping_rules_for(policy);
  const auto began = std::chrono::steady_clock::now();
  for (;;) {
    r.samples_us.push_back(timer.sample_us());
    r.clocks_mhz.push_back(read_clock ? read_clock() : 0);
    // Re-filter everything: the expected clock (a median) moves as readings come in.
    const ClockFilterResult filter =
        filter_by_clock(r.clocks_mhz, policy.clock_threshold, reference_clock_mhz);
    r.kept.clear();
    for (size_t i = 0; i < r.samples_us.size(); ++i) {
      if (!filter.discarded[i]) r.kept.push_back(r.samples_us[i]);
    }
    r.discarded = filter.discarded;
    r.discarded_count = filter.discarded_count;
    r.expected_clock_mhz = filter.expected_mhz;
    r.elapsed_seconds = seconds_since(began);
    r.stop_reason = rules.check({r.kept, r.samples_us.size(), r.elapsed_seconds});
    if (hooks.on_sample) {
      hooks.on_sample({false, r.samples_us.size(), &r.kept, r.elapsed_seconds, &policy});
    }
    if (r.stop_reason == StopReason::none && hooks.stop_requested && hooks.stop_requested()) {
      r.stop_reason = StopReason::interrupted;
    }
    if (r.stop_reason != StopReason::none) break;
  }
  r.noise = median_relative_noise(r.kept);
  return r;
}

}  // namespace attn
