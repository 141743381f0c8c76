// Conversions between 16-bit storage and float in registers, without the CUDA half headers (NVRTC
// re-parses every include on every compile; these few PTX lines keep compiles fast).
//
// Packed layouts: a uint32 holds two elements, element 0 in the low half (memory order on a
// little-endian load); a uint4 holds eight.
#pragma once

#include "kernels/common/dtype_code.hpp"

namespace attn {

template <int DTYPE>
__device__ __forceinline__ float2 unpack2(unsigned int packed) {
  float2 out;
  if constexpr (DTYPE == kDTypeBf16) {
    out.x = __uint_as_float(packed << 16);
    out.y = __uint_as_float(packed & 0xffff0000u);
  } else {
    asm("{\n\t.reg .f16 lo, hi;\n\tmov.b32 {lo, hi}, %2;\n\t"
        "cvt.f32.f16 %0, lo;\n\tcvt.f32.f16 %1, hi;\n\t}"
        : "=f"(out.x), "=f"(out.y)
        : "r"(packed));
  }
  return out;
}

// Rounds to nearest even, as the host's float_to_bf16/float_to_fp16 do.
template <int DTYPE>
__device__ __forceinline__ unsigned int pack2(float lo, float hi) {
  unsigned int packed;
  if constexpr (DTYPE == kDTypeBf16) {
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(packed) : "f"(hi), "f"(lo));
  } else {
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(packed) : "f"(hi), "f"(lo));
  }
  return packed;
}

// 1.0 in both halves of a packed pair (the ones the flash_fwd kernels multiply P by for its row
// sums): a constant, where pack2(1, 1) would be a conversion.
template <int DTYPE>
__device__ __forceinline__ constexpr unsigned int packed_ones() {
  return DTYPE == kDTypeBf16 ? 0x3F803F80u : 0x3C003C00u;
}

template <int DTYPE>
__device__ __forceinline__ void unpack8(const uint4& packed, float (&out)[8]) {
  float2 a = unpack2<DTYPE>(packed.x), b = unpack2<DTYPE>(packed.y);
  float2 c = unpack2<DTYPE>(packed.z), d = unpack2<DTYPE>(packed.w);
  out[0] = a.x, out[1] = a.y, out[2] = b.x, out[3] = b.y;
  out[4] = c.x, out[5] = c.y, out[6] = d.x, out[7] = d.y;
}

template <int DTYPE>
__device__ __forceinline__ uint4 pack8(const float (&in)[8]) {
  uint4 packed;
  packed.x = pack2<DTYPE>(in[0], in[1]);
  packed.y = pack2<DTYPE>(in[2], in[3]);
  packed.z = pack2<DTYPE>(in[4], in[5]);
  packed.w = pack2<DTYPE>(in[6], in[7]);
  return packed;
}

// Eight fp8 e4m3 codes (bytes of `packed`, element 0 lowest) as floats scaled by 2^-120: each
// code's sign, exponent and mantissa bits are moved into a bf16 whose exponent field is the code's
// (bias 127 instead of 7), which is exact for every finite code (subnormal codes become float
// subnormals). The caller multiplies the 2^120 back in through its scales. Full-rate integer
// instructions only, no conversion unit.
__device__ __forceinline__ void unpack8_e4m3_scaled(const uint2& packed, float (&out)[8]) {
  const unsigned int words[2] = {packed.x, packed.y};
#pragma unroll
  for (int w = 0; w < 2; ++w) {
    const unsigned int x = words[w];
    const unsigned int odd = (x & 0x80008000u) | ((x >> 4) & 0x07f007f0u);          // bytes 1, 3
    const unsigned int even = ((x << 8) & 0x80008000u) | ((x << 4) & 0x07f007f0u);  // bytes 0, 2
    out[4 * w + 0] = __uint_as_float(even << 16);
    out[4 * w + 1] = __uint_as_float(odd << 16);
    out[4 * w + 2] = __uint_as_float(even & 0xffff0000u);
    out[4 * w + 3] = __uint_as_float(odd & 0xffff0000u);
  }
}

// Four fp8 e4m3 codes (bytes of `word`, element 0 lowest) as two f16x2 registers, exactly: `lo`
// holds codes 0 and 1, `hi` codes 2 and 3 (element order kept in each half pair).
__device__ __forceinline__ void e4m3x4_to_f16(unsigned int word, unsigned int& lo,
                                              unsigned int& hi) {
#if __CUDA_ARCH__ >= 890
  asm("{\n.reg .b16 l, h;\nmov.b32 {l, h}, %2;\n"
      "cvt.rn.f16x2.e4m3x2 %0, l;\ncvt.rn.f16x2.e4m3x2 %1, h;\n}\n"
      : "=r"(lo), "=r"(hi)
      : "r"(word));
#else
  // No fp8 conversion unit: each code's sign, exponent and mantissa bits go into an f16 whose
  // exponent bias is 8 larger (exact, subnormals included), then a multiply by 2^8 restores it.
  const unsigned int scale = 0x5c005c00u;  // f16x2 {256, 256}
  const unsigned int spread[2] = {__byte_perm(word, 0, 0x1404), __byte_perm(word, 0, 0x3424)};
  unsigned int out[2];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const unsigned int bits = (spread[i] & 0x80008000u) | ((spread[i] >> 1) & 0x3f803f80u);
    asm("mul.rn.f16x2 %0, %1, %2;\n" : "=r"(out[i]) : "r"(bits), "r"(scale));
  }
  lo = out[0];
  hi = out[1];
