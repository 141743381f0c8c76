#include "apps/case_progress.hpp"

#include <algorithm>
#include <chrono>
#include <memory>

#include "base/sample_statistics.hpp"
#include "results/table.hpp"

namespace attn {

std::string describe_sampling(const SamplingProgress& p) {
  if (p.warming_up) return format("warm-up %zu samples, %.1fs", p.taken, p.elapsed_seconds);
  std::string text = format("samples %zu (%zu..%zu), %.1fs of %gs", p.taken, p.policy->min_samples,
                            p.policy->max_samples, p.elapsed_seconds, p.policy->max_seconds);
  if (p.kept->size() >= 3) {
    text += format(", noise %.2f%% (target %.2g%%)", median_relative_noise(*p.kept) * 100,
                   p.policy->noise * 100);
  }
  return text;
}

double sampling_fraction(const SamplingProgress& p) {
  if (p.warming_up) return 0;
  const double by_samples =
      p.policy->max_samples > 0 ? double(p.taken) / double(p.policy->max_samples) : 0;
  const double by_time = p.policy->max_seconds > 0 ? p.elapsed_seconds / p.policy->max_seconds : 0;
  return std::min(1.0, std::max(by_samples, by_time));
}

SamplingHooks case_progress_hooks(Progress* const* progress, std::function<bool()> stop_requested) {
  SamplingHooks hooks;
  // The noise is a sort of the samples: computed at most ten times a second, not per sample.
  auto last = std::make_shared<std::chrono::steady_clock::time_point>();
  hooks.on_sample = [progress, last](const SamplingProgress& p) {
    if (*progress == nullptr) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - *last < std::chrono::milliseconds(100)) return;
    *last = now;
    (*progress)->within_step(describe_sampling(p), sampling_fraction(p));
  };
  hooks.stop_requested = std::move(stop_requested);
  return hooks;
}

}  // namespace attn
