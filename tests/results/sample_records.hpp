// A fixed device record shared by the results tests.
#pragma once

#include "results/records.hpp"

namespace attn::testing {

inline DeviceRecord sample_h100() {
  DeviceRecord d;
  d.kind = "gpu";
  d.name = "NVIDIA H100 80GB HBM3";
  d.uuid = "GPU-5f1c2a3b-0000-1111-2222-333344445555";
  d.cc_major = 9;
  d.cc_minor = 0;
  d.sm_count = 132;
  d.memory_bytes = 85520809984;
  d.l2_bytes = 52428800;
  d.sm_clock_khz = 1980000;
  d.memory_clock_khz = 2619000;
  d.memory_bus_bits = 5120;
  d.cuda_driver_version = "13.0";
  d.cuda_version = "13.0";
  d.nvrtc_version = "13.0";
  return d;
}

}  // namespace attn::testing
