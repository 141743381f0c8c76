// Sizes as the --max-host-memory flag reads them and messages print them.
#include "base/byte_size.hpp"

#include <gtest/gtest.h>

namespace attn {
namespace {

TEST(ByteSize, ParsesUnitsOfPowersOf1024) {
  EXPECT_EQ(parse_byte_size("1024"), 1024);
  EXPECT_EQ(parse_byte_size("512MiB"), int64_t(512) << 20);
  EXPECT_EQ(parse_byte_size("512 MiB"), int64_t(512) << 20);
  EXPECT_EQ(parse_byte_size("16GiB"), int64_t(16) << 30);
  EXPECT_EQ(parse_byte_size("16g"), int64_t(16) << 30);
  EXPECT_EQ(parse_byte_size("1.5GB"), int64_t(3) << 29);
  EXPECT_EQ(parse_byte_size("2T"), int64_t(2) << 40);
  EXPECT_EQ(parse_byte_size("4k"), 4096);
  for (const char* bad : {"", "lots", "-1", "1.5.5G", "12 PiB", "8Gb7", "1e3", "GiB"}) {
    EXPECT_EQ(parse_byte_size(bad), std::nullopt) << bad;
  }
  EXPECT_EQ(parse_byte_size("9999999T"), std::nullopt) << "over 2^62";
}

TEST(ByteSize, FormatsWithOneDecimal) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
  EXPECT_EQ(format_bytes(1024), "1.0 KiB");
  EXPECT_EQ(format_bytes((int64_t(17) << 29)), "8.5 GiB");
  EXPECT_EQ(format_bytes(int64_t(96) << 20), "96.0 MiB");
}

}  // namespace
}  // namespace attn