#endif
}

// Eight fp8 e4m3 codes (bytes of `codes`, element 0 lowest) as eight fp16 values (a uint4,
// element order kept), exactly (e4m3x4_to_f16: one instruction per pair on sm_89 and newer, the
// fewest per code where a kernel's issue slots are what is short).
__device__ __forceinline__ uint4 e4m3x8_to_f16(const uint2& codes) {
  uint4 out;
  e4m3x4_to_f16(codes.x, out.x, out.y);
  e4m3x4_to_f16(codes.y, out.z, out.w);
  return out;
}

// Eight fp8 e4m3 codes as eight 16-bit values of DTYPE (a uint4, element order kept), exactly,
// with integer instructions and one 16-bit multiply-add per pair (sm_80 and newer), off the
// conversion unit (e4m3 -> f16 -> f32 -> bf16 would take it four times per pair, at a quarter of
// the integer rate). Each code's sign, exponent and mantissa bits move into a
// 16-bit value whose exponent bias is larger (bf16: 127 instead of 7, the value times 2^-120; fp16:
// 15, times 2^-8; subnormal codes becoming subnormals), and fma.rn by 2^120 or 2^8 (+ -0) scales it
// back.
template <int DTYPE>
__device__ __forceinline__ uint4 e4m3x8_to_16bit_rebiased(const uint2& codes) {
  constexpr bool kBf16 = DTYPE == kDTypeBf16;
  // A code's 7 exponent and mantissa bits land at bit 4 of its half (bf16: 8 exponent bits over
  // 7 of mantissa) or bit 7 (fp16: 5 over 10).
  constexpr int kShift = kBf16 ? 4 : 7;
  constexpr unsigned int kMask = kBf16 ? 0x07f007f0u : 0x3f803f80u;
  const unsigned int scale = kBf16 ? 0x7b807b80u : 0x5c005c00u;  // {2^120, 2^120}, {2^8, 2^8}
  const unsigned int minus_zero = 0x80008000u;
  const unsigned int words[2] = {codes.x, codes.y};
  unsigned int out[4];
#pragma unroll
  for (int w = 0; w < 2; ++w) {
    const unsigned int x = words[w];
    const unsigned int odd = (x & 0x80008000u) | ((x >> (8 - kShift)) & kMask);    // bytes 1, 3
    const unsigned int even = ((x << 8) & 0x80008000u) | ((x << kShift) & kMask);  // bytes 0, 2
    const unsigned int pairs[2] = {__byte_perm(even, odd, 0x5410), __byte_perm(even, odd, 0x7632)};
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      if constexpr (kBf16) {
        asm("fma.rn.bf16x2 %0, %1, %2, %3;\n"
            : "=r"(out[2 * w + i])
            : "r"(pairs[i]), "r"(scale), "r"(minus_zero));
      } else {
        asm("fma.rn.f16x2 %0, %1, %2, %3;\n"
            : "=r"(out[2 * w + i])
            : "r"(pairs[i]), "r"(scale), "r"(minus_zero));
      }
    }
  }
  return make_uint4(out[0], out[1], out[2], out[3]);
}

// Sixteen fp8 e4m3 codes (a uint4) as sixteen 16-bit values of DTYPE in two uint4 (lo: codes
// 0..7), exactly (e4m3x8_to_16bit_rebiased).
template <int DTYPE>
__device__ __forceinline__ void e4m3x16_to_16bit(const uint4& codes, uint4& lo, uint4& hi) {
  lo = e4m3x8_to_16bit_rebiased<DTYPE>(make_uint2(codes.x, codes.y));
  hi = e4m3x8_to_16bit_rebiased<DTYPE>(make_uint2(codes.z, codes.w));
}

// Products in fp16 over a bf16 row (an fp8 cache's codes become fp16 in one instruction per pair,
// e4m3x4_to_f16): the row is multiplied by to_f16 = 2^-e, which puts its largest magnitude `most`
// into [2^8, 2^9), so fp16 holds every value of the row down to 2^-22 of that magnitude exactly
// (smaller ones add less than the row's scores resolve), and back = 2^e multiplies the row's
// scores. e is at least -110 (so that 2^(8 - e) is a float); a zero row keeps e = 8.
__device__ __forceinline__ void f16_row_factors(float most, float& to_f16, float& back) {
  const int e = most > 0.0f ? max(int((__float_as_uint(most) >> 23) & 0xff) - 127, -110) : 8;
  to_f16 = __uint_as_float(unsigned(127 + 8 - e) << 23);
  back = __uint_as_float(unsigned(127 + e - 8) << 23);
}

// 16-byte load through the read-only path: K/V pages are never written during attention.
__device__ __forceinline__ uint4 load_16B_readonly(const void* address) {
  return __ldg(static_cast<const uint4*>(address));
}

}  // namespace attn
