// The bridge between a case's sampling loop and the progress bar: what the bar says within a long
// case (warm-up, samples against the policy's limits, elapsed time, noise against its target) and
// how far the case is by its stopping rule; and the stop request polled between samples, so that
// Ctrl-C ends a case within one sample instead of after it.
#pragma once

#include <functional>
#include <string>

#include "base/progress.hpp"
#include "measure/sampler.hpp"

namespace attn {

// "samples 45 (20..100), 2.3s of 5s, noise 0.81% (target 0.5%)" or "warm-up 12 samples, 0.3s".
std::string describe_sampling(const SamplingProgress& p);

// How far sampling is by whichever limit comes first: the samples taken of max_samples, or the
// elapsed time of max_seconds; 0 while warming up.
double sampling_fraction(const SamplingProgress& p);

// Hooks that draw each sample on `progress` (throttled; `progress` must outlive them) and stop
// sampling when `stop_requested` says so (may be empty).
SamplingHooks case_progress_hooks(Progress* const* progress, std::function<bool()> stop_requested);

}  // namespace attn
