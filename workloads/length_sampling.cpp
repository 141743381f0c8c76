#include "workloads/length_sampling.hpp"

#include <algorithm>
#include <cmath>

#include "workloads/counter_rng.hpp"

namespace attn {

namespace {

constexpr double kTwoPi = 6.283185307179586476925286766559;

int64_t clamp_round(double value, int64_t min, int64_t max) {
  // Compare in double first: a huge draw must not overflow the conversion.
  if (!(value >= double(min))) return min;  // also NaN
  if (value >= double(max)) return max;
  return std::clamp(int64_t(std::llround(value)), min, max);
}

// Box-Muller from two counter uniforms: a standard normal.
double standard_normal(uint64_t key, uint64_t first) {
  const double radius = std::sqrt(-2.0 * std::log(counter_unit_positive(key, first)));
  return radius * std::cos(kTwoPi * counter_unit(key, first + 1));
}

// Zipf over k = 1..n with P(k) proportional to k^-s: Hörmann and Derflinger's
// rejection-inversion ("Rejection-inversion to generate variates from monotone discrete
// distributions", 1996). O(1) per draw whatever n, no table; the acceptance rate is high (> 0.9
// for the exponents in use), so a few counters per draw suffice.
class ZipfSampler {
 public:
  ZipfSampler(double exponent, double n) : s_(exponent), n_(n) {
    h_integral_x1_ = h_integral(1.5) - 1.0;
    h_integral_n_ = h_integral(n_ + 0.5);
    threshold_ = 2.0 - h_integral_inverse(h_integral(2.5) - h(2.0));
  }

  // k in 1..n from the counters starting at `first` (up to kCountersPerDraw of them).
  int64_t sample(uint64_t key, uint64_t first) const {
    double k = 1.0;
    for (uint64_t attempt = 0; attempt < kCountersPerDraw; ++attempt) {
      const double u =
          h_integral_n_ + counter_unit(key, first + attempt) * (h_integral_x1_ - h_integral_n_);
      const double x = h_integral_inverse(u);
      k = std::clamp(std::floor(x + 0.5), 1.0, n_);
      if (k - x <= threshold_ || u >= h_integral(k + 0.5) - h(k)) break;
    }
    return int64_t(k);  // after 64 rejections (probability < 0.1^64) the last candidate
  }

 private:
  double h(double x) const { return std::exp(-s_ * std::log(x)); }
  // The integral of h, written through expm1 and log1p so that s near 1 loses no precision.
  double h_integral(double x) const {
    const double log_x = std::log(x);
    return expm1_over((1.0 - s_) * log_x) * log_x;
  }
  double h_integral_inverse(double x) const {
    const double t = std::max(-1.0, x * (1.0 - s_));
    return std::exp(log1p_over(t) * x);
  }
  static double expm1_over(double x) {  // expm1(x) / x, 1 at 0
    return std::fabs(x) > 1e-8 ? std::expm1(x) / x
                               : 1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x));
  }
  static double log1p_over(double x) {  // log1p(x) / x, 1 at 0
    return std::fabs(x) > 1e-8 ? std::log1p(x) / x : 1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x));
  }

  double s_, n_;
  double h_integral_x1_ = 0, h_integral_n_ = 0, threshold_ = 0;
};

}  // namespace

double counter_unit(uint64_t key, uint64_t index) {
  return double(counter_bits(key, index) >> 11) * 0x1.0p-53;
}

double counter_unit_positive(uint64_t key, uint64_t index) {
  return double((counter_bits(key, index) >> 11) + 1) * 0x1.0p-53;
}

uint64_t counter_below(uint64_t key, uint64_t index, uint64_t bound) {
  return uint64_t((static_cast<unsigned __int128>(counter_bits(key, index)) * bound) >> 64);
}

int64_t draw_length(const LengthSpec& length, uint64_t key, uint64_t draw) {
  const uint64_t first = draw * kCountersPerDraw;
  switch (length.distribution) {
    case LengthDistribution::fixed:
      return length.value;
    case LengthDistribution::uniform:
      return length.min + int64_t(counter_below(key, first, uint64_t(length.max - length.min) + 1));
    case LengthDistribution::normal:
      return clamp_round(length.mean + length.stddev * standard_normal(key, first), length.min,
                         length.max);
    case LengthDistribution::lognormal:
      return clamp_round(length.median * std::exp(length.sigma * standard_normal(key, first)),
                         length.min, length.max);
    case LengthDistribution::zipf: {
      // Built per draw: a handful of logs, cheaper than keeping a cache keyed by the spec.
      const ZipfSampler sampler(length.exponent, double(length.max - length.min) + 1.0);
      return length.min + sampler.sample(key, first) - 1;
    }
  }
  return length.value;
}

}  // namespace attn
