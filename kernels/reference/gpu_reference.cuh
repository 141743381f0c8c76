// gpu_reference_attention: the naive GPU oracle for large problems (host side: gpu_reference.hpp).
//
// Computes what the CPU reference computes (kernels/reference/paged_attention_reference.hpp), in
// fp32 on CUDA cores, deliberately simply and sharing no code with the optimised variants:
//   one warp per output row (query token, q head); lane l holds dims l, l + 32, ... of q and of
//   the output accumulator; the warp walks EVERY key position of the row's sequence, 32 at a time,
//   each lane deciding one key's visibility with the port of key_visible
//   (gpu_reference_params.hpp); for each visible key, in order, it reads K through the block table
//   (any layout, fp8 codes times the kv head's scale), reduces q.k across the warp, applies scale
//   and soft-cap, and updates an online softmax (running max, running sum, rescaled accumulator)
//   with V.
// The sink logit joins the denominator at the end; a row that sees no key writes zeros and an LSE
// of -inf. Outputs fp32 [total_q, num_q_heads, head_dim] and the natural-log LSE [total_q,
// num_q_heads]. Full-precision expf/tanhf/logf (no fast-math).
//
// Multi-head latent attention is the same walk with one kv head: K is the latent row [c | k_rope]
// (head_dim kv_lora_rank + qk_rope_head_dim) and V its first kv_lora_rank elements, read from the
// same pool under the same scale (the host points p.v at the latent pool). DIMS_PER_LANE is 8 for
// standard heads and covers the latent row's width otherwise (gpu_reference_dims_per_lane).
//
// Why this is quick enough: the work is that of the attention itself, visible pairs * head_dim
// FMAs twice; per key a warp spends a few loads, five shuffles and two expf. Causal or sparse
// rows still walk all keys of their sequence, but 32 invisible keys cost one ballot.
#pragma once

#include "kernels/reference/gpu_reference_params.hpp"

namespace attn {

template <int Q_DTYPE, int KV_DTYPE, int DIMS_PER_LANE>
__global__ void __launch_bounds__(kGpuReferenceWarps * 32)
    gpu_reference_attention(const GpuReferenceParams p) {
  static_assert(DIMS_PER_LANE > 0 && DIMS_PER_LANE <= kGpuReferenceMaxDimsPerLane,
                "dims per lane: gpu_reference_dims_per_lane");
  constexpr unsigned kAll = 0xffffffffu;
  const int lane = int(threadIdx.x % 32);
  const long long rows = p.total_q * p.num_q_heads;
  for (long long row = (long long)blockIdx.x * kGpuReferenceWarps + threadIdx.x / 32; row < rows;
       row += (long long)gridDim.x * kGpuReferenceWarps) {
    const long long token = row / p.num_q_heads;
    const int head = int(row % p.num_q_heads);
    const int kv_head = head / p.group;
    const int seq = p.seq_of_token[token];
    const long long q_index = token - p.cu_seqlens_q[seq];
    const long long kv_len = p.mask.kv_lens[seq];
    const int* pages = p.block_table + (long long)seq * p.max_pages_per_seq;
    const float k_scale = gpu_reference_kv_scale(p.k_scales, p.num_k_scales, kv_head);
    const float v_scale = gpu_reference_kv_scale(p.v_scales, p.num_v_scales, kv_head);

    float q[DIMS_PER_LANE], acc[DIMS_PER_LANE];
#pragma unroll
    for (int i = 0; i < DIMS_PER_LANE; ++i) {
      const int d = lane + 32 * i;
      q[i] = d < p.head_dim ? gpu_reference_load<Q_DTYPE>(p.q, row * p.head_dim + d) : 0.0f;
      acc[i] = 0.0f;
    }
    float running_max = -__int_as_float(0x7f800000);  // -inf
    float running_sum = 0.0f;
    long long seen = 0;  // visible keys so far

    for (long long first = 0; first < kv_len; first += 32) {
      const bool mine = gpu_reference_key_visible(p.mask, seq, head, q_index, first + lane);
      unsigned visible = __ballot_sync(kAll, mine);
      while (visible != 0) {
        const long long j = first + (__ffs(visible) - 1);
        visible &= visible - 1;
        const long long page = pages[j / p.page_size];
        const int slot = int(j % p.page_size);
        const long long k_row = gpu_reference_pool_row(p.k, page, slot, kv_head);
        const long long v_row = gpu_reference_pool_row(p.v, page, slot, kv_head);

        float dot = 0.0f;
#pragma unroll
        for (int i = 0; i < DIMS_PER_LANE; ++i) {
          const int d = lane + 32 * i;
          if (d < p.head_dim) {
            dot += q[i] * gpu_reference_load<KV_DTYPE>(p.k.data, k_row + p.k.dim_offset[d]);
          }
        }
        for (int offset = 16; offset > 0; offset /= 2) dot += __shfl_xor_sync(kAll, dot, offset);
        float logit = dot * k_scale * p.softmax_scale;
        if (p.soft_cap > 0.0f) logit = p.soft_cap * tanhf(logit / p.soft_cap);

        // Online softmax. A NaN logit makes the weight NaN and so the whole row NaN.
        const float new_max = logit > running_max ? logit : running_max;
        const float rescale = expf(running_max - new_max);  // 0 for the first key
        const float weight = expf(logit - new_max);
        running_sum = running_sum * rescale + weight;
#pragma unroll
        for (int i = 0; i < DIMS_PER_LANE; ++i) {
          const int d = lane + 32 * i;
          if (d < p.v_head_dim) {
            const float value =
                v_scale * gpu_reference_load<KV_DTYPE>(p.v.data, v_row + p.v.dim_offset[d]);
            acc[i] = acc[i] * rescale + weight * value;
          }
        }
        running_max = new_max;
        ++seen;
      }
    }

    float* out = p.out + row * p.v_head_dim;
    if (seen == 0) {  // nothing visible: exactly zero, even with a sink
#pragma unroll
      for (int i = 0; i < DIMS_PER_LANE; ++i) {
        const int d = lane + 32 * i;
        if (d < p.v_head_dim) out[d] = 0.0f;
      }
      if (lane == 0) p.lse[row] = -__int_as_float(0x7f800000);
      continue;
    }
    // The sink adds probability mass exp(sink) and no value.
    float final_max = running_max, acc_scale = 1.0f, denominator = running_sum;
    if (p.sink_logits != nullptr) {
      const float sink = p.sink_logits[head];
      final_max = sink > running_max ? sink : running_max;
      acc_scale = expf(running_max - final_max);
      denominator = running_sum * acc_scale + expf(sink - final_max);
    }
#pragma unroll
    for (int i = 0; i < DIMS_PER_LANE; ++i) {
      const int d = lane + 32 * i;
      if (d < p.v_head_dim) out[d] = acc[i] * acc_scale / denominator;
    }
    if (lane == 0) p.lse[row] = final_max + logf(denominator);
  }
}

}  // namespace attn
