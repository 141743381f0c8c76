// The measurement core on a GPU: calibration gives plausible ceilings at a recorded SM clock (the
// GEMM under the datasheet peak at that clock), the clock probe reads a plausible SM clock, graph
// timing of a short decode kernel is below events timing by about the launch overhead and
// repeatable, and a decode case under `confirm` repeats within 1%.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "kernels/registry.hpp"
#include "measure/calibration.hpp"
#include "measure/clock_probe.hpp"
#include "measure/device_records.hpp"
#include "measure/evaluator.hpp"
#include "results/tensor_peak.hpp"
#include "tests/gpu_test_support.hpp"
#include "tests/test_support.hpp"
#include "workloads/presets.hpp"
#include "workloads/workload_spec.hpp"

namespace attn {
namespace {

Measurement measure_sm80_simt(const Batch& batch, MeasurePolicy policy) {
  auto& env = testing::gpu();
  Evaluator::Options options;
  options.policy = policy;
  auto evaluator = Evaluator::on_cuda(batch, env.discovery.api, env.device(), *env.jit, options);
  const Registry registry = make_registry();
  const Variant& sm80_simt = *registry.find("paged_decode.sm80_simt");
  return evaluator->evaluate(sm80_simt, sm80_simt.default_config(batch, evaluator->target()));
}

// 8 Llama-3-8B sequences of 1024 tokens: about 20 us on an H200. The same file is the timer check
// of scripts/bench/measurement.txt (attn-bench run ... --timer events, then --timer graph).
Batch small_decode() {
  return generate_batch(load_workload_file(std::string(ATTN_SOURCE_DIR) +
                                           "/tests/measure/data/decode-small-20us.json"));
}

TEST(MeasurementGpu, ClockProbeReadsAPlausibleSmClock) {
  ATTN_REQUIRE_GPU();
  auto& env = testing::gpu();
  Stream stream(*env.context);
  KernelLoader loader(*env.context, *env.jit);
  ClockProbe probe(*env.context, loader, env.device().arch());
  for (int i = 0; i < 5; ++i) {
    const double mhz = probe.read_mhz(stream);
    EXPECT_GT(mhz, 200);
    EXPECT_LT(mhz, 3500);
  }
}

TEST(MeasurementGpu, CalibrationGivesPositivePlausibleCeilings) {
  ATTN_REQUIRE_GPU();
  auto& env = testing::gpu();
  CalibrationOptions options;
  options.policy = screen_policy();
  options.stream_bytes = size_t(512) << 20;
  options.gemm_size = 4096;
  const auto entries = calibrate_device(
      *env.context, *env.jit, options,
      [](const std::string& line) { std::printf("calibrate: %s\n", line.c_str()); });
  ASSERT_EQ(entries.size(), 4u);
  const double theoretical = env.device().theoretical_bandwidth_gbps();
  for (const auto& e : entries) {
    std::printf("%-12s %10.1f  %s\n", e.ceiling.metric.c_str(), e.ceiling.value,
                e.error.empty() ? e.ceiling.method.c_str() : e.error.c_str());
    ASSERT_TRUE(e.error.empty()) << e.error;
    EXPECT_GT(e.ceiling.value, 0) << e.ceiling.metric;
    if (e.ceiling.metric != kBf16Tflops) {
      EXPECT_GT(e.ceiling.value, 0.3 * theoretical) << e.ceiling.metric;
      EXPECT_LT(e.ceiling.value, 1.05 * theoretical) << e.ceiling.metric;
    } else {
      EXPECT_GT(e.ceiling.value, 50);    // any tensor-core GEMM on sm_80+ beats this
      EXPECT_LT(e.ceiling.value, 2500);  // no bf16 dense rate this side of Blackwell
    }
    // Each ceiling records the SM clock it was measured at; the GEMM stays under the datasheet
    // peak at that clock where the device's peak is known.
    ASSERT_TRUE(e.ceiling.sm_clock_mhz.has_value()) << e.ceiling.metric;
    EXPECT_GT(*e.ceiling.sm_clock_mhz, 200) << e.ceiling.metric;
    EXPECT_LT(*e.ceiling.sm_clock_mhz, 3500) << e.ceiling.metric;
    std::printf("%-12s at %.0f MHz\n", e.ceiling.metric.c_str(), *e.ceiling.sm_clock_mhz);
    if (e.ceiling.metric == kBf16Tflops) {
      const DeviceRecord device = device_record(env.device(), env.jit->nvrtc_version());
      if (const auto peak = datasheet_bf16_tflops(device, *e.ceiling.sm_clock_mhz)) {
        std::printf("bf16 datasheet peak at that clock: %.1f TFLOP/s\n", *peak);
        EXPECT_LT(e.ceiling.value, 1.02 * *peak);
      }
    }
  }
}

TEST(MeasurementGpu, GraphTimingOfAShortKernelIsBelowEventsAndRepeatable) {
  ATTN_REQUIRE_GPU();
  const Batch batch = small_decode();
  MeasurePolicy events = confirm_policy(), graph = confirm_policy();
  events.timer = TimerMode::events;
  graph.timer = TimerMode::graph;
  const Measurement e = measure_sm80_simt(batch, events);
  const Measurement g1 = measure_sm80_simt(batch, graph);
  const Measurement g2 = measure_sm80_simt(batch, graph);
  ASSERT_EQ(e.disposition, Disposition::passed) << e.reason;
  ASSERT_EQ(g1.disposition, Disposition::passed) << g1.reason;
  ASSERT_EQ(g2.disposition, Disposition::passed) << g2.reason;
  EXPECT_EQ(e.timing.timer, "events");
  EXPECT_EQ(g1.timing.timer, "graph");
  EXPECT_GT(g1.timing.launches_per_sample, 1);
  const double overhead = e.stats.median - g1.stats.median;
  const double repeat = std::fabs(g2.stats.median - g1.stats.median) / g1.stats.median;
  std::printf(
      "events %.2f us (n %zu, noise %.2f%%), graph %.2f / %.2f us (x%d, noise %.2f%%): "
      "launch overhead %.2f us, graph repeat %.2f%%\n",
      e.stats.median, e.stats.count, e.timing.noise * 100, g1.stats.median, g2.stats.median,
      g1.timing.launches_per_sample, g1.timing.noise * 100, overhead, repeat * 100);
  EXPECT_GT(overhead, 0) << "a graph removes launch gaps: it cannot be slower";
  EXPECT_LT(overhead, 15) << "more than a launch overhead apart";
  EXPECT_LT(repeat, 0.02);
}

TEST(MeasurementGpu, DecodeCaseUnderConfirmRepeatsWithinOnePercent) {
  ATTN_REQUIRE_GPU();
  const Batch batch = generate_batch(load_preset("decode-llama3-8b-64x4096"));
  const Measurement a = measure_sm80_simt(batch, confirm_policy());
  const Measurement b = measure_sm80_simt(batch, confirm_policy());
  ASSERT_EQ(a.disposition, Disposition::passed) << a.reason;
  ASSERT_EQ(b.disposition, Disposition::passed) << b.reason;
  const double diff = std::fabs(b.stats.median - a.stats.median) / a.stats.median;
  std::printf("confirm: %.2f us and %.2f us (n %zu/%zu, noise %.2f%%/%.2f%%, %s/%s): %.3f%%\n",
              a.stats.median, b.stats.median, a.stats.count, b.stats.count, a.timing.noise * 100,
              b.timing.noise * 100, a.timing.stop_reason.c_str(), b.timing.stop_reason.c_str(),
              diff * 100);
  EXPECT_LT(diff, 0.01);
  EXPECT_FALSE(a.unstable) << a.unstable_reason;
}

}  // namespace
}  // namespace attn
