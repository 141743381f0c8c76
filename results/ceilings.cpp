#include "results/ceilings.hpp"

#include <cmath>

namespace attn {

std::string describe_clock(const CeilingRecord& record) {
  if (!record.sm_clock_mhz) return "SM clock not recorded";
  return "at " + std::to_string(std::lround(*record.sm_clock_mhz)) + " MHz";
}

std::optional<double> DeviceCeilings::value(const std::string& metric) const {
  auto it = by_metric.find(metric);
  if (it == by_metric.end() || !(it->second.value > 0)) return std::nullopt;
  return it->second.value;
}

CeilingFraction fraction_of_ceiling(Bound bound, double gbps, double tflops,
                                    const DeviceCeilings& ceilings) {
  CeilingFraction f;
  if (bound == Bound::memory) {
    f.ceiling = "read_bw";
    if (auto read = ceilings.value(kReadGbps)) f.fraction = gbps / *read;
  } else {
    f.ceiling = "bf16_tensor";
    if (auto tensor = ceilings.value(kBf16Tflops)) f.fraction = tflops / *tensor;
  }
  return f;
}

}  // namespace attn
