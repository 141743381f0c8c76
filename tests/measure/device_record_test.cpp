// The driver's version from NVML: a version string where NVML answers, else nothing and the
// reason (on this CPU-only build machine NVML is not installed); a CPU's record has no driver.
#include <gtest/gtest.h>

#include <regex>

#include "measure/device_records.hpp"
#include "measure/nvml_monitor.hpp"

namespace attn {
namespace {

TEST(NvmlDriverVersion, AVersionOrTheReasonWhyNot) {
  std::string why_not;
  const std::string version = nvml_driver_version(&why_not);
  if (version.empty()) {
    EXPECT_FALSE(why_not.empty()) << "no version and no reason";
  } else {
    EXPECT_TRUE(std::regex_match(version, std::regex(R"(\d+\.\d+(\.\d+)?)"))) << version;
    EXPECT_TRUE(why_not.empty()) << why_not;
  }
}

TEST(HostCpuRecord, HasNoDriver) {
  const DeviceRecord cpu = host_cpu_record();
  EXPECT_EQ(cpu.kind, "cpu");
  EXPECT_EQ(cpu.driver_version, "");
  EXPECT_EQ(cpu.cuda_driver_version, "");
  EXPECT_EQ(cpu.driver_text(), "-");
}

}  // namespace
}  // namespace attn
