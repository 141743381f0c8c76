// The end of a CTA of the tensor-core decode kernels (paged_decode.sm80_mma and
// paged_decode.sm90_tma), after its key loop: the WARPS compute warps' online-softmax states are
// merged through shared memory; a sequence with one split writes `out`, a split of a multi-split
// sequence writes its normalised partial output and log2-sum-exp, and the last of the
// sequence's CTAs to finish (an atomic count per sequence and KV head) merges them.
//
// The compute warps are warps 0 .. WARPS - 1; `sync` is a barrier over exactly them (__syncthreads
// when the CTA has no other warp). `smem` (merge_bytes and split_merge_bytes of
// sm80_mma_traits.hpp) must no longer hold data any thread still reads.
#pragma once

#include "kernels/common/convert.cuh"
#include "kernels/paged_decode/sm80_mma_block.cuh"
#include "kernels/paged_decode/sm80_mma_block_key_rows.cuh"
#include "kernels/paged_decode/sm80_mma_params.hpp"
#include "kernels/paged_decode/sm80_mma_traits.hpp"

namespace attn {
namespace paged_decode::sm80_mma {

// A warp's key-rows state (sm80_mma_block_key_rows.cuh) into the merge area: its output, max and
// sum of heads 2 t4 and 2 t4 + 1 of every lane (outputs [WARPS][M][HEAD_DIM], maxima and sums
// [WARPS][M]).
template <bool KV_FP8, int HEAD_DIM>
__device__ __forceinline__ void store_key_rows_state(KeyRowsState<HEAD_DIM>& st, float* merge_out,
                                                     float* merge_max, float* merge_sum) {
  constexpr int M = paged_decode::sm80_mma::kMmaRows;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, quad = lane / 4, t4 = lane % 4;
#pragma unroll
  for (int j = 0; j < 2; ++j) {
#pragma unroll
    for (int mask = 4; mask < 32; mask *= 2)
      st.col_sum[j] += __shfl_xor_sync(0xffffffffu, st.col_sum[j], mask);
  }
#pragma unroll
  for (int m = 0; m < HEAD_DIM / 16; ++m) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int head = 2 * t4 + e % 2;
      merge_out[(warp * M + head) * HEAD_DIM +
                key_rows_dim<KV_FP8, HEAD_DIM>(m, quad + 8 * (e / 2))] = st.o[m][e];
    }
  }
  if (quad == 0) {
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      merge_max[warp * M + 2 * t4 + j] = st.col_max[j];
      merge_sum[warp * M + 2 * t4 + j] = st.col_sum[j];
    }
  }
}

