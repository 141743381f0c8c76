#include "results/tensor_peak.hpp"

#include <string>

namespace attn {

namespace {

bool name_has(const DeviceRecord& device, const char* part) {
  return device.name.find(part) != std::string::npos;
}

}  // namespace

std::optional<double> datasheet_bf16_flop_per_clock_per_sm(const DeviceRecord& device) {
  if (device.kind != "gpu") return std::nullopt;
  if (device.cc_major == 8 && device.cc_minor == 0 &&
      (name_has(device, "A100") || name_has(device, "A800") || name_has(device, "A30"))) {
    return 2048.0;
  }
  if (device.cc_major == 9 && device.cc_minor == 0 &&
      (name_has(device, "H100") || name_has(device, "H200") || name_has(device, "H800"))) {
    return 4096.0;  // "GH200" holds "H200"
  }
  return std::nullopt;
}

std::optional<double> datasheet_bf16_tflops(const DeviceRecord& device, double sm_clock_mhz) {
  const std::optional<double> rate = datasheet_bf16_flop_per_clock_per_sm(device);
  if (!rate || device.sm_count <= 0 || !(sm_clock_mhz > 0)) return std::nullopt;
  return *rate * double(device.sm_count) * sm_clock_mhz * 1e6 / 1e12;
}

}  // namespace attn
