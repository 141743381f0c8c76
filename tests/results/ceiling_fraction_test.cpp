// A result against its ceiling: the read ceiling as calibrated, the bf16 ceiling scaled to the
// clock the result ran at when the calibration recorded its own (and as measured, said so, when it
// did not), and the datasheet peak beside it for the devices results/tensor_peak.hpp knows.
#include <gtest/gtest.h>

#include "results/ceilings.hpp"
#include "results/roofline.hpp"
#include "results/tensor_peak.hpp"
#include "tests/results/sample_records.hpp"

namespace attn {
namespace {

DeviceCeilings h200_ceilings(std::optional<double> gemm_clock_mhz) {
  DeviceCeilings c;
  c.by_metric[kReadGbps] = {kReadGbps, 4333.5, "stream_read", 20, 0.001, false, "t", "c", "", 1980};
  c.by_metric[kBf16Tflops] = {kBf16Tflops, 713.2, "gemm", 20, 0.001,
                              false,       "t",   "c",    "", gemm_clock_mhz};
  return c;
}

DeviceRecord h200() {
  DeviceRecord d = testing::sample_h100();
  d.name = "NVIDIA H200";
  return d;
}

TEST(CeilingFraction, TheBf16CeilingIsScaledToTheClockTheKernelRanAt) {
  // The GEMM ran power-limited at 1620 MHz; flash_fwd at head dim 256 holds 1980 MHz and reaches
  // 760 TFLOP/s: 107% of the GEMM as measured, 87.4% of it at 1980 MHz.
  const DeviceCeilings c = h200_ceilings(1620);
  const CeilingFraction f = fraction_of_ceiling(Bound::compute, {0, 0, 760, 1980}, c);
  EXPECT_TRUE(f.clock_scaled);
  EXPECT_EQ(f.calibrated_mhz, 1620.0);
  EXPECT_EQ(f.result_mhz, 1980);
  EXPECT_DOUBLE_EQ(*f.ceiling_value, 713.2 * 1980 / 1620);
  EXPECT_DOUBLE_EQ(*f.fraction, 760 / (713.2 * 1980 / 1620));
  EXPECT_LT(*f.fraction, 1.0);
  EXPECT_FALSE(f.above_ceiling());
  // A kernel that ran slower than the GEMM gets a lower ceiling, not the GEMM's.
  const CeilingFraction slow = fraction_of_ceiling(Bound::compute, {0, 0, 600, 1410}, c);
  EXPECT_DOUBLE_EQ(*slow.ceiling_value, 713.2 * 1410 / 1620);
  EXPECT_GT(*slow.fraction, 600 / 713.2);
}

TEST(CeilingFraction, WithoutEitherClockTheCeilingIsUsedAsMeasuredAndSaysSo) {
  // An old database: the GEMM's clock was not recorded.
  const CeilingFraction old =
      fraction_of_ceiling(Bound::compute, {0, 0, 760, 1980}, h200_ceilings(std::nullopt));
  EXPECT_FALSE(old.clock_scaled);
  EXPECT_FALSE(old.calibrated_mhz.has_value());
  EXPECT_DOUBLE_EQ(*old.fraction, 760 / 713.2);
  EXPECT_TRUE(old.above_ceiling());
  // The kernel's clock was not read.
  const CeilingFraction unread =
      fraction_of_ceiling(Bound::compute, {0, 0, 700, 0}, h200_ceilings(1620));
  EXPECT_FALSE(unread.clock_scaled);
  EXPECT_DOUBLE_EQ(*unread.fraction, 700 / 713.2);
}

TEST(CeilingFraction, TheReadCeilingIsNotScaledAndTheUniqueBytesStandBeside) {
  const DeviceCeilings c = h200_ceilings(1620);
  // A shared-prefix decode: 5200 GB/s counted per sequence, 3900 GB/s counted once.
  const CeilingFraction f = fraction_of_ceiling(Bound::memory, {5200, 3900, 10, 1755}, c);
  EXPECT_FALSE(f.clock_scaled);
  EXPECT_DOUBLE_EQ(*f.ceiling_value, 4333.5);
  EXPECT_DOUBLE_EQ(*f.fraction, 5200 / 4333.5);
  EXPECT_DOUBLE_EQ(*f.unique_fraction, 3900 / 4333.5);
  EXPECT_TRUE(f.above_ceiling());
  EXPECT_FALSE(f.peak_tflops.has_value());
}

TEST(TensorPeak, DatasheetRatesOfTheKnownDevices) {
  DeviceRecord h100 = testing::sample_h100();
  EXPECT_EQ(datasheet_bf16_flop_per_clock_per_sm(h100), 4096.0);
  // The H100 SXM datasheet: 989 TFLOP/s dense bf16 at 1830 MHz on 132 SMs.
  EXPECT_NEAR(*datasheet_bf16_tflops(h100, 1830), 989.4, 0.1);
  EXPECT_NEAR(*datasheet_bf16_tflops(h200(), 1980), 1070.53, 0.01);
  DeviceRecord a100 = h100;
  a100.name = "NVIDIA A100-SXM4-80GB";
  a100.cc_major = 8;
  a100.sm_count = 108;
  // The A100 datasheet: 312 TFLOP/s dense bf16 at 1410 MHz on 108 SMs.
  EXPECT_EQ(datasheet_bf16_flop_per_clock_per_sm(a100), 2048.0);
  EXPECT_NEAR(*datasheet_bf16_tflops(a100, 1410), 311.9, 0.1);
  // Unknown: another part of the same compute capability, another architecture, a CPU, no clock.
  DeviceRecord h20 = h100;
  h20.name = "NVIDIA H20";
  EXPECT_FALSE(datasheet_bf16_flop_per_clock_per_sm(h20).has_value());
  DeviceRecord l40 = h100;
  l40.name = "NVIDIA L40S";
  l40.cc_major = 8;
  l40.cc_minor = 9;
  EXPECT_FALSE(datasheet_bf16_tflops(l40, 2520).has_value());
  DeviceRecord cpu = h100;
  cpu.kind = "cpu";
  EXPECT_FALSE(datasheet_bf16_tflops(cpu, 1980).has_value());
  EXPECT_FALSE(datasheet_bf16_tflops(h100, 0).has_value());
}

TEST(CeilingFraction, TheDatasheetPeakAtTheKernelsClockStandsBeside) {
  const DeviceRecord device = h200();
  const CeilingFraction f =
      fraction_of_ceiling(Bound::compute, {0, 0, 760, 1980}, h200_ceilings(1620), &device);
  ASSERT_TRUE(f.peak_tflops.has_value());
  EXPECT_NEAR(*f.peak_tflops, 1070.53, 0.01);
  EXPECT_NEAR(*f.peak_fraction, 760 / 1070.53, 1e-4);
  EXPECT_FALSE(f.above_peak());
}

TEST(Roofline, AppliesTheScaledFractionAsMeasuredAndTheClockOfTheMeasurement) {
  Measurement m;
  m.disposition = Disposition::passed;
  m.stats.count = 20;
  m.stats.median = 1000;  // us
  m.flops = 7.6e11;       // in 1 ms: 760 TFLOP/s
  m.bytes = 1e9;
  m.unique_bytes = 5e8;
  m.clocks.expected_mhz = 1980;
  m.clocks.median_mhz = 1975;
  const AchievedRate rate = achieved_rate(m);
  EXPECT_EQ(rate.sm_clock_mhz, 1975);
  EXPECT_DOUBLE_EQ(rate.unique_gbps, 0.5 * rate.gbps);
  m.clocks.median_mhz = 0;  // no probe reading: the expected clock
  EXPECT_EQ(achieved_rate(m).sm_clock_mhz, 1980);
  apply_ceiling(Family::flash_fwd, h200_ceilings(1620), m);
  EXPECT_EQ(m.ceiling, "bf16_tensor");
  EXPECT_DOUBLE_EQ(*m.ceiling_fraction, 760 / (713.2 * 1980 / 1620));
  // Above the ceiling, the fraction is stored as measured.
  apply_ceiling(Family::flash_fwd, h200_ceilings(std::nullopt), m);
  EXPECT_DOUBLE_EQ(*m.ceiling_fraction, 760 / 713.2);
  EXPECT_GT(*m.ceiling_fraction, 1.0);
}

// Decode families are set against the read bandwidth (they read the cache once), the others
// against the bf16 tensor rate.
TEST(Roofline, DecodeFamiliesAreMemoryBoundAndTheOthersComputeBound) {
  EXPECT_EQ(bound_of(Family::paged_decode), Bound::memory);
  EXPECT_EQ(bound_of(Family::mla_decode), Bound::memory);
  EXPECT_EQ(bound_of(Family::prefix_prefill), Bound::compute);
  EXPECT_EQ(bound_of(Family::flash_fwd), Bound::compute);
  EXPECT_EQ(bound_of(Family::blocksparse), Bound::compute);
  EXPECT_EQ(family_from_string("mla_decode"), Family::mla_decode);
  EXPECT_EQ(to_string(Family::mla_decode), "mla_decode");
}

}  // namespace
}  // namespace attn
