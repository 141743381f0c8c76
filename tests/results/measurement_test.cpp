#include "results/measurement.hpp"

#include <gtest/gtest.h>

namespace attn {
namespace {

TEST(Statistics, KnownSampleUnsorted) {
  // Sorted: 1 2 3 4 5 6 7 8 9 10. Quantiles interpolate between order statistics (type 7):
  // position q * (n - 1).
  Statistics s = summarize({7, 3, 10, 1, 9, 2, 8, 4, 6, 5});
  EXPECT_EQ(s.count, 10u);
  EXPECT_DOUBLE_EQ(s.median, 5.5);
  EXPECT_DOUBLE_EQ(s.p10, 1.9);  // 0.9 of the way from 1 to 2
  EXPECT_DOUBLE_EQ(s.p90, 9.1);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 10);
  EXPECT_DOUBLE_EQ(s.mean, 5.5);
  EXPECT_NEAR(s.stddev, 3.0276503540974917, 1e-12);  // sample (n - 1) standard deviation
  EXPECT_NEAR(s.relative_noise(), 3.0276503540974917 / 5.5, 1e-12);
}

TEST(Statistics, OddCountMedianIsTheMiddleValue) {
  Statistics s = summarize({12.0, 10.0, 11.0, 100.0, 9.0});
  EXPECT_DOUBLE_EQ(s.median, 11.0);  // the outlier moves the mean, not the median
  EXPECT_DOUBLE_EQ(s.mean, 28.4);
  EXPECT_DOUBLE_EQ(s.p10, 9.4);
  EXPECT_DOUBLE_EQ(s.p90, 64.8);
}

TEST(Statistics, SingleSampleAndEmpty) {
  Statistics one = summarize({4.25});
  EXPECT_EQ(one.count, 1u);
  EXPECT_DOUBLE_EQ(one.median, 4.25);
  EXPECT_DOUBLE_EQ(one.p10, 4.25);
  EXPECT_DOUBLE_EQ(one.p90, 4.25);
  EXPECT_DOUBLE_EQ(one.stddev, 0);

  Statistics none = summarize({});
  EXPECT_EQ(none.count, 0u);
  EXPECT_DOUBLE_EQ(none.median, 0);
  EXPECT_DOUBLE_EQ(none.relative_noise(), 0);
}

TEST(Statistics, RatesComeFromTheMedian) {
  Measurement m;
  m.stats = summarize({10.0, 20.0, 30.0});  // median 20 us
  m.bytes = 2e6;                            // 2 MB in 20 us = 100 GB/s
  m.flops = 4e9;                            // 4 GFLOP in 20 us = 200 TFLOP/s
  EXPECT_DOUBLE_EQ(m.gbps(), 100.0);
  EXPECT_DOUBLE_EQ(m.tflops(), 200.0);
  Measurement untimed;
  untimed.bytes = 1e6;
  EXPECT_DOUBLE_EQ(untimed.gbps(), 0.0);
}

TEST(RecordsDisposition, NamesRoundTrip) {
  const Disposition all[] = {Disposition::passed,        Disposition::incorrect,
                             Disposition::unsupported,   Disposition::compile_failed,
                             Disposition::launch_failed, Disposition::crashed,
                             Disposition::timed_out};
  for (Disposition d : all) {
    auto back = disposition_from_string(to_string(d));
    ASSERT_TRUE(back.has_value()) << to_string(d);
    EXPECT_EQ(*back, d);
  }
  EXPECT_EQ(to_string(Disposition::compile_failed), "compile_failed");
  EXPECT_FALSE(disposition_from_string("Passed").has_value());
  EXPECT_FALSE(disposition_from_string("").has_value());
}

}  // namespace
}  // namespace attn
