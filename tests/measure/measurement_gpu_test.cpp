// The measurement core on a GPU: calibration gives plausible ceilings at a recorded SM clock (the
// GEMM under the datasheet peak at that clock), the clock probe reads a plausible SM clock, graph
// timing of a short decode kernel is below events timing by about the launch overhead and
// repeatable, a decode case under `confirm` repeats within 1%, and a pure read of 256 MiB timed
// the way every kernel is (events after the L2 flush) reaches the calibrated read ceiling.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "kernels/calibrate/calibrate_params.hpp"

#include "kernels/registry.hpp"
#include "measure/calibration.hpp"
#include "measure/callback_launcher.hpp"
#include "measure/clock_probe.hpp"
#include "measure/device_records.hpp"
#include "measure/evaluator.hpp"
#include "measure/l2_flush.hpp"
#include "measure/stream_program.hpp"
#include "measure/timing_core.hpp"
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

// The flush must leave nothing of its own in the timed window: a kernel that only reads 256 MiB
// (stream_read, the calibration's own kernel), timed with events after the flush as every kernel
// is, reaches at least 90% of the read ceiling calibrated in the same process over 1 GiB, and is
// faster than the same read after a flush that leaves the L2 full of dirty lines (a memset alone),
// whose write-back lands inside the sample.
TEST(MeasurementGpu, AReadOf256MiBTimedAfterTheFlushReachesTheReadCeiling) {
  ATTN_REQUIRE_GPU();
  auto& env = testing::gpu();
  CalibrationOptions options;
  options.skip_gemm = true;
  const auto entries = calibrate_device(*env.context, *env.jit, options, [](const std::string&) {});
  double ceiling = 0;
  for (const auto& e : entries) {
    if (e.ceiling.metric == kReadGbps) ceiling = e.ceiling.value;
  }
  ASSERT_GT(ceiling, 0);

  const CudaContext& context = *env.context;
  Stream stream(context);
  KernelLoader loader(context, *env.jit);
  const size_t bytes = size_t(256) << 20;
  DeviceBuffer source(context, bytes), sink(context, 16);
  StreamParams p{};
  p.src = source.pointer();
  p.vectors = bytes / 16;
  p.sink = static_cast<unsigned int*>(sink.pointer());
  p.sentinel = 0x9e3779b9u;
  ATTN_CU_CHECK(context.api(), cuMemsetD32Async(source.address(), 0, bytes / 4, stream.handle()));
  const JitProgram program = stream_program(context.info().arch(), 256, 4);
  CUfunction read = loader.function(program, stream_kernel("stream_read", 256, 4));
  LaunchShape shape;
  shape.grid_x = unsigned(context.info().sm_count * 4);
  shape.block_x = 256;
  CallbackLauncher launcher([&] { launch(context, read, shape, stream, p); });

  L2Flusher flusher(context, loader, size_t(context.info().l2_bytes));
  const CudaTimingTools tools{&context, &stream, &flusher, nullptr, nullptr};
  MeasurePolicy policy = confirm_policy();
  policy.timer = TimerMode::events;
  policy.flush_l2 = true;
  Measurement m;
  time_on_cuda(
      launcher, [](double) -> std::vector<Launcher*> { return {}; }, policy, tools, m);
  const double clean_gbps = double(bytes) / (m.stats.median * 1e3);

  // The same read after a memset alone (the L2 left full of the memset's dirty lines).
  DeviceBuffer dirty(context, L2Flusher::buffer_bytes(size_t(context.info().l2_bytes)));
  Event start(context), stop(context);
  std::vector<double> samples;
  for (int i = 0; i < 30; ++i) {
    ATTN_CU_CHECK(context.api(), cuMemsetD32Async(dirty.address(), unsigned(i + 1),
                                                  dirty.bytes() / 4, stream.handle()));
    start.record(stream);
    launcher.launch();
    stop.record(stream);
    stop.synchronize();
    samples.push_back(double(stop.elapsed_ms_since(start)) * 1e3);
  }
  std::nth_element(samples.begin(), samples.begin() + samples.size() / 2, samples.end());
  const double dirty_us = samples[samples.size() / 2];
  std::printf(
      "read ceiling %.1f GB/s; 256 MiB read after the flush %.2f us = %.1f GB/s (%.1f%%); "
      "after a memset alone %.2f us (%.1f%%)\n",
      ceiling, m.stats.median, clean_gbps, 100 * clean_gbps / ceiling, dirty_us,
      100 * double(bytes) / (dirty_us * 1e3) / ceiling);
  // What is left of the ceiling is the launch and the ramp of one short kernel (about 3.6 us on
  // an H200: 94.3%, against 83.0% after a memset alone).
  EXPECT_GT(clean_gbps, 0.90 * ceiling);
  EXPECT_LT(m.stats.median, dirty_us) << "the dirty lines' write-back is not in the sample";
}

}  // namespace
}  // namespace attn
