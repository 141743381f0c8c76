// The sampling loop of the timing core: warm-up until settled, then samples until a stopping rule
// fires, each sample paired with an SM clock reading and filtered by it. Knows nothing of CUDA:
// the timer and the clock reader are passed in, so the CPU tests drive it with synthetic ones.
#pragma once

#include <functional>
#include <vector>

#include "measure/sample_timer.hpp"
#include "measure/stopping_rule.hpp"
#include "measure/timing_policy.hpp"

namespace attn {

struct WarmupResult {
  std::vector<double> samples_us;
  bool settled = false;
  double median_us() const;  // of the last window: the launch time the timer choice is made on
  size_t window = 1;
};
// What a caller may ask of a sampling loop while it runs: to hear each sample (a progress bar) and
// to stop between two samples (Ctrl-C). Both optional; neither changes what is measured.
struct SamplingProgress {
  bool warming_up = false;
  size_t taken = 0;                 // samples so far (warm-up ones while warming up)
  const std::vector<double>* kept;  // the samples that count so far (empty while warming up)
  double elapsed_seconds = 0;       // since this phase began
  const MeasurePolicy* policy;      // its sample and time limits and noise target
};
struct SamplingHooks {
  std::function<void(const SamplingProgress&)> on_sample;
  std::function<bool()> stop_requested;  // true: stop after the sample in hand
};

// Stops early (unsettled) when hooks.stop_requested() says so.
WarmupResult warm_up(SampleTimer& timer, const MeasurePolicy& policy,
                     const SamplingHooks& hooks = {});

struct SamplingResult {
  std::vector<double> samples_us;  // every sample, in order
  std::vector<double> clocks_mhz;  // one reading per sample (0: none)
  std::vector<bool> discarded;     // one flag per sample
  std::vector<double> kept;        // samples_us without the discarded ones
  size_t discarded_count = 0;
  double expected_clock_mhz = 0;
  StopReason stop_reason = StopReason::none;
  double noise = 0;  // relative noise of the median of `kept`
  double elapsed_seconds = 0;
};

// `read_clock` (may be empty) returns the SM clock in MHz right after each sample.
// `reference_clock_mhz` is the clock the session expects (0: take this run's median).
// hooks.stop_requested() ends sampling with StopReason::interrupted after at least one sample.
SamplingResult sample(SampleTimer& timer, const MeasurePolicy& policy,
                      const std::function<double()>& read_clock, double reference_clock_mhz,
                      const SamplingHooks& hooks = {});

}  // namespace attn
