// Element types of the tensors attn-bench generates and reads, with host-side conversions.
// Conversions round to nearest even, as the GPU's cvt.rn does, so host and device agree bit for
// bit.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

namespace attn {

// fp8_e4m3: OCP FP8 E4M3 ("e4m3fn": bias 7, max 448, no infinities, NaN 0x7F/0xFF); used for
// KV caches, read through dequantisation scales.
enum class DType { bf16, fp16, fp32, fp8_e4m3 };

std::string to_string(DType dtype);
std::optional<DType> dtype_from_string(const std::string& text);
size_t size_of(DType dtype);

inline float bits_to_float(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
inline uint32_t float_to_bits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return bits;
}

inline float bf16_to_float(uint16_t h) {
  return bits_to_float(uint32_t(h) << 16);
}

inline uint16_t float_to_bf16(float f) {
  uint32_t bits = float_to_bits(f);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return uint16_t((bits >> 16) | 0x40);  // quiet NaN
  uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return uint16_t((bits + rounding) >> 16);
}

float fp16_to_float(uint16_t h);
uint16_t float_to_fp16(float f);
float fp8_e4m3_to_float(uint8_t b);
// Round to nearest even, saturating to +-448 (PTX cvt.rn.satfinite.e4m3x2.f32); NaN stays NaN.
uint8_t float_to_fp8_e4m3(float f);

// Reads element i of a buffer holding `dtype` values as float.
inline float load_as_float(const void* data, size_t i, DType dtype) {
  switch (dtype) {
    case DType::bf16:
      return bf16_to_float(static_cast<const uint16_t*>(data)[i]);
    case DType::fp16:
      return fp16_to_float(static_cast<const uint16_t*>(data)[i]);
    case DType::fp32:
      return static_cast<const float*>(data)[i];
    case DType::fp8_e4m3:
      return fp8_e4m3_to_float(static_cast<const uint8_t*>(data)[i]);
  }
  return 0.0f;
}

// Writes a float as element i of a `dtype` buffer, rounding to nearest even.
inline void store_from_float(void* data, size_t i, DType dtype, float value) {
  switch (dtype) {
    case DType::bf16:
      static_cast<uint16_t*>(data)[i] = float_to_bf16(value);
      break;
    case DType::fp16:
      static_cast<uint16_t*>(data)[i] = float_to_fp16(value);
      break;
    case DType::fp32:
      static_cast<float*>(data)[i] = value;
      break;
    case DType::fp8_e4m3:
      static_cast<uint8_t*>(data)[i] = float_to_fp8_e4m3(value);
      break;
  }
}

// The value `value` takes once stored as `dtype`.
inline float round_to(DType dtype, float value) {
  uint32_t storage = 0;
  store_from_float(&storage, 0, dtype, value);
  return load_as_float(&storage, 0, dtype);
}

}  // namespace attn
