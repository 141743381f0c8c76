// The dequantisation pass of prefix_prefill.sm90_wgmma over an fp8 (e4m3) cache (config
// fp8_dequant=1): converts the codes of every context page a sequence reads, and of the gathered
// new tokens, to 16-bit values of DTYPE (the queries' type) once per launch, exactly (every finite
// e4m3 value is a bf16 and an fp16; the scales stay out: K's joins the logits' scale and V's the
// output's, as in the kernel's own conversion). The attention kernel then reads 16-bit tiles by
// TMA, as over a 16-bit cache, instead of converting each context tile once per query tile that
// reads it. Host side: prefix_prefill.sm90_wgmma's prepare(); parameters:
// fp8_dequantize_params.hpp.
#pragma once

#include "kernels/common/convert.cuh"
#include "kernels/prefix_prefill/fp8_dequantize_params.hpp"

namespace attn {

namespace prefix_prefill::fp8_dequantize {

// bytes codes (a multiple of 16) from src into dst, 16 per thread and step.
template <int DTYPE>
__device__ __forceinline__ void convert(const unsigned char* __restrict__ src,
                                        unsigned short* __restrict__ dst, long long bytes) {
#pragma unroll 4
  for (long long i = threadIdx.x * 16ll; i < bytes; i += kThreads * 16ll) {
    const uint4 codes = __ldg(reinterpret_cast<const uint4*>(src + i));
    uint4 lo, hi;
    e4m3x16_to_16bit<DTYPE>(codes, lo, hi);
    uint4* out = reinterpret_cast<uint4*>(dst + i);
    out[0] = lo;
    out[1] = hi;
  }
}

}  // namespace prefix_prefill::fp8_dequantize

template <int DTYPE>
__global__ void __launch_bounds__(prefix_prefill::fp8_dequantize::kThreads)
    prefix_prefill_fp8_dequantize(const PrefixPrefillDequantParams p) {
  namespace dq = prefix_prefill::fp8_dequantize;
  const long long e = blockIdx.x;
  if (e < p.pages) {
    const long long page = p.block_table[p.entries[e]];
    dq::convert<DTYPE>(p.k_pool + page * p.k_page_bytes, p.k_out + e * p.k_page_bytes,
                       p.k_page_bytes);
    dq::convert<DTYPE>(p.v_pool + page * p.v_page_bytes, p.v_out + e * p.v_page_bytes,
                       p.v_page_bytes);
    return;
  }
  const long long begin = (e - p.pages) * dq::kChunkBytes;
  auto chunk = [&](long long total) {
    const long long left = total - begin;
    return left <= 0 ? 0 : (left < dq::kChunkBytes ? left : dq::kChunkBytes);
  };
  dq::convert<DTYPE>(p.k_new + begin, p.k_new_out + begin, chunk(p.k_new_bytes));
  dq::convert<DTYPE>(p.v_new + begin, p.v_new_out + begin, chunk(p.v_new_bytes));
}

}  // namespace attn
