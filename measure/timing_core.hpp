// The timing core: measures one prepared launcher under a MeasurePolicy and fills a Measurement's
// samples, statistics, timing details, clocks and stability verdict. Used by attn-bench run
// (through the Evaluator), by attn-bench calibrate, and later by the tuner. docs/measurement.md
// describes it.
//
// On CUDA, per policy.timer:
//   events  warm-up, then samples of one launch between CUDA events after an L2 flush
//   graph   warm-up, then samples of one replay of a CUDA graph of N launches cycling through
//           copies of the inputs (rotation), divided by N
//   auto    warm-up with events; graph when the settled launch time is under graph_below_us
// Beside each GPU sample the SM clock is read (ClockProbe) and samples below the expected clock
// are discarded; NVML temperature and clock-event reasons are read before and after, if present.
#pragma once

#include <functional>
#include <vector>

#include "kernels/device/cuda_context.hpp"
#include "kernels/variant.hpp"
#include "measure/clock_probe.hpp"
#include "measure/l2_flush.hpp"
#include "measure/nvml_monitor.hpp"
#include "measure/sampler.hpp"
#include "measure/timing_policy.hpp"
#include "results/measurement.hpp"

namespace attn {

// What the core may use on a CUDA backend; owned by the caller.
struct CudaTimingTools {
  const CudaContext* context = nullptr;
  const Stream* stream = nullptr;
  L2Flusher* flusher = nullptr;       // null: never flush
  ClockProbe* probe = nullptr;        // null: no clock readings
  const NvmlMonitor* nvml = nullptr;  // null: no NVML readings
};

// Launchers bound to copies of the inputs, for the graph timer; called at most once, only when the
// graph timer is chosen, with the launch time measured in warm-up.
using RotationFactory = std::function<std::vector<Launcher*>(double launch_us)>;

// `hooks` hear every warm-up and timing sample and may stop sampling between two (sampler.hpp).
void time_on_cuda(Launcher& launcher, const RotationFactory& rotation, const MeasurePolicy& policy,
                  const CudaTimingTools& tools, Measurement& m, const SamplingHooks& hooks = {});
void time_on_cpu(Launcher& launcher, const MeasurePolicy& policy, Measurement& m,
                 const SamplingHooks& hooks = {});

// Fills m from a finished sampling (pure: the CPU tests call it with synthetic results).
void record_sampling(const SamplingResult& sampling, const WarmupResult& warmup,
                     const MeasurePolicy& policy, const std::string& timer, int launches,
                     Measurement& m);
// Sets m.unstable and m.unstable_reason from its timing details and clocks.
void assess_stability(const MeasurePolicy& policy, Measurement& m);

}  // namespace attn
