// MeasurePolicy: how hard the timing core works for one result. Two named policies exist and every
// result records the name of the one it was measured under (with any command-line overrides
// written after it, e.g. "confirm(noise=0.01)"):
//   screen   cheap: few samples, 3% noise target, 1 s cap; the tuner's first pass
//   confirm  strict: at least 20 samples, 0.5% noise target, 15 s cap; attn-bench run and finalists
// docs/measurement.md explains each field.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace attn {

// How one sample is timed on a GPU. `automatic` times a few launches with events first and picks
// `graph` when one launch is shorter than MeasurePolicy::graph_below_us.
enum class TimerMode { events, graph, automatic };
std::string to_string(TimerMode mode);
std::optional<TimerMode> timer_mode_from_string(const std::string& text);  // events|graph|auto

struct MeasurePolicy {
  std::string name;
  size_t min_samples = 20;    // kept samples before the noise rule may stop
  size_t max_samples = 2000;  // samples taken (kept or discarded) before sampling stops anyway
  double noise = 0.005;  // target relative noise of the median (bootstrap standard error / median)
  double max_seconds = 15;  // wall time of sampling before it stops anyway
  // Warm-up: at least warmup_min launches, then until the medians of the last two windows of
  // warmup_window samples agree within warmup_tolerance, or warmup_max_seconds passed.
  size_t warmup_min = 3;
  size_t warmup_window = 5;
  double warmup_tolerance = 0.02;
  double warmup_max_seconds = 0.5;
  TimerMode timer = TimerMode::automatic;
  double graph_below_us = 50;     // automatic: a graph for launches shorter than this
  double graph_sample_us = 2000;  // a graph sample holds enough launches to last about this long
  bool flush_l2 = true;           // events timer: flush the L2 before each sample
  bool probe_clocks = true;       // read the SM clock beside each GPU sample
  double clock_threshold = 0.90;  // discard samples whose SM clock is below this x expected

  // Fractions of discarded samples, or a final noise above the target, that flag a result unstable.
  double unstable_discard_fraction = 0.10;
};

MeasurePolicy screen_policy();
MeasurePolicy confirm_policy();
// "screen" or "confirm"; nullopt for any other name.
std::optional<MeasurePolicy> named_policy(const std::string& name);

// Command-line overrides of a named policy. Each one set is applied and written into the name.
struct PolicyOverrides {
  std::optional<size_t> min_samples, max_samples;
  std::optional<double> noise, max_seconds;
  std::optional<TimerMode> timer;
  std::optional<size_t> warmup_min;
  std::optional<bool> flush_l2;
};
// Throws UsageError when the result is inconsistent (min > max, noise <= 0, ...).
MeasurePolicy apply_overrides(MeasurePolicy policy, const PolicyOverrides& overrides);
void validate(const MeasurePolicy& policy);

}  // namespace attn
