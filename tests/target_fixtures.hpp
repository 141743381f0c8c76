// Targets that describe a GPU without one, for CPU tests of traits, gating and NVRTC compiles:
// an H100/H200-like sm_90 part and an A100-like sm_80 part.
#pragma once

#include "kernels/device/device_info.hpp"
#include "kernels/target.hpp"

namespace attn::testing {

inline Target hopper_target() {
  DeviceInfo device;
  device.cc_major = 9;
  device.sm_count = 132;
  device.max_shared_per_block_optin = 227 * 1024;
  return Target::cuda(device);
}

inline Target ampere_target() {
  DeviceInfo device;
  device.cc_major = 8;
  device.sm_count = 108;
  device.max_shared_per_block_optin = 163 * 1024;
  return Target::cuda(device);
}

}  // namespace attn::testing
