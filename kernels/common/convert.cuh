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

// 16-byte load through the read-only path: K/V pages are never written during attention.
__device__ __forceinline__ uint4 load_16B_readonly(const void* address) {
  return __ldg(static_cast<const uint4*>(address));
}

}  // namespace attn
