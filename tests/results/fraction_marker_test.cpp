// Fractions of ceiling are printed with a marker and a reason when above 100%, never silently.
#include "results/fraction_marker.hpp"

#include <gtest/gtest.h>

#include "tests/results/sample_records.hpp"

namespace attn {
namespace {

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

DeviceCeilings ceilings_with(std::optional<double> gemm_clock_mhz) {
  DeviceCeilings c;
  c.by_metric[kReadGbps] = {kReadGbps, 4000, "stream_read", 20, 0.001, false, "t", "c", "", 1980};
  c.by_metric[kBf16Tflops] = {kBf16Tflops, 700, "gemm", 20, 0.001,
                              false,       "t", "c",    "", gemm_clock_mhz};
  return c;
}

TEST(FractionMarker, AtOrBelowTheCeilingThereIsNoMarkerAndNoReason) {
  const CeilingFraction f =
      fraction_of_ceiling(Bound::memory, {3000, 3000, 1, 0}, ceilings_with(1620));
  EXPECT_EQ(fraction_text(f), "75.0%");
  EXPECT_EQ(above_ceiling_reason(f), "");
  EXPECT_EQ(fraction_text(CeilingFraction{}), "n/a");
  EXPECT_EQ(fraction_text(CeilingFraction{}, "-"), "-");
}

TEST(FractionMarker, AboveTheReadCeilingSharedPagesExplainIt) {
  const CeilingFraction f =
      fraction_of_ceiling(Bound::memory, {4480, 3600, 1, 0}, ceilings_with(1620));
  EXPECT_EQ(fraction_text(f), "112.0%*");
  const std::string why = above_ceiling_reason(f);
  EXPECT_EQ(why.rfind("above the DRAM ceiling: L2 reuse. ", 0), 0u) << why;
  EXPECT_TRUE(has(why, "112.0% of the DRAM read ceiling")) << why;
  EXPECT_TRUE(has(why, "common prefix")) << why;
  EXPECT_TRUE(has(why, "90.0%")) << why;  // the unique minimum's fraction
  EXPECT_FALSE(has(why, "left in the L2")) << why;
}

TEST(FractionMarker, AboveTheReadCeilingWithoutSharingTheL2ExplainsIt) {
  const CeilingFraction f =
      fraction_of_ceiling(Bound::memory, {6000, 6000, 1, 0}, ceilings_with(1620));
  EXPECT_EQ(fraction_text(f), "150.0%*");
  const std::string why = above_ceiling_reason(f);
  EXPECT_EQ(why.rfind("above the DRAM ceiling: L2 reuse. ", 0), 0u) << why;
  EXPECT_TRUE(has(why, "from the L2")) << why;
  EXPECT_FALSE(has(why, "common prefix")) << why;
  // Recorded before the unique bytes were counted: the same reason.
  const CeilingFraction old =
      fraction_of_ceiling(Bound::memory, {6000, 0, 1, 0}, ceilings_with(1620));
  EXPECT_EQ(above_ceiling_reason(old), why);
}

TEST(FractionMarker, AboveTheScaledBf16CeilingTheGemmAndThePeakExplainIt) {
  const DeviceRecord h100 = testing::sample_h100();
  const CeilingFraction f =
      fraction_of_ceiling(Bound::compute, {0, 0, 900, 1980}, ceilings_with(1620), &h100);
  ASSERT_TRUE(f.above_ceiling());
  EXPECT_EQ(fraction_text(f), "105.2%*");
  const std::string why = above_ceiling_reason(f);
  EXPECT_EQ(why.rfind("above the bf16 ceiling: the calibration GEMM runs below", 0), 0u) << why;
  EXPECT_TRUE(has(why, "calibrated at 1620 MHz and scaled to this kernel's 1980 MHz")) << why;
  EXPECT_TRUE(has(why, "below the tensor cores' peak")) << why;
  EXPECT_TRUE(has(why, "datasheet dense bf16 peak at 1980 MHz is 1071 TFLOP/s")) << why;
  EXPECT_EQ(peak_text(f), "84.1% of 1071");
}

TEST(FractionMarker, AnUnscaledBf16CeilingSaysWhy) {
  const CeilingFraction f =
      fraction_of_ceiling(Bound::compute, {0, 0, 760, 1980}, ceilings_with(std::nullopt));
  EXPECT_EQ(fraction_text(f), "108.6%*");
  const std::string why = above_ceiling_reason(f);
  EXPECT_EQ(why.rfind("above the bf16 ceiling: not scaled to this kernel's clock. ", 0), 0u) << why;
  EXPECT_TRUE(has(why, "SM clock was not recorded")) << why;
  EXPECT_TRUE(has(why, "attn-bench calibrate")) << why;
  EXPECT_EQ(peak_text(f), "-");  // no device given
  EXPECT_TRUE(has(unscaled_ceiling_note(ceilings_with(std::nullopt).by_metric.at(kBf16Tflops)),
                  "not scaled"));
  EXPECT_EQ(unscaled_ceiling_note(ceilings_with(1620).by_metric.at(kBf16Tflops)), "");
  EXPECT_EQ(unscaled_ceiling_note(ceilings_with(std::nullopt).by_metric.at(kReadGbps)), "");
  // The kernel's own clock unknown.
  const CeilingFraction unread =
      fraction_of_ceiling(Bound::compute, {0, 0, 760, 0}, ceilings_with(1620));
  EXPECT_TRUE(has(above_ceiling_reason(unread), "clock was not read"))
      << above_ceiling_reason(unread);
}

TEST(FractionMarker, AboveTheDatasheetPeakIsMarkedAsWrong) {
  const DeviceRecord h100 = testing::sample_h100();
  // 1200 TFLOP/s at 1980 MHz: above the 1071 TFLOP/s a GH100 can do.
  const CeilingFraction f =
      fraction_of_ceiling(Bound::compute, {0, 0, 1200, 1980}, ceilings_with(1620), &h100);
  EXPECT_TRUE(f.above_peak());
  EXPECT_EQ(peak_text(f), "112.1% of 1071*");
  EXPECT_EQ(above_ceiling_reason(f).rfind("above the datasheet peak: ", 0), 0u)
      << above_ceiling_reason(f);
  EXPECT_TRUE(has(above_ceiling_reason(f), "is wrong")) << above_ceiling_reason(f);
}

}  // namespace
}  // namespace attn
