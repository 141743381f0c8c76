#include "measure/clock_filter.hpp"

#include <gtest/gtest.h>

#include "measure/timing_core.hpp"

namespace attn {
namespace {

TEST(ClockFilter, DiscardsReadingsBelowTheThresholdOfTheMedian) {
  const std::vector<double> clocks = {1980, 1975, 1500, 1980, 0, 1700, 1985};
  const ClockFilterResult r = filter_by_clock(clocks, 0.9);
  EXPECT_DOUBLE_EQ(r.expected_mhz, 1977.5);  // median of the readings (0 is no reading)
  EXPECT_EQ(r.discarded_count, 2u);          // 1500 and 1700 < 0.9 x 1977.5
  EXPECT_TRUE(r.discarded[2]);
  EXPECT_TRUE(r.discarded[5]);
  EXPECT_FALSE(r.discarded[4]);  // no reading: kept
}

TEST(ClockFilter, AReferenceRaisesTheExpectedClock) {
  const ClockFilterResult r = filter_by_clock({1500, 1510, 1490}, 0.9, 1980);
  EXPECT_DOUBLE_EQ(r.expected_mhz, 1980);
  EXPECT_EQ(r.discarded_count, 3u);
}

TEST(ClockFilter, NoReadingsDiscardNothing) {
  const ClockFilterResult r = filter_by_clock({0, 0, 0}, 0.9);
  EXPECT_EQ(r.expected_mhz, 0);
  EXPECT_EQ(r.discarded_count, 0u);
}

TEST(Stability, MissedNoiseTargetAndThrottlingFlagUnstable) {
  MeasurePolicy p = confirm_policy();
  Measurement m;
  m.samples_us.assign(100, 10.0);
  m.timing.stop_reason = "noise";
  m.timing.noise = 0.004;
  assess_stability(p, m);
  EXPECT_FALSE(m.unstable) << m.unstable_reason;

  m.timing.stop_reason = "max_time";
  m.timing.noise = 0.012;
  assess_stability(p, m);
  EXPECT_TRUE(m.unstable);
  EXPECT_NE(m.unstable_reason.find("max_time"), std::string::npos) << m.unstable_reason;

  m.timing.stop_reason = "noise";
  m.timing.noise = 0.001;
  m.timing.discarded = 30;  // 30% of the samples were taken throttled
  m.clocks.expected_mhz = 1980;
  assess_stability(p, m);
  EXPECT_TRUE(m.unstable);
  EXPECT_NE(m.unstable_reason.find("1980 MHz"), std::string::npos) << m.unstable_reason;

  m.timing.discarded = 0;
  m.clocks.clock_event_reasons = 0x40;  // hardware thermal slowdown
  assess_stability(p, m);
  EXPECT_TRUE(m.unstable);
  EXPECT_NE(m.unstable_reason.find("hw_thermal"), std::string::npos) << m.unstable_reason;
}

TEST(Stability, RecordSamplingFillsStatisticsFromKeptSamplesOnly) {
  SamplingResult s;
  s.samples_us = {10, 10, 50, 10};
  s.clocks_mhz = {1980, 1980, 1000, 1980};
  s.discarded = {false, false, true, false};
  s.kept = {10, 10, 10};
  s.discarded_count = 1;
  s.expected_clock_mhz = 1980;
  s.stop_reason = StopReason::noise;
  WarmupResult w;
  w.samples_us = {20, 11};
  Measurement m;
  record_sampling(s, w, confirm_policy(), "events", 1, m);
  EXPECT_EQ(m.samples_us.size(), 4u);  // raw, discarded included
  EXPECT_EQ(m.stats.count, 3u);
  EXPECT_DOUBLE_EQ(m.stats.max, 10);
  EXPECT_EQ(m.kept_samples(), std::vector<double>({10, 10, 10}));
  EXPECT_EQ(m.timing.warmup_samples, 2);
  EXPECT_EQ(m.timing.discarded, 1);
  EXPECT_DOUBLE_EQ(m.clocks.median_mhz, 1980);
  EXPECT_EQ(m.timing.stop_reason, "noise");
}

}  // namespace
}  // namespace attn
