#include "base/dtype.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace attn {
namespace {

TEST(DType, NamesRoundTrip) {
  for (DType d : {DType::bf16, DType::fp16, DType::fp32}) {
    EXPECT_EQ(dtype_from_string(to_string(d)), d);
  }
  EXPECT_FALSE(dtype_from_string("bfloat16").has_value());
  EXPECT_EQ(size_of(DType::bf16), 2u);
  EXPECT_EQ(size_of(DType::fp32), 4u);
}

TEST(DType, Bf16RoundsToNearestEven) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
  // 1 + 2^-8 is exactly half way between 1 and 1 + 2^-7: ties go to the even mantissa (1.0).
  EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  // 1 + 3 * 2^-8 is half way between 1 + 2^-7 (odd) and 1 + 2^-6 (even).
  EXPECT_EQ(float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(bf16_to_float(float_to_bf16(-2.5f)), -2.5f);
}

TEST(DType, Fp16ConversionsMatchIeee) {
  EXPECT_EQ(float_to_fp16(1.0f), 0x3c00);
  EXPECT_EQ(float_to_fp16(-2.0f), 0xc000);
  EXPECT_EQ(float_to_fp16(65504.0f), 0x7bff);               // largest finite
  EXPECT_EQ(float_to_fp16(65520.0f), 0x7c00);               // rounds up to inf
  EXPECT_EQ(float_to_fp16(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_fp16(std::ldexp(1.0f, -26)), 0x0000);  // below half of it: zero
  EXPECT_EQ(float_to_fp16(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_TRUE(std::isnan(fp16_to_float(0x7e00)));
  EXPECT_TRUE(std::isinf(fp16_to_float(0x7c00)));
  // Every finite half converts to float and back unchanged.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00) continue;
    ASSERT_EQ(float_to_fp16(fp16_to_float(uint16_t(h))), h) << std::hex << h;
  }
}

TEST(DType, RoundToMatchesStorage) {
  EXPECT_EQ(round_to(DType::bf16, 1.0f + std::ldexp(1.0f, -9)), 1.0f);
  EXPECT_EQ(round_to(DType::fp32, 0.1f), 0.1f);
  EXPECT_EQ(round_to(DType::fp16, 0.1f), fp16_to_float(float_to_fp16(0.1f)));
}

}  // namespace
}  // namespace attn
