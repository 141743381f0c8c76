#include "results/measurement.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace attn {

namespace {
constexpr struct {
  Disposition value;
  const char* name;
} kDispositions[] = {
    {Disposition::passed, "passed"},
    {Disposition::incorrect, "incorrect"},
    {Disposition::unsupported, "unsupported"},
    {Disposition::compile_failed, "compile_failed"},
    {Disposition::launch_failed, "launch_failed"},
    {Disposition::crashed, "crashed"},
    {Disposition::timed_out, "timed_out"},
};

// Linear interpolation between order statistics (the "type 7" quantile).
double quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  double position = q * double(sorted.size() - 1);
  size_t below = size_t(std::floor(position));
  size_t above = std::min(sorted.size() - 1, below + 1);
  double fraction = position - double(below);
  return sorted[below] + (sorted[above] - sorted[below]) * fraction;
}
}  // namespace

std::string to_string(Disposition disposition) {
  for (const auto& d : kDispositions) {
    if (d.value == disposition) return d.name;
  }
  return "?";
}

std::optional<Disposition> disposition_from_string(const std::string& text) {
  for (const auto& d : kDispositions) {
    if (text == d.name) return d.value;
  }
  return std::nullopt;
}

Statistics summarize(std::vector<double> samples) {
  Statistics s;
  s.count = samples.size();
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  s.min = samples.front();
  s.max = samples.back();
  s.median = quantile(samples, 0.5);
  s.p10 = quantile(samples, 0.1);
  s.p90 = quantile(samples, 0.9);
  s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / double(samples.size());
  double squares = 0;
  for (double x : samples) squares += (x - s.mean) * (x - s.mean);
  s.stddev = samples.size() > 1 ? std::sqrt(squares / double(samples.size() - 1)) : 0;
  return s;
}

std::vector<double> Measurement::kept_samples() const {
  if (sample_discarded.empty()) return samples_us;
  std::vector<double> kept;
  for (size_t i = 0; i < samples_us.size(); ++i) {
    if (i >= sample_discarded.size() || !sample_discarded[i]) kept.push_back(samples_us[i]);
  }
  return kept;
}

}  // namespace attn
