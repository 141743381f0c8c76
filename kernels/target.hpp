// Target: where a variant runs, as far as supports() and default_config() need to know.
#pragma once

#include <cstdint>
#include <string>

namespace attn {

struct DeviceInfo;

enum class Backend { cpu, cuda };
std::string to_string(Backend backend);

struct Target {
  Backend backend = Backend::cpu;
  std::string arch = "cpu";  // NVRTC architecture ("sm_90a", "sm_80") or "cpu"
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;  // GPU multiprocessors; CPU threads for the cpu backend
  int max_shared_per_block = 0;
  int64_t l2_bytes = 0;  // the GPU's L2 cache; 0 for the cpu backend
  std::string device_name;

  static Target cpu();
  static Target cuda(const DeviceInfo& device);
  int compute_capability() const { return cc_major * 10 + cc_minor; }
};

}  // namespace attn
