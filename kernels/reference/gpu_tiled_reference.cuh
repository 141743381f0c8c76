// gpu_tiled_reference_attention: the tiled GPU oracle for large problems (host side:
// gpu_tiled_reference.hpp). Computes what the CPU reference and the naive GPU reference compute
// (kernels/reference/paged_attention_reference.hpp, gpu_reference.cuh), in fp32 on CUDA cores,
// sharing no code with the optimised variants: the per-element rules (key visibility, pool
// addressing, element decoding, fp8 scales) are those of gpu_reference_params.hpp.
//
//   One CTA per (query tile, q head): up to kGpuTiledRows query tokens of one sequence.
//   kGpuTiledThreadsPerRow threads per query row; thread `part` holds dims gpu_tiled_dim(part, i)
//   of q and of the output accumulator. The CTA walks the sequence's keys a tile at a time: when
//   any of its rows sees a key of the tile, all threads copy the tile's K and V rows (through the
//   block table, any layout, fp8 codes unscaled) into shared memory as floats; then, key by key in
//   order, each row's threads add up q.k (shuffles), and a row that sees the key (the port of
//   key_visible) applies scale, k scale and soft-cap and updates its online softmax (running max,
//   running sum, rescaled accumulator) with v scale times V.
// The sink logit joins the denominator at the end; a row that sees no key writes zeros and an LSE
// of -inf. Outputs fp32 [total_q, num_q_heads, head_dim] and the natural-log LSE [total_q,
// num_q_heads]. Full-precision expf/tanhf/logf (no fast-math).
//
// Why tiles: the naive reference has every row read every key from global memory; here a CTA
// reads each key once for kGpuTiledRows (32) rows, and the inner loop is shared-memory reads
// (broadcast across the rows of a warp) and FMAs.
#pragma once

#include "kernels/reference/gpu_reference_params.hpp"
#include "kernels/reference/gpu_tiled_reference_params.hpp"

