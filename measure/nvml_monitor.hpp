// NvmlMonitor: temperature, SM clock and clock-event (throttle) reasons of one GPU through NVML,
// loaded with dlopen("libnvidia-ml.so.1") when the driver ships it. Optional: where NVML is absent
// open() returns null and the timing core relies on its own clock probe alone. Also the driver's
// version (nvml_driver_version), part of a device's identity.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace attn {

struct NvmlReading {
  std::optional<double> temperature_c;
  std::optional<double> sm_clock_mhz;
  std::optional<uint64_t> clock_event_reasons;  // NVML's bit mask (nvmlClocksEventReason*)
};

// Reasons that mean the chip slowed itself down for heat or by hardware. The software power cap
// is left out: heavy kernels run at it in steady state, and the clock probe sees its dips.
constexpr uint64_t kNvmlSlowdownReasons =
    0x8 /*hw slowdown*/ | 0x20 /*sw thermal*/ | 0x40 /*hw thermal*/ | 0x80 /*hw power brake*/;
// "sw_power_cap,hw_thermal" for the bits set in `reasons`.
std::string describe_clock_event_reasons(uint64_t reasons);

// The NVIDIA driver's version, "580.159.04" (nvmlSystemGetDriverVersion); empty, with the reason
// in *why_not, where NVML is missing or fails. The CUDA driver API reports only the CUDA version
// the driver supports ("13.0"), which stays the same across many driver releases.
std::string nvml_driver_version(std::string* why_not);

class NvmlMonitor {
 public:
  // Null, with the reason in *why_not, when NVML is missing or does not know the GPU.
  static std::unique_ptr<NvmlMonitor> open(const std::string& gpu_uuid, std::string* why_not);
  ~NvmlMonitor();
  NvmlMonitor(const NvmlMonitor&) = delete;
  NvmlMonitor& operator=(const NvmlMonitor&) = delete;

  NvmlReading read() const;

 private:
  struct Api;
  NvmlMonitor() = default;
  std::unique_ptr<Api> api_;
  void* device_ = nullptr;
};

}  // namespace attn
