#include "measure/clock_filter.hpp"

#include <algorithm>

#include "base/sample_statistics.hpp"

namespace attn {

ClockFilterResult filter_by_clock(const std::vector<double>& clocks_mhz, double threshold,
                                  double reference_mhz) {
  ClockFilterResult result;
  result.discarded.assign(clocks_mhz.size(), false);
  std::vector<double> readings;
  for (double c : clocks_mhz) {
    if (c > 0) readings.push_back(c);
  }
  if (readings.empty()) return result;
  result.expected_mhz = std::max(median_of(readings), reference_mhz);
  const double floor = threshold * result.expected_mhz;
  for (size_t i = 0; i < clocks_mhz.size(); ++i) {
    if (clocks_mhz[i] > 0 && clocks_mhz[i] < floor) {
      result.discarded[i] = true;
      ++result.discarded_count;
    }
  }
  return result;
}

}  // namespace attn