namespace attn {

template <int Q_DTYPE, int KV_DTYPE>
__global__ void __launch_bounds__(kGpuTiledThreads)
    gpu_tiled_reference_attention(const GpuTiledReferenceParams t) {
  constexpr unsigned kAll = 0xffffffffu;
  __shared__ float k_tile[kGpuTiledTileFloats];  // [keys_per_tile, head_dim]
  __shared__ float v_tile[kGpuTiledTileFloats];  // [keys_per_tile, v_head_dim]

  const GpuReferenceParams& p = t.p;
  const int seq = t.tile_seq[blockIdx.x];
  const int head = int(blockIdx.y);
  const int kv_head = head / p.group;
  const int part = int(threadIdx.x) % kGpuTiledThreadsPerRow;
  const long long q_index = t.tile_first_query[blockIdx.x] + threadIdx.x / kGpuTiledThreadsPerRow;
  const long long first_token = p.cu_seqlens_q[seq];
  // Rows past the sequence's last query compute nothing they keep, but take part in every
  // shuffle and barrier.
  const bool row_valid = first_token + q_index < p.cu_seqlens_q[seq + 1];
  const long long row = (first_token + q_index) * p.num_q_heads + head;  // output row
  const long long kv_len = p.mask.kv_lens[seq];
  const int* pages = p.block_table + (long long)seq * p.max_pages_per_seq;
  const float k_scale = gpu_reference_kv_scale(p.k_scales, p.num_k_scales, kv_head);
  const float v_scale = gpu_reference_kv_scale(p.v_scales, p.num_v_scales, kv_head);
  const int tile_keys = gpu_tiled_keys_per_tile(p.head_dim, p.v_head_dim);

  float q[kGpuTiledDimsPerThread], acc[kGpuTiledDimsPerThread];
#pragma unroll
  for (int i = 0; i < kGpuTiledDimsPerThread; ++i) {
    const int d = gpu_tiled_dim(part, i);
    q[i] =
        row_valid && d < p.head_dim ? gpu_reference_load<Q_DTYPE>(p.q, row * p.head_dim + d) : 0.0f;
    acc[i] = 0.0f;
  }
  float running_max = -__int_as_float(0x7f800000);  // -inf
  float running_sum = 0.0f;
  long long seen = 0;  // visible keys so far

  for (long long first_key = 0; first_key < kv_len; first_key += tile_keys) {
    const int keys = int(kv_len - first_key < tile_keys ? kv_len - first_key : tile_keys);
    // Skip a tile no row of the CTA sees (above a causal diagonal, outside a window).
    bool any_visible = false;
    if (row_valid && part == 0) {
      for (int k = 0; k < keys && !any_visible; ++k)
        any_visible = gpu_reference_key_visible(p.mask, seq, head, q_index, first_key + k);
    }
    if (!__syncthreads_or(any_visible)) continue;

    for (int e = int(threadIdx.x); e < keys * p.head_dim; e += kGpuTiledThreads) {
      const long long j = first_key + e / p.head_dim;
      const int d = e % p.head_dim;
      const long long page = pages[j / p.page_size];
      const int slot = int(j % p.page_size);
      k_tile[e] = gpu_reference_load<KV_DTYPE>(
          p.k.data, gpu_reference_pool_row(p.k, page, slot, kv_head) + p.k.dim_offset[d]);
    }
    for (int e = int(threadIdx.x); e < keys * p.v_head_dim; e += kGpuTiledThreads) {
      const long long j = first_key + e / p.v_head_dim;
      const int d = e % p.v_head_dim;
      const long long page = pages[j / p.page_size];
      const int slot = int(j % p.page_size);
      v_tile[e] = gpu_reference_load<KV_DTYPE>(
          p.v.data, gpu_reference_pool_row(p.v, page, slot, kv_head) + p.v.dim_offset[d]);
    }
    __syncthreads();

    for (int k = 0; k < keys; ++k) {
      const float* k_row = k_tile + k * p.head_dim;
      float dot = 0.0f;
#pragma unroll
      for (int i = 0; i < kGpuTiledDimsPerThread; ++i) {
        const int d = gpu_tiled_dim(part, i);
        if (d < p.head_dim) dot += q[i] * k_row[d];
      }
      // The row's threads are neighbouring lanes: every lane of the warp shuffles.
#pragma unroll
      for (int offset = kGpuTiledThreadsPerRow / 2; offset > 0; offset /= 2)
        dot += __shfl_xor_sync(kAll, dot, offset);
      if (!row_valid || !gpu_reference_key_visible(p.mask, seq, head, q_index, first_key + k))
        continue;
      float logit = dot * k_scale * p.softmax_scale;
      if (p.soft_cap > 0.0f) logit = p.soft_cap * tanhf(logit / p.soft_cap);

      // Online softmax. A NaN logit makes the weight NaN and so the whole row NaN.
      const float new_max = logit > running_max ? logit : running_max;
      const float rescale = expf(running_max - new_max);  // 0 for the first key
      const float weight = expf(logit - new_max);
      running_sum = running_sum * rescale + weight;
      const float* v_row = v_tile + k * p.v_head_dim;
#pragma unroll
      for (int i = 0; i < kGpuTiledDimsPerThread; ++i) {
        const int d = gpu_tiled_dim(part, i);
        if (d < p.v_head_dim) acc[i] = acc[i] * rescale + weight * (v_scale * v_row[d]);
      }
      running_max = new_max;
      ++seen;
    }
    __syncthreads();  // every row is done with the tile before the next one overwrites it
  }

  if (!row_valid) return;
  float* out = p.out + row * p.v_head_dim;
  if (seen == 0) {  // nothing visible: exactly zero, even with a sink
#pragma unroll
    for (int i = 0; i < kGpuTiledDimsPerThread; ++i) {
      const int d = gpu_tiled_dim(part, i);
      if (d < p.v_head_dim) out[d] = 0.0f;
    }
    if (part == 0) p.lse[row] = -__int_as_float(0x7f800000);
    return;
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
  for (int i = 0; i < kGpuTiledDimsPerThread; ++i) {
    const int d = gpu_tiled_dim(part, i);
    if (d < p.v_head_dim) out[d] = acc[i] * acc_scale / denominator;
  }
  if (part == 0) p.lse[row] = final_max + logf(denominator);
}

}  // namespace attn
