#include "results/ceilings.hpp"

#include <cmath>

#include "results/tensor_peak.hpp"

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

CeilingFraction fraction_of_ceiling(Bound bound, const AchievedRate& rate,
                                    const DeviceCeilings& ceilings, const DeviceRecord* device) {
  CeilingFraction f;
  if (bound == Bound::memory) {
    f.ceiling = "read_bw";
    f.ceiling_value = ceilings.value(kReadGbps);
    if (f.ceiling_value) {
      f.fraction = rate.gbps / *f.ceiling_value;
      if (rate.unique_gbps > 0) f.unique_fraction = rate.unique_gbps / *f.ceiling_value;
    }
    return f;
  }
  f.ceiling = "bf16_tensor";
  f.result_mhz = rate.sm_clock_mhz > 0 ? rate.sm_clock_mhz : 0;
  if (device && f.result_mhz > 0) {
    f.peak_tflops = datasheet_bf16_tflops(*device, f.result_mhz);
    if (f.peak_tflops) f.peak_fraction = rate.tflops / *f.peak_tflops;
  }
  const std::optional<double> calibrated = ceilings.value(kBf16Tflops);
  if (!calibrated) return f;
  const CeilingRecord& record = ceilings.by_metric.at(kBf16Tflops);
  if (record.sm_clock_mhz && *record.sm_clock_mhz > 0) f.calibrated_mhz = record.sm_clock_mhz;
  f.clock_scaled = f.calibrated_mhz && f.result_mhz > 0;
  f.ceiling_value = f.clock_scaled ? *calibrated * f.result_mhz / *f.calibrated_mhz : *calibrated;
  f.fraction = rate.tflops / *f.ceiling_value;
  return f;
}

}  // namespace attn
