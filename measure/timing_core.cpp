#include "measure/timing_core.hpp"

#include <algorithm>
#include <cstdio>
#include <memory>

#include "base/sample_statistics.hpp"
#include "measure/cuda_graph_timer.hpp"
#include "measure/event_timer.hpp"

namespace attn {

namespace {
std::string percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f%%", fraction * 100);
  return text;
}
}  // namespace

void record_sampling(const SamplingResult& sampling, const WarmupResult& warmup,
                     const MeasurePolicy& policy, const std::string& timer, int launches,
                     Measurement& m) {
  m.samples_us = sampling.samples_us;
  m.sample_discarded = sampling.discarded;
  const bool any_clock = std::any_of(sampling.clocks_mhz.begin(), sampling.clocks_mhz.end(),
                                     [](double c) { return c > 0; });
  m.sample_clock_mhz = any_clock ? sampling.clocks_mhz : std::vector<double>{};
  m.stats = summarize(sampling.kept);
  m.timing.timer = timer;
  m.timing.launches_per_sample = launches;
  m.timing.stop_reason = to_string(sampling.stop_reason);
  m.timing.noise = sampling.noise;
  m.timing.noise_target = policy.noise;
  m.timing.warmup_samples = int64_t(warmup.samples_us.size());
  m.timing.discarded = int64_t(sampling.discarded_count);
  m.timing.outliers = int64_t(count_outliers(sampling.kept).total());
  m.clocks.expected_mhz = sampling.expected_clock_mhz;
  std::vector<double> kept_clocks;
  for (size_t i = 0; i < sampling.clocks_mhz.size(); ++i) {
    if (sampling.clocks_mhz[i] > 0 && !sampling.discarded[i])
      kept_clocks.push_back(sampling.clocks_mhz[i]);
  }
  if (!kept_clocks.empty()) {
    m.clocks.median_mhz = median_of(kept_clocks);
    m.clocks.min_mhz = *std::min_element(kept_clocks.begin(), kept_clocks.end());
    m.clocks.max_mhz = *std::max_element(kept_clocks.begin(), kept_clocks.end());
  }
  assess_stability(policy, m);
}

void assess_stability(const MeasurePolicy& policy, Measurement& m) {
  std::vector<std::string> reasons;
  if (m.timing.stop_reason != "noise" && m.timing.noise > policy.noise) {
    reasons.push_back("noise " + percent(m.timing.noise) + " > " + percent(policy.noise) + " (" +
                      m.timing.stop_reason + ")");
  }
  const size_t taken = m.samples_us.size();
  if (taken > 0 && double(m.timing.discarded) > policy.unstable_discard_fraction * double(taken)) {
    reasons.push_back(percent(double(m.timing.discarded) / double(taken)) + " of samples below " +
                      percent(policy.clock_threshold) + " of the " +
                      std::to_string(int(m.clocks.expected_mhz)) + " MHz expected clock");
  }
  if (m.clocks.clock_event_reasons &&
      (uint64_t(*m.clocks.clock_event_reasons) & kNvmlSlowdownReasons)) {
    reasons.push_back("NVML reports slowdown: " +
                      describe_clock_event_reasons(uint64_t(*m.clocks.clock_event_reasons)));
  }
  m.unstable = !reasons.empty();
  m.unstable_reason.clear();
  for (const auto& r : reasons) m.unstable_reason += (m.unstable_reason.empty() ? "" : "; ") + r;
}

void time_on_cpu(Launcher& launcher, const MeasurePolicy& policy, Measurement& m,
                 const SamplingHooks& hooks) {
  CpuTimer timer(launcher);
  const WarmupResult warmup = warm_up(timer, policy, hooks);
  const SamplingResult sampling = sample(timer, policy, {}, 0, hooks);
  record_sampling(sampling, warmup, policy, timer.name(), 1, m);
}

void time_on_cuda(Launcher& launcher, const RotationFactory& rotation, const MeasurePolicy& policy,
                  const CudaTimingTools& tools, Measurement& m, const SamplingHooks& hooks) {
  ATTN_ASSERT(tools.context && tools.stream, "time_on_cuda needs a context and a stream");
  std::optional<NvmlReading> nvml_start;
  if (tools.nvml) nvml_start = tools.nvml->read();

  auto events = std::make_unique<EventTimer>(launcher, *tools.context, *tools.stream,
                                             policy.flush_l2 ? tools.flusher : nullptr);
  std::unique_ptr<SampleTimer> timer;
  WarmupResult warmup;
  bool use_graph = policy.timer == TimerMode::graph;
  if (policy.timer != TimerMode::graph) {
    warmup = warm_up(*events, policy, hooks);
    use_graph = policy.timer == TimerMode::automatic && warmup.median_us() < policy.graph_below_us;
  }
  if (use_graph) {
    // One events launch tells the graph's size when warm-up was skipped (timer=graph).
    const double launch_us = warmup.samples_us.empty() ? events->sample_us() : warmup.median_us();
    const std::vector<Launcher*> launchers = rotation(launch_us);
    const int launches = GraphTimer::launches_for(launch_us, policy.graph_sample_us);
    timer = std::make_unique<GraphTimer>(launchers, launches, *tools.context, *tools.stream);
    warmup = warm_up(*timer, policy, hooks);
  } else {
    timer = std::move(events);
  }

  std::function<double()> read_clock;
  if (tools.probe && policy.probe_clocks) {
    read_clock = [&] { return tools.probe->read_mhz(*tools.stream); };
  }
  // The expected clock is this measurement's own median reading: a kernel that draws enough
  // power to run at a lower clock throughout is measured at that clock (NVML's reasons and the
  // recorded clocks show it), while dips below it are dropped.
  const SamplingResult sampling = sample(*timer, policy, read_clock, 0, hooks);

  if (tools.nvml) {
    const NvmlReading end = tools.nvml->read();
    m.clocks.temperature_start_c = nvml_start->temperature_c;
    m.clocks.temperature_end_c = end.temperature_c;
    m.clocks.nvml_sm_clock_mhz = end.sm_clock_mhz;
    if (end.clock_event_reasons) m.clocks.clock_event_reasons = int64_t(*end.clock_event_reasons);
  }
  record_sampling(sampling, warmup, policy, timer->name(), timer->launches_per_sample(), m);
}

}  // namespace attn
