#include "base/dtype.hpp"

#include <cmath>

namespace attn {

std::string to_string(DType dtype) {
  switch (dtype) {
    case DType::bf16:
      return "bf16";
    case DType::fp16:
      return "fp16";
    case DType::fp32:
      return "fp32";
    case DType::fp8_e4m3:
      return "fp8_e4m3";
  }
  return "?";
}

std::optional<DType> dtype_from_string(const std::string& text) {
  if (text == "bf16") return DType::bf16;
  if (text == "fp16") return DType::fp16;
  if (text == "fp32") return DType::fp32;
  if (text == "fp8_e4m3") return DType::fp8_e4m3;
  return std::nullopt;
}

size_t size_of(DType dtype) {
  switch (dtype) {
    case DType::fp32:
      return 4;
    case DType::fp8_e4m3:
      return 1;
    default:
      return 2;
  }
}

float fp8_e4m3_to_float(uint8_t b) {
  const bool negative = (b & 0x80u) != 0;
  const int exponent = (b >> 3) & 0xF;
  const int mantissa = b & 0x7;
  float magnitude;
  if (exponent == 0xF && mantissa == 0x7) {
    magnitude = std::nanf("");
  } else if (exponent == 0) {
    magnitude = std::ldexp(float(mantissa), -9);  // zero or subnormal
  } else {
    magnitude = std::ldexp(float(8 + mantissa), exponent - 10);
  }
  return negative ? -magnitude : magnitude;
}

uint8_t float_to_fp8_e4m3(float f) {
  if (std::isnan(f)) return 0x7F;
  const uint8_t sign = std::signbit(f) ? 0x80 : 0x00;
  const float a = std::fabs(f);
  if (a >= 448.0f) return sign | 0x7E;
  if (a < std::ldexp(1.0f, -6)) {  // subnormal step 2^-9; 8 steps reads as the smallest normal
    return sign | uint8_t(std::nearbyint(std::ldexp(a, 9)));
  }
  int e = 0;
  std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  int exponent = e - 1;
  int q = int(std::nearbyint(std::ldexp(a, 3 - exponent)));  // 8..16
  if (q == 16) {
    ++exponent;
    q = 8;
  }
  return sign | uint8_t(((exponent + 7) << 3) | (q - 8));
}

float fp16_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1f;
  uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return bits_to_float(sign | 0x7f800000u | (mantissa << 13));  // inf, NaN
  if (exponent == 0) {
    float magnitude = std::ldexp(float(mantissa), -24);  // zero or subnormal
    return sign ? -magnitude : magnitude;
  }
  return bits_to_float(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

uint16_t float_to_fp16(float f) {
  uint32_t bits = float_to_bits(f);
  uint16_t sign = uint16_t((bits >> 16) & 0x8000u);
  uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return uint16_t(sign | 0x7e00u);   // NaN
  if (magnitude >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds to inf
  if (magnitude < 0x38800000u) {
    // Result is subnormal (or zero): value / 2^-24, rounded to nearest even.
    float scaled = bits_to_float(magnitude) * 16777216.0f;  // exact: a power-of-two scale
    float rounded = std::nearbyint(scaled);                 // default mode: nearest even
    return uint16_t(sign | uint16_t(rounded));
  }
  // Normal: rebias the exponent (127 -> 15) and round the 13 dropped mantissa bits.
  uint32_t rebased = magnitude - (112u << 23);
  uint32_t rounding = 0xfffu + ((rebased >> 13) & 1u);
  return uint16_t(sign | uint16_t((rebased + rounding) >> 13));
}

}  // namespace attn
