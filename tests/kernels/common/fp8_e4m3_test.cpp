// The fp8 conversion the GPU fill compiles equals the host's, for every float the fill can meet
// (all exponents, ties, subnormals, saturation, NaN, signed zeros).
#include "kernels/common/fp8_e4m3.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "base/dtype.hpp"

namespace attn {
namespace {

TEST(Fp8E4m3, DeviceConversionEqualsTheHostOne) {
  int64_t checked = 0;
  // Every float bit pattern with a stride that still visits every exponent and many mantissas,
  // plus the neighbourhood of every fp8 value and midpoint, where rounding decides.
  for (uint64_t bits = 0; bits <= 0xffffffffull; bits += 257) {
    const float f = bits_to_float(uint32_t(bits));
    ASSERT_EQ(float_to_e4m3_rn(f), float_to_fp8_e4m3(f)) << std::hexfloat << f;
    ++checked;
  }
  for (int code = 0; code < 256; ++code) {
    const float value = fp8_e4m3_to_float(uint8_t(code));
    if (std::isnan(value)) continue;
    const float next = fp8_e4m3_to_float(uint8_t(code + 1));
    const float candidates[] = {value, std::nextafter(value, 0.0f), std::nextafter(value, 1e9f),
                                std::isnan(next) ? value : (value + next) / 2};
    for (float c : candidates) {
      for (float f : {c, -c}) {
        const uint32_t b = float_to_bits(f);
        for (uint32_t delta : {0u, 1u}) {
          const float g = bits_to_float(b + delta);
          ASSERT_EQ(float_to_e4m3_rn(g), float_to_fp8_e4m3(g)) << std::hexfloat << g;
          ++checked;
        }
      }
    }
  }
  for (float f :
       {0.0f, -0.0f, 448.0f, 449.0f, 464.0f, 1e30f, -1e30f, std::numeric_limits<float>::infinity(),
        std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(),
        std::ldexp(1.0f, -10), std::ldexp(3.0f, -11), std::numeric_limits<float>::denorm_min()}) {
    EXPECT_EQ(float_to_e4m3_rn(f), float_to_fp8_e4m3(f)) << f;
  }
  EXPECT_GT(checked, 1000000);
}

}  // namespace
}  // namespace attn