template <int DTYPE, bool KV_FP8, int HEAD_DIM, int WARPS, class State, class Sync>
__device__ __forceinline__ void finish_split(const Sm80MmaParams& p, State& st, unsigned char* smem,
                                             int* merge_here, int seq, int split, int kv_head,
                                             float v_scale, Sync sync) {
  constexpr int THREADS = paged_decode::sm80_mma::threads(WARPS);
  constexpr int M = paged_decode::sm80_mma::kMmaRows;
  constexpr int D_TILES = HEAD_DIM / 8;
  const float kNegInf = -__int_as_float(0x7f800000);
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32, t4 = lane % 4;
  const int num_splits = p.seq_splits[seq];
  const int q_head0 = kv_head * p.group;

  // Merge the warps' states: each warp's output, max and sum per row into shared memory.
  float* merge_out = reinterpret_cast<float*>(smem);    // [WARPS][M][HEAD_DIM]
  float* merge_max = merge_out + WARPS * M * HEAD_DIM;  // [WARPS][M]
  float* merge_sum = merge_max + WARPS * M;             // [WARPS][M]
  const int r0 = lane / 4;
  if constexpr (State::kKeyRows) {
    store_key_rows_state<KV_FP8, HEAD_DIM>(st, merge_out, merge_max, merge_sum);
  } else {  // the head-rows state (sm80_mma_block.cuh): rows r0 and r0 + 8 of every lane
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      st.row_sum[r] += __shfl_xor_sync(0xffffffffu, st.row_sum[r], 1);
      st.row_sum[r] += __shfl_xor_sync(0xffffffffu, st.row_sum[r], 2);
      float* dst = merge_out + (warp * M + r0 + 8 * r) * HEAD_DIM;
#pragma unroll
      for (int n = 0; n < D_TILES; ++n) {
        if constexpr (KV_FP8) {  // the P V permutation of sm80_mma_block.cuh, undone
          if (HEAD_DIM % 32 == 0 || n < HEAD_DIM / 32 * 4) {  // groups of 4 tiles: 32 (n / 4) + 4 c
            dst[32 * (n / 4) + 4 * (2 * t4) + n % 4] = st.o[n][2 * r];
            dst[32 * (n / 4) + 4 * (2 * t4 + 1) + n % 4] = st.o[n][2 * r + 1];
          } else {  // the last group of 2 tiles (head dim 80): 32 (n / 4) + 2 c + n % 4
            dst[32 * (n / 4) + 2 * (2 * t4) + n % 4] = st.o[n][2 * r];
            dst[32 * (n / 4) + 2 * (2 * t4 + 1) + n % 4] = st.o[n][2 * r + 1];
          }
        } else {
          *reinterpret_cast<float2*>(dst + n * 8 + 2 * t4) =
              make_float2(st.o[n][2 * r], st.o[n][2 * r + 1]);
        }
      }
      if (lane % 4 == 0) {
        merge_max[warp * M + r0 + 8 * r] = st.row_max[r];
        merge_sum[warp * M + r0 + 8 * r] = st.row_sum[r];
      }
    }
  }
  sync();

  // Two output elements per thread and step, over the group's rows only.
  const long long split_rows = p.seq_partial[seq] + split;
  for (int idx = tid; idx < p.group * (HEAD_DIM / 2); idx += THREADS) {
    const int r = idx / (HEAD_DIM / 2), d = (idx % (HEAD_DIM / 2)) * 2;
    float top = kNegInf;
#pragma unroll
    for (int w = 0; w < WARPS; ++w) top = fmaxf(top, merge_max[w * M + r]);
    const float top_base = top == kNegInf ? 0.0f : top;
    float sum = 0.0f, x0 = 0.0f, x1 = 0.0f;
#pragma unroll
    for (int w = 0; w < WARPS; ++w) {
      const float factor = exp2f(merge_max[w * M + r] - top_base);
      const float2 part = *reinterpret_cast<const float2*>(merge_out + (w * M + r) * HEAD_DIM + d);
      sum = fmaf(merge_sum[w * M + r], factor, sum);
      x0 = fmaf(part.x, factor, x0);
      x1 = fmaf(part.y, factor, x1);
    }
    x0 *= v_scale;
    x1 *= v_scale;
    const int q_head = q_head0 + r;
    const long long head_row = (long long)seq * p.num_q_heads + q_head;
    if (num_splits == 1) {
      // The sink joins the denominator: sum * 2^top + 2^sink, computed relative to the larger.
      float inv = 0.0f;  // no visible key: zero, even with a sink
      if (sum > 0.0f) {
        if (p.sink_log2 != nullptr) {
          const float sink = p.sink_log2[q_head];
          const float both = fmaxf(top, sink);
          const float keep = exp2f(top - both);
          inv = keep / (sum * keep + exp2f(sink - both));
        } else {
          inv = 1.0f / sum;
        }
      }
      *reinterpret_cast<unsigned int*>(static_cast<char*>(p.out) + (head_row * HEAD_DIM + d) * 2) =
          pack2<DTYPE>(x0 * inv, x1 * inv);
    } else {
      const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
      const long long row = split_rows * p.num_q_heads + q_head;
      *reinterpret_cast<float2*>(p.partial_out + row * HEAD_DIM + d) =
          make_float2(x0 * inv, x1 * inv);
      if (d == 0) p.partial_lse[row] = sum > 0.0f ? top + log2f(sum) : kNegInf;
    }
  }
  if (num_splits == 1) return;

  // Split merge: the last CTA of this (sequence, KV head) to finish combines the splits' partial
  // results, out = sum_s w_s partial_s / (sum_s w_s + w_sink) with w_s = 2^(lse_s - top) and
  // w_sink = 2^(sink - top), top the largest of them (the threadFenceReduction pattern: each CTA
  // publishes its rows, then counts itself in; the one that completes the count reads them all).
  __threadfence();
  sync();  // every thread's rows published; the cross-warp merge area is free
  int* counter = p.split_counters + (long long)seq * p.num_kv_heads + kv_head;
  if (tid == 0) *merge_here = atomicAdd(counter, 1) == num_splits - 1;
  sync();
  if (!*merge_here) return;
  __threadfence();  // the other splits' rows are read after their count was seen
  float* weight = reinterpret_cast<float*>(smem);                    // [kMaxSplits][M], normalised
  float* row_top = weight + paged_decode::sm80_mma::kMaxSplits * M;  // [M]
  float* row_inv = row_top + M;                                      // [M]
  const long long first_row = (long long)p.seq_partial[seq] * p.num_q_heads + q_head0;
  for (int idx = tid; idx < num_splits * p.group; idx += THREADS) {
    const int s = idx / p.group, r = idx % p.group;
    weight[s * M + r] = __ldcg(p.partial_lse + first_row + (long long)s * p.num_q_heads + r);
  }
  sync();
  if (tid < p.group) {
    float top = kNegInf;
    for (int s = 0; s < num_splits; ++s) top = fmaxf(top, weight[s * M + tid]);
    float total = 0.0f;
    if (top != kNegInf) {  // else no visible key: zero, even with a sink
      if (p.sink_log2 != nullptr) {
        const float sink = p.sink_log2[q_head0 + tid];
        const float both = fmaxf(top, sink);
        total = exp2f(sink - both);
        top = both;
      }
      for (int s = 0; s < num_splits; ++s) total += exp2f(weight[s * M + tid] - top);
    }
    row_top[tid] = top;
    row_inv[tid] = total > 0.0f ? 1.0f / total : 0.0f;
  }
  sync();
  for (int idx = tid; idx < num_splits * p.group; idx += THREADS) {
    const int s = idx / p.group, r = idx % p.group;
    weight[s * M + r] =
        row_inv[r] > 0.0f ? exp2f(weight[s * M + r] - row_top[r]) * row_inv[r] : 0.0f;
  }
  sync();
  // Four output elements per thread and step; the splits' loads are independent (unrolled).
  for (int idx = tid; idx < p.group * (HEAD_DIM / 4); idx += THREADS) {
    const int r = idx / (HEAD_DIM / 4), d = (idx % (HEAD_DIM / 4)) * 4;
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    const float* src = p.partial_out + (first_row + r) * HEAD_DIM + d;
#pragma unroll 8
    for (int s = 0; s < num_splits; ++s) {
      const float w = weight[s * M + r];
      const float4 part =
          __ldcg(reinterpret_cast<const float4*>(src + (long long)s * p.num_q_heads * HEAD_DIM));
      acc.x = fmaf(w, part.x, acc.x);
      acc.y = fmaf(w, part.y, acc.y);
      acc.z = fmaf(w, part.z, acc.z);
      acc.w = fmaf(w, part.w, acc.w);
    }
    const long long head_row = (long long)seq * p.num_q_heads + q_head0 + r;
    uint2 packed;
    packed.x = pack2<DTYPE>(acc.x, acc.y);
    packed.y = pack2<DTYPE>(acc.z, acc.w);
    *reinterpret_cast<uint2*>(static_cast<char*>(p.out) + (head_row * HEAD_DIM + d) * 2) = packed;
  }
  if (tid == 0) *counter = 0;  // ready for the next launch
}

}  // namespace paged_decode::sm80_mma
}  // namespace attn
