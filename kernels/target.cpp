#include "kernels/target.hpp"

#include "base/thread_pool.hpp"
#include "kernels/device/device_info.hpp"

namespace attn {

std::string to_string(Backend backend) {
  return backend == Backend::cpu ? "cpu" : "cuda";
}

Target Target::cpu() {
  Target target;
  target.sm_count = int(hardware_threads());
  target.device_name = "host CPU";
  return target;
}

Target Target::cuda(const DeviceInfo& device) {
  Target target;
  target.backend = Backend::cuda;
  target.arch = device.arch();
  target.cc_major = device.cc_major;
  target.cc_minor = device.cc_minor;
  target.sm_count = device.sm_count;
  target.max_shared_per_block = device.max_shared_per_block_optin;
  target.l2_bytes = device.l2_bytes;
  target.device_name = device.name;
  return target;
}

}  // namespace attn
