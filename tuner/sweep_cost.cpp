#include "tuner/sweep_cost.hpp"

#include <algorithm>

namespace attn {

namespace {

// The roofline of the model: an H100's order of magnitude, per SM.
constexpr double kReferenceSms = 132;
constexpr double kCudaBytesPerSecond = 3e12;
constexpr double kCudaFlopsPerSecond = 5e14;
constexpr double kCudaLaunchUs = 5;
// The CPU references accumulate in double, one thread per sequence and head.
constexpr double kCpuFlopsPerSecond = 1e9;
constexpr double kCpuLaunchUs = 20;

}  // namespace

double modelled_launch_us(const Work& work, const Target& target) {
  if (target.backend == Backend::cpu) return kCpuLaunchUs + work.flops / kCpuFlopsPerSecond * 1e6;
  const double scale = target.sm_count > 0 ? double(target.sm_count) / kReferenceSms : 1.0;
  const double seconds = std::max(work.bytes / (kCudaBytesPerSecond * scale),
                                  work.flops / (kCudaFlopsPerSecond * scale));
  return kCudaLaunchUs + seconds * 1e6;
}

double sampling_seconds(const MeasurePolicy& policy, double launch_us, Backend backend) {
  const double launch = std::max(launch_us, 0.0) * 1e-6;
  const double warmup = std::min(policy.warmup_max_seconds, double(policy.warmup_min) * launch);
  // A short CUDA launch is timed as a graph of many, each sample lasting graph_sample_us.
  const bool graph = backend == Backend::cuda && launch_us < policy.graph_below_us;
  const double sample = graph ? std::max(policy.graph_sample_us * 1e-6, launch) : launch;
  const double samples =
      std::min(double(policy.max_samples), 2.0 * double(std::max<size_t>(policy.min_samples, 1)));
  return warmup + std::min(policy.max_seconds, samples * sample);
}

double config_seconds(const std::string& strategy, size_t space_configs, const Budget& budget,
                      double launch_us, Backend backend, double compile_seconds) {
  const double n = double(std::max<size_t>(space_configs, 1));
  const double trials = double(planned_trials(strategy, space_configs, budget));
  const double confirm = sampling_seconds(confirm_policy(), launch_us, backend);
  double sampling = 0;
  if (strategy == "halving") {
    // Every config screened (as far as the budget goes), the rest of the trials confirms.
    const double screens = std::min(trials, n);
    sampling = screens / n * sampling_seconds(screen_policy(), launch_us, backend) +
               std::max(trials - screens, 0.0) / n * confirm;
  } else {
    sampling = std::min(trials, n) / n * confirm;
  }
  const double verify = std::min(trials, 2 * n) / n * 2 * std::max(launch_us, 0.0) * 1e-6;
  return compile_seconds + verify + sampling;
}

}  // namespace attn
