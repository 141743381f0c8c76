// On a GPU: the device record carries the NVIDIA driver's version from NVML ("580.159.04") beside
// the CUDA version the driver supports ("13.0"), and its fingerprint is that of no other driver.
#include <gtest/gtest.h>

#include <cstdio>
#include <regex>

#include "measure/device_records.hpp"
#include "measure/nvml_monitor.hpp"
#include "tests/gpu_test_support.hpp"

namespace attn {
namespace {

TEST(DeviceRecordGpu, CarriesTheDriverAndTheCudaVersionItSupports) {
  ATTN_REQUIRE_GPU();
  auto& env = testing::gpu();
  const DeviceRecord r = device_record(env.device(), env.jit->nvrtc_version());
  std::string why_not;
  if (nvml_driver_version(&why_not).empty()) GTEST_SKIP() << "NVML: " << why_not;
  EXPECT_TRUE(std::regex_match(r.driver_version, std::regex(R"(\d+\.\d+(\.\d+)?)")))
      << r.driver_version;
  EXPECT_TRUE(std::regex_match(r.cuda_driver_version, std::regex(R"(\d+\.\d+)")))
      << r.cuda_driver_version;
  EXPECT_NE(r.driver_version, r.cuda_driver_version);
  DeviceRecord other = r;
  other.driver_version += "1";
  EXPECT_NE(other.fingerprint(), r.fingerprint());
  std::printf("driver %s\n", r.driver_text().c_str());
}

}  // namespace
}  // namespace attn
