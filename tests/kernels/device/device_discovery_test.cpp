#include <gtest/gtest.h>

#include "kernels/device/cuda_context.hpp"

namespace attn {
namespace {

// On any machine: either devices with sane properties, or none and a reason that says why.
TEST(DeviceDiscovery, ReportsDevicesOrSaysWhyNone) {
  const DeviceDiscovery found = discover_devices();
  if (found.devices.empty()) {
    EXPECT_FALSE(found.why_none.empty());
    EXPECT_EQ(found.api, nullptr);
    return;
  }
  EXPECT_NE(found.api, nullptr);
  for (const DeviceInfo& d : found.devices) {
    EXPECT_FALSE(d.name.empty());
    EXPECT_GT(d.sm_count, 0);
    EXPECT_GT(d.total_memory, 0);
    EXPECT_EQ(d.uuid.rfind("GPU-", 0), 0u);
  }
}

TEST(DeviceInfo, ArchAndVersions) {
  DeviceInfo d;
  d.cc_major = 9;
  EXPECT_EQ(d.arch(), "sm_90a");
  d.cc_major = 8;
  d.cc_minor = 6;
  EXPECT_EQ(d.arch(), "sm_86");
  EXPECT_EQ(format_cuda_version(13000), "13.0");
  EXPECT_EQ(format_cuda_version(12080), "12.8");
  d.memory_clock_khz = 2619000;
  d.memory_bus_bits = 5120;
  EXPECT_NEAR(d.theoretical_bandwidth_gbps(), 3352.3, 0.1);
}

}  // namespace
}  // namespace attn
