// The dequantisation pass before a Hopper attention kernel over an fp8 (e4m3) cache: converts
// contiguous rows of codes (gathered K and V) to 16-bit values of DTYPE (the queries' type) once
// per launch, exactly (every finite e4m3 value is a bf16 and an fp16; the scales stay out: K's
// joins the logits' scale and V's the output's). The attention kernel then reads 16-bit tiles, as
// over a 16-bit cache: flash_fwd.sm90_wgmma and blocksparse.sm90_wgmma. Host side: those variants'
// prepare() and DequantThenAttend (kernels/dequant_then_attend.hpp); parameters:
// fp8_dequantize_params.hpp. (prefix_prefill.sm90_wgmma converts inside its kernel instead:
// kernels/prefix_prefill/sm90_fp8_copies.cuh.)
#pragma once

#include "kernels/common/convert.cuh"
#include "kernels/common/fp8_dequantize_params.hpp"

namespace attn {

namespace fp8_dequantize {

// bytes codes (a multiple of 8) from src into dst: 8 per thread and step, so that a warp's loads
// (8 bytes a lane) and stores (16) are both contiguous, and four steps' loads in flight before
// their stores.
template <int DTYPE>
__device__ __forceinline__ void convert(const unsigned char* __restrict__ src,
                                        unsigned short* __restrict__ dst, long long bytes) {
  constexpr long long kStep = kThreads * 8ll;
  constexpr int kInFlight = 4;
  long long i = threadIdx.x * 8ll;
  for (; i + (kInFlight - 1) * kStep < bytes; i += kInFlight * kStep) {
    uint2 codes[kInFlight];
#pragma unroll
    for (int u = 0; u < kInFlight; ++u)
      codes[u] = __ldg(reinterpret_cast<const uint2*>(src + i + u * kStep));
#pragma unroll
    for (int u = 0; u < kInFlight; ++u)
      *reinterpret_cast<uint4*>(dst + i + u * kStep) = e4m3x8_to_16bit_rebiased<DTYPE>(codes[u]);
  }
  for (; i < bytes; i += kStep) {
    *reinterpret_cast<uint4*>(dst + i) =
        e4m3x8_to_16bit_rebiased<DTYPE>(__ldg(reinterpret_cast<const uint2*>(src + i)));
  }
}

}  // namespace fp8_dequantize

template <int DTYPE>
__global__ void __launch_bounds__(fp8_dequantize::kThreads)
    dequantize_fp8(const Fp8DequantParams p) {
  namespace dq = fp8_dequantize;
  const long long begin = blockIdx.x * dq::kChunkBytes;
  auto chunk = [&](long long total) {
    const long long left = total - begin;
    return left <= 0 ? 0 : (left < dq::kChunkBytes ? left : dq::kChunkBytes);
  };
  dq::convert<DTYPE>(p.k_codes + begin, p.k_out + begin, chunk(p.k_bytes));
  dq::convert<DTYPE>(p.v_codes + begin, p.v_out + begin, chunk(p.v_bytes));
}

}  // namespace attn
