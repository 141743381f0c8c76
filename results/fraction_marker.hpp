// How a fraction of ceiling is printed: never above 100% without its reason. A fraction above its
// ceiling is printed with a marker ("112.4%*") and a note under the table says why: for the read
// ceiling, the kernel read less than the logical minimum from DRAM (shared prefix pages, data left
// in the L2); for the bf16 ceiling, the calibration GEMM runs below the tensor cores' peak, or its
// clock was not recorded so it could not be scaled to the kernel's. The stored fraction is the
// measured one; only its presentation carries the marker.
#pragma once

#include <string>

#include "results/ceilings.hpp"

namespace attn {

// The marker of a fraction above its ceiling or a rate above the datasheet peak.
inline constexpr const char* kAboveCeilingMarker = "*";

// "87.2%", or "112.4%*" above the ceiling; `missing` when there is no fraction.
std::string fraction_text(const CeilingFraction& f, const std::string& missing = "n/a");

// The datasheet peak beside it: "61.3% of 1070" (TFLOP/s at the result's clock), marked above
// 100%; `missing` when the device or the clock is not known.
std::string peak_text(const CeilingFraction& f, const std::string& missing = "-");

// Why the fraction is above its ceiling (or the rate above the datasheet peak), for a note: a
// headline ("above the DRAM ceiling: L2 reuse", "above the bf16 ceiling: ...", "above the
// datasheet peak: ...") and then the numbers; empty when it is neither.
std::string above_ceiling_reason(const CeilingFraction& f);

// A note under a table for a bf16 ceiling that could not be scaled to the kernel's clock because
// its own clock was not recorded; empty for every other ceiling.
std::string unscaled_ceiling_note(const CeilingRecord& bf16_ceiling);

}  // namespace attn
