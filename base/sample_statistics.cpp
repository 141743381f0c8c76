#include "base/sample_statistics.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace attn {

namespace {
// SplitMix64: small, seedable, the same sequence on every platform.
struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
};

double median_in_place(std::vector<double>& values) {
  const size_t n = values.size();
  if (n == 0) return 0;
  auto middle = values.begin() + std::ptrdiff_t(n / 2);
  std::nth_element(values.begin(), middle, values.end());
  const double upper = *middle;
  if (n % 2 == 1) return upper;
  const double lower = *std::max_element(values.begin(), middle);
  return 0.5 * (lower + upper);
}
}  // namespace

double median_of(std::vector<double> samples) {
  return median_in_place(samples);
}

double median_relative_noise(const std::vector<double>& samples, int resamples, uint64_t seed) {
  const size_t n = samples.size();
  if (n < 2) return 0;
  const double median = median_of(samples);
  if (!(median > 0)) return 0;
  SplitMix64 rng{seed};
  std::vector<double> resample(n), medians;
  medians.reserve(size_t(resamples));
  for (int r = 0; r < resamples; ++r) {
    for (size_t i = 0; i < n; ++i) resample[i] = samples[rng.next() % n];
    medians.push_back(median_in_place(resample));
  }
  const double mean = std::accumulate(medians.begin(), medians.end(), 0.0) / double(resamples);
  double squares = 0;
  for (double m : medians) squares += (m - mean) * (m - mean);
  return std::sqrt(squares / double(resamples - 1)) / median;
}

double mean_relative_noise(const std::vector<double>& samples) {
  const size_t n = samples.size();
  if (n < 2) return 0;
  const double mean = std::accumulate(samples.begin(), samples.end(), 0.0) / double(n);
  if (!(mean > 0)) return 0;
  double squares = 0;
  for (double x : samples) squares += (x - mean) * (x - mean);
  return std::sqrt(squares / double(n - 1)) / std::sqrt(double(n)) / mean;
}

Interval median_interval(std::vector<double> samples, double z) {
  if (samples.empty()) return {};
  std::sort(samples.begin(), samples.end());
  const double n = double(samples.size());
  const double half = z * std::sqrt(n) / 2;
  const long last = long(samples.size()) - 1;
  const long low = std::clamp(long(std::floor(n / 2 - half)), 0L, last);
  const long high = std::clamp(long(std::ceil(n / 2 + half)) - 1, 0L, last);
  return {samples[size_t(low)], samples[size_t(std::max(low, high))]};
}

OutlierCount count_outliers(const std::vector<double>& samples, double k) {
  OutlierCount count;
  if (samples.size() < 3) return count;
  const double median = median_of(samples);
  std::vector<double> deviations;
  deviations.reserve(samples.size());
  for (double x : samples) deviations.push_back(std::fabs(x - median));
  const double spread = 1.4826 * median_in_place(deviations);
  if (!(spread > 0)) return count;
  for (double x : samples) {
    if (x < median - k * spread) ++count.low;
    if (x > median + k * spread) ++count.high;
  }
  return count;
}

std::string to_string(Verdict verdict) {
  switch (verdict) {
    case Verdict::same:
      return "SAME";
    case Verdict::faster:
      return "FASTER";
    case Verdict::slower:
      return "SLOWER";
  }
  return "?";
}

Comparison compare_samples(const std::vector<double>& a, const std::vector<double>& b) {
  Comparison c;
  c.a = median_interval(a);
  c.b = median_interval(b);
  const double median_a = median_of(a), median_b = median_of(b);
  c.relative_difference = median_a > 0 ? (median_b - median_a) / median_a : 0;
  if (!c.a.overlaps(c.b)) c.verdict = median_b < median_a ? Verdict::faster : Verdict::slower;
  return c;
}

RatioInterval median_ratio_interval(const std::vector<double>& a, const std::vector<double>& b,
                                    double confidence, int resamples, uint64_t seed) {
  RatioInterval out;
  const double median_a = median_of(a), median_b = median_of(b);
  if (a.empty() || b.empty() || !(median_a > 0) || !(median_b > 0)) return out;
  out.estimate = median_a / median_b;
  out.interval = {out.estimate, out.estimate};
  if (resamples < 2 || (a.size() < 2 && b.size() < 2)) return out;
  SplitMix64 rng{seed};
  std::vector<double> resample_a(a.size()), resample_b(b.size()), ratios;
  ratios.reserve(size_t(resamples));
  for (int r = 0; r < resamples; ++r) {
    for (double& x : resample_a) x = a[rng.next() % a.size()];
    for (double& x : resample_b) x = b[rng.next() % b.size()];
    const double denominator = median_in_place(resample_b);
    if (denominator > 0) ratios.push_back(median_in_place(resample_a) / denominator);
  }
  if (ratios.empty()) return out;
  std::sort(ratios.begin(), ratios.end());
  // Linear interpolation between order statistics, as summarize() does for p10 and p90.
  const auto quantile = [&](double p) {
    const double position = std::clamp(p, 0.0, 1.0) * double(ratios.size() - 1);
    const size_t below = size_t(std::floor(position));
    const size_t above = std::min(below + 1, ratios.size() - 1);
    return ratios[below] + (position - double(below)) * (ratios[above] - ratios[below]);
  };
  out.interval = {quantile((1 - confidence) / 2), quantile((1 + confidence) / 2)};
  return out;
}

}  // namespace attn
