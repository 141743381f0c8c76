// The statistics of the timing core on synthetic samples.
#include "base/sample_statistics.hpp"

#include <gtest/gtest.h>

#include <random>

namespace attn {
namespace {

std::vector<double> normal_samples(size_t n, double mean, double stddev, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> d(mean, stddev);
  std::vector<double> out;
  for (size_t i = 0; i < n; ++i) out.push_back(d(rng));
  return out;
}

TEST(SampleStatistics, MedianOfOddAndEvenCounts) {
  EXPECT_DOUBLE_EQ(median_of({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median_of({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(median_of({}), 0);
}

TEST(SampleStatistics, MedianNoiseShrinksWithMoreSamples) {
  const double few = median_relative_noise(normal_samples(20, 100, 2, 1));
  const double many = median_relative_noise(normal_samples(2000, 100, 2, 1));
  EXPECT_GT(few, many * 3);  // ~ 1/sqrt(n): 10x more samples, ~3.2x less noise
  // The standard error of a normal median is about 1.2533 * sigma / sqrt(n).
  EXPECT_NEAR(many, 1.2533 * 2 / std::sqrt(2000.0) / 100,
              0.3 * 1.2533 * 2 / std::sqrt(2000.0) / 100);
}

TEST(SampleStatistics, NoiseIsDeterministicAndZeroForConstants) {
  const auto s = normal_samples(50, 10, 1, 7);
  EXPECT_EQ(median_relative_noise(s), median_relative_noise(s));
  EXPECT_EQ(median_relative_noise({5, 5, 5, 5}), 0);
  EXPECT_EQ(median_relative_noise({5}), 0);
}

TEST(SampleStatistics, MeanNoiseIsTheStandardError) {
  // stddev of {1, 3} is sqrt(2); / sqrt(2) / mean 2 = 0.5
  EXPECT_DOUBLE_EQ(mean_relative_noise({1, 3}), 0.5);
}

TEST(SampleStatistics, MedianIsRobustToOutliersTheMadFindsThem) {
  auto s = normal_samples(200, 100, 1, 3);
  const double clean_median = median_of(s);
  for (int i = 0; i < 10; ++i) s.push_back(400);  // an interrupt or a clock dip
  s.push_back(1);                                 // a broken timer reading
  EXPECT_NEAR(median_of(s), clean_median, 0.2);
  const OutlierCount outliers = count_outliers(s);
  EXPECT_EQ(outliers.high, 10u);
  EXPECT_EQ(outliers.low, 1u);
  EXPECT_EQ(count_outliers(normal_samples(200, 100, 1, 4)).total(), 0u);
}

TEST(SampleStatistics, IntervalCoversTheMedianAndNarrowsWithN) {
  const auto few = normal_samples(30, 50, 1, 5);
  const auto many = normal_samples(3000, 50, 1, 5);
  const Interval a = median_interval(few), b = median_interval(many);
  EXPECT_LE(a.low, median_of(few));
  EXPECT_GE(a.high, median_of(few));
  EXPECT_LT(b.high - b.low, (a.high - a.low) / 3);
}

TEST(SampleStatistics, ComparisonCallsADifferenceOnlyWhenIntervalsSeparate) {
  const auto base = normal_samples(500, 100, 1, 11);
  const auto same = normal_samples(500, 100, 1, 12);
  const auto faster = normal_samples(500, 97, 1, 13);
  const auto slower = normal_samples(500, 103, 1, 14);
  EXPECT_EQ(compare_samples(base, same).verdict, Verdict::same);
  const Comparison f = compare_samples(base, faster);
  EXPECT_EQ(f.verdict, Verdict::faster);
  EXPECT_NEAR(f.relative_difference, -0.03, 0.005);
  EXPECT_EQ(compare_samples(base, slower).verdict, Verdict::slower);
  // A 3% shift hidden in 30% noise with few samples is not called.
  EXPECT_EQ(compare_samples(normal_samples(10, 100, 30, 1), normal_samples(10, 103, 30, 2)).verdict,
            Verdict::same);
  EXPECT_EQ(to_string(Verdict::faster), "FASTER");
}

}  // namespace
}  // namespace attn
