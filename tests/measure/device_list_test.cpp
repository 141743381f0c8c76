#include "measure/device_list.hpp"

#include <gtest/gtest.h>

#include "base/errors.hpp"

namespace attn {
namespace {

TEST(DeviceList, ParsesOrdinalsInTheOrderGiven) {
  EXPECT_EQ(parse_device_list("0", std::nullopt), std::vector<int>({0}));
  EXPECT_EQ(parse_device_list("1,0,3", std::nullopt), std::vector<int>({1, 0, 3}));
  EXPECT_EQ(parse_device_list("0,1", size_t(2)), std::vector<int>({0, 1}));
}

TEST(DeviceList, RejectsDuplicatesNegativesJunkAndAbsentGpus) {
  for (const char* bad : {"", "0,", ",1", "0,0", "-1", "0,-2", "a", "1.5", "0x1", "1234567"}) {
    EXPECT_THROW(parse_device_list(bad, std::nullopt), UsageError) << bad;
  }
  EXPECT_THROW(parse_device_list("0,2", size_t(2)), UsageError);
  try {
    parse_device_list("0,1,0", std::nullopt);
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("GPU 0 is listed twice"), std::string::npos) << e.what();
  }
  try {
    parse_device_list("1", size_t(1));
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("this machine has 1 GPU(s)"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace attn
