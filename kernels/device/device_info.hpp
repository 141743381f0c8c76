// What the driver says about one GPU, read once when the device is opened.
#pragma once

#include <cstdint>
#include <string>

namespace attn {

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  std::string uuid;  // "GPU-xxxxxxxx-xxxx-..." as nvidia-smi prints it
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  int64_t total_memory = 0;
  int64_t l2_bytes = 0;
  int sm_clock_khz = 0;      // the driver's "typical" SM clock
  int memory_clock_khz = 0;  // peak memory clock
  int memory_bus_bits = 0;
  int max_shared_per_block_optin = 0;
  int max_threads_per_sm = 0;
  int driver_version = 0;  // cuDriverGetVersion: 13000 for CUDA 13.0

  // Target architecture for NVRTC: sm_90a on Hopper (wgmma/TMA allowed), else sm_<major><minor>.
  std::string arch() const;
  // Theoretical DRAM bandwidth from the memory clock and bus width (DDR): a lead, not a ceiling;
  // `attn-bench calibrate` measures the real one.
  double theoretical_bandwidth_gbps() const;
};

std::string format_cuda_version(int version);  // 13000 -> "13.0"

}  // namespace attn
