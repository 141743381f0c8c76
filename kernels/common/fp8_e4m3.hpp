// float -> fp8 e4m3 ("e4m3fn": bias 7, max 448, NaN 0x7F) with round to nearest even and
// saturation to +-448, in integer arithmetic so host (g++) and device (NVRTC) compile the same
// code. sm_80 has no fp8 conversion instruction (cvt.rn.satfinite.e4m3x2 is sm_89+), and a GPU
// fill must write the very codes the host writes (base/dtype.hpp, float_to_fp8_e4m3; a CPU test
// compares the two over every float class). No standard headers: NVRTC compiles this.
#pragma once

#include "base/host_device.hpp"

namespace attn {

ATTN_HOST_DEVICE inline unsigned int float_bits_for_fp8(float f) {
#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
  return __float_as_uint(f);
#else
  unsigned int bits;
  __builtin_memcpy(&bits, &f, 4);
  return bits;
#endif
}

// Rounds m * 2^-shift to the nearest integer, ties to even (shift >= 1).
ATTN_HOST_DEVICE inline unsigned int round_shift_even(unsigned int m, int shift) {
  if (shift >= 32) return 0;  // m < 2^24: far below one half
  const unsigned int q = m >> shift;
  const unsigned int rest = m & ((1u << shift) - 1u);
  const unsigned int half = 1u << (shift - 1);
  return q + ((rest > half || (rest == half && (q & 1u))) ? 1u : 0u);
}

ATTN_HOST_DEVICE inline unsigned char float_to_e4m3_rn(float f) {
  const unsigned int bits = float_bits_for_fp8(f);
  const unsigned int sign = (bits >> 24) & 0x80u;
  const unsigned int magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return 0x7F;                            // NaN, whatever its sign
  if (magnitude >= 0x43e00000u) return (unsigned char)(sign | 0x7Eu);  // >= 448 (and inf)
  const int exponent = int(magnitude >> 23);                           // biased; 0 for subnormals
  const unsigned int mantissa =
      exponent == 0 ? (magnitude & 0x7fffffu) : ((magnitude & 0x7fffffu) | 0x800000u);
  const int unbiased = exponent == 0 ? -126 : exponent - 127;
  if (unbiased < -6) {
    // fp8 subnormal: a multiple of 2^-9. value = mantissa * 2^(unbiased - 23), so the count of
    // 2^-9 steps is mantissa * 2^(unbiased - 14); 8 steps encodes the smallest normal, 0x08.
    return (unsigned char)(sign | round_shift_even(mantissa, 14 - unbiased));
  }
  // Normal: keep 3 of the 23 mantissa bits; a carry out of them bumps the exponent.
  unsigned int q = round_shift_even(mantissa, 20);  // 8..16
  int e = unbiased + 7;
  if (q == 16u) {
    q = 8u;
    ++e;
  }
  return (unsigned char)(sign | (unsigned int)(e << 3) | (q - 8u));
}

}  // namespace attn
