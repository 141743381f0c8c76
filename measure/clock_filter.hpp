// Which samples were taken at the expected SM clock. Each GPU sample carries the SM clock read
// beside it (clock_probe.hpp); the expected clock is the higher of the median of this
// measurement's readings and a reference seen earlier in the session (the clock the chip held on
// earlier cases). A sample whose clock is below threshold x expected was taken while the chip was
// throttled, idling down or still ramping up: it is discarded from the statistics (and kept,
// marked, in the raw samples).
#pragma once

#include <cstddef>
#include <vector>

namespace attn {

struct ClockFilterResult {
  double expected_mhz = 0;      // 0 when no sample had a reading
  std::vector<bool> discarded;  // one flag per sample
  size_t discarded_count = 0;
};

// `clocks_mhz` holds one reading per sample; 0 (or negative) means no reading, never discarded.
ClockFilterResult filter_by_clock(const std::vector<double>& clocks_mhz, double threshold,
                                  double reference_mhz = 0);

}  // namespace attn
