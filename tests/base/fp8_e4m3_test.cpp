// fp8 e4m3 conversions: every code decodes and re-encodes to itself, ties round to even, large
// values saturate to +-448, NaN stays NaN.
#include <cmath>

#include <gtest/gtest.h>

#include "base/dtype.hpp"

namespace attn {
namespace {

TEST(Fp8E4m3, EveryCodeRoundTrips) {
  for (int code = 0; code < 256; ++code) {
    const float value = fp8_e4m3_to_float(uint8_t(code));
    if ((code & 0x7F) == 0x7F) {
      EXPECT_TRUE(std::isnan(value)) << code;
      EXPECT_EQ(float_to_fp8_e4m3(value) & 0x7F, 0x7F);
      continue;
    }
    EXPECT_EQ(float_to_fp8_e4m3(value), uint8_t(code)) << code << " = " << value;
  }
  EXPECT_EQ(fp8_e4m3_to_float(0x7E), 448.0f);
  EXPECT_EQ(fp8_e4m3_to_float(0x01), std::ldexp(1.0f, -9));
}

TEST(Fp8E4m3, TiesRoundToEvenAndLargeValuesSaturate) {
  // Between neighbouring codes c and c + 1 the midpoint goes to the even code.
  for (int code = 0; code < 0x7D; ++code) {
    const float low = fp8_e4m3_to_float(uint8_t(code));
    const float high = fp8_e4m3_to_float(uint8_t(code + 1));
    const uint8_t even = uint8_t(code % 2 == 0 ? code : code + 1);
    EXPECT_EQ(float_to_fp8_e4m3(0.5f * (low + high)), even) << code;
    EXPECT_EQ(float_to_fp8_e4m3(-0.5f * (low + high)), uint8_t(0x80 | even)) << code;
    EXPECT_EQ(float_to_fp8_e4m3(std::nextafter(0.5f * (low + high), 0.0f)), uint8_t(code));
  }
  EXPECT_EQ(float_to_fp8_e4m3(1e6f), 0x7E);
  EXPECT_EQ(float_to_fp8_e4m3(-1e6f), 0xFE);
  EXPECT_EQ(float_to_fp8_e4m3(INFINITY), 0x7E);
  EXPECT_EQ(float_to_fp8_e4m3(std::nanf("")), 0x7F);
  EXPECT_EQ(round_to(DType::fp8_e4m3, 3.3f), 3.25f);
}

}  // namespace
}  // namespace attn
