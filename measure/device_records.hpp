// Translates what the device layer knows into the store's plain records (results/ knows no CUDA).
#pragma once

#include <string>

#include "kernels/device/device_info.hpp"
#include "results/records.hpp"

namespace attn {

// The GPU's record, with the driver's version from NVML (empty where NVML is missing) and the
// CUDA version the driver supports from the driver API.
DeviceRecord device_record(const DeviceInfo& device, const std::string& nvrtc_version);
// The CPU this process runs on (model name from /proc/cpuinfo, host name, threads, memory).
DeviceRecord host_cpu_record();
std::string host_name();

}  // namespace attn
