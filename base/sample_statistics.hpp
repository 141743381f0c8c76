// Statistics of timing samples beyond the order statistics of results/measurement.hpp: the noise
// of the median, its confidence interval, outliers, and the comparison of two sample sets.
//
// The estimate of a kernel's time is the median of its samples (robust to the slow outliers that
// an interrupt or a clock dip produces). Its noise is the bootstrap standard error of the median
// divided by the median: resample the samples with replacement, take each resample's median, and
// take the standard deviation of those medians. The bootstrap is seeded, so the same samples give
// the same noise on every run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace attn {

// Relative standard error of the median by bootstrap; 0 for fewer than 2 samples.
double median_relative_noise(const std::vector<double>& samples, int resamples = 200,
                             uint64_t seed = 0x5eed);
// Relative standard error of the mean: stddev / sqrt(n) / mean.
double mean_relative_noise(const std::vector<double>& samples);

// A distribution-free confidence interval of the median from order statistics (ranks
// n/2 -+ z*sqrt(n)/2, the normal approximation of the binomial).
struct Interval {
  double low = 0, high = 0;
  bool overlaps(const Interval& other) const { return low <= other.high && other.low <= high; }
};
Interval median_interval(std::vector<double> samples, double z = 1.96);

// Outliers by the median absolute deviation: farther than k * 1.4826 * MAD from the median.
struct OutlierCount {
  size_t low = 0, high = 0;
  size_t total() const { return low + high; }
};
OutlierCount count_outliers(const std::vector<double>& samples, double k = 5.0);

// Two sample sets of the same case: `same` when their median intervals overlap, else `faster`
// (b's median is lower than a's) or `slower`. relative_difference = (median_b - median_a) /
// median_a.
enum class Verdict { same, faster, slower };
std::string to_string(Verdict verdict);
struct Comparison {
  Verdict verdict = Verdict::same;
  double relative_difference = 0;
  Interval a, b;
};
Comparison compare_samples(const std::vector<double>& a, const std::vector<double>& b);

double median_of(std::vector<double> samples);

// The ratio median(a) / median(b) and its percentile bootstrap interval. With a and b the times of
// two cases, it is the speed-up of b over a (above 1: b is faster). a and b are resampled
// independently with replacement, `resamples` times from a seeded generator (the same samples
// give the same interval on every run); the bounds are the (1 - confidence) / 2 and
// (1 + confidence) / 2 quantiles of the resampled ratios. Both sets need samples with a positive
// median, else the estimate and bounds are 0; with one sample on a side that side is not
// resampled.
struct RatioInterval {
  double estimate = 0;
  Interval interval;
};
RatioInterval median_ratio_interval(const std::vector<double>& a, const std::vector<double>& b,
                                    double confidence = 0.95, int resamples = 2000,
                                    uint64_t seed = 0x5eed);

}  // namespace attn
