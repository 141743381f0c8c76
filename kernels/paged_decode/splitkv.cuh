// paged_decode.splitkv: flash-decoding on CUDA cores over a paged KV cache.
//
// Computes, for each sequence s and query head h (one query token per sequence),
//   out[s, h] = softmax(scale * q[s, h] . K[s, :, h / group]) V[s, :, h / group]
// where K and V rows are read through the page table: token t of sequence s lives in page
// block_table[s, t / page_size] at slot t % page_size.
//
// Work decomposition (grid = sequences, kv_heads * head_chunks, splits):
// - A CTA owns one KV head of one sequence and HEADS_PER_CTA of the query heads that share it, so
//   each K/V byte it loads serves all of those heads (GQA: read once per KV head when
//   HEADS_PER_CTA >= group size).
// - The sequence's keys are cut into num_splits contiguous ranges of whole tiles (split-KV): short
//   batches still fill the GPU. Each split writes a normalised partial output and its log-sum-exp;
//   paged_decode_merge combines them. With one split the CTA writes `out` itself.
// - Inside a CTA, a key row of HEAD_DIM elements is read by HEAD_DIM / 8 lanes with one 16-byte
//   load each (coalesced), and the CTA reads TOKEN_ROWS rows at once. A tile of TILE_TOKENS keys is
//   processed in three steps: scores into shared memory, an online-softmax update per head, then
//   the V accumulation in registers. K and V of a tile are loaded together up front so that
//   2 * TOKENS_PER_ROW independent 16-byte loads per thread are in flight.
//
// Tunables and why they exist:
//   HEADS_PER_CTA  query heads sharing one K/V read; more heads = fewer K/V re-reads, more
//   registers WARPS          threads per CTA; more rows in flight per CTA vs. more CTAs per SM
//   TILE_TOKENS    keys per step; larger tiles = more loads in flight, fewer barriers
#pragma once

#include "kernels/common/convert.cuh"
#include "kernels/common/warp.cuh"
#include "kernels/paged_decode/paged_decode_params.hpp"
#include "kernels/paged_decode/splitkv_traits.hpp"

namespace attn {

template <int DTYPE, int HEAD_DIM, int HEADS_PER_CTA, int WARPS, int TILE_TOKENS>
__global__ void __launch_bounds__(WARPS * 32) paged_decode_splitkv(const PagedDecodeParams p) {
  static_assert(splitkv::check(HEAD_DIM, HEADS_PER_CTA, WARPS, TILE_TOKENS) == splitkv::kOk,
                "invalid paged_decode.splitkv config: see splitkv::check");
  constexpr int LANES = splitkv::lanes_per_token(HEAD_DIM);
  constexpr int ROWS = splitkv::token_rows(HEAD_DIM, WARPS);
  constexpr int TOKENS_PER_ROW = splitkv::tokens_per_row(HEAD_DIM, WARPS, TILE_TOKENS);
  constexpr int SCORE_FLOATS = HEADS_PER_CTA * TILE_TOKENS;
  constexpr int REDUCE_FLOATS = (ROWS / 2) * HEADS_PER_CTA * HEAD_DIM;
  const float kNegInf = -__int_as_float(0x7f800000);

  // scores [HEADS_PER_CTA][TILE_TOKENS] during the key loop; the cross-row reduction afterwards.
  __shared__ float scratch[SCORE_FLOATS > REDUCE_FLOATS ? SCORE_FLOATS : REDUCE_FLOATS];
  __shared__ float running_max[HEADS_PER_CTA];  // log2 domain
  __shared__ float running_sum[HEADS_PER_CTA];
  __shared__ float rescale[HEADS_PER_CTA];

  const int group = p.num_q_heads / p.num_kv_heads;
  const int kv_head = blockIdx.y / p.head_chunks;
  const int first_head_in_group = (blockIdx.y % p.head_chunks) * HEADS_PER_CTA;
  const int heads_here = min(HEADS_PER_CTA, group - first_head_in_group);
  const int q_head0 = kv_head * group + first_head_in_group;
  const int seq = blockIdx.x;
  const int split = blockIdx.z;
  const int lane = threadIdx.x % LANES;  // which 8 elements of a row
  const int row = threadIdx.x / LANES;   // which key row of a step

  // This split's keys: whole tiles, so splits never share a tile.
  const int kv_len = p.kv_lens[seq];
  const int tiles = (kv_len + TILE_TOKENS - 1) / TILE_TOKENS;
  const int tiles_per_split = (tiles + p.num_splits - 1) / p.num_splits;
  const int key_begin = min(kv_len, split * tiles_per_split * TILE_TOKENS);
  const int key_end = min(kv_len, key_begin + tiles_per_split * TILE_TOKENS);

  // q of each head, pre-scaled into the log2 domain; heads past the group's end stay zero.
  float q[HEADS_PER_CTA][8];
#pragma unroll
  for (int g = 0; g < HEADS_PER_CTA; ++g) {
    if (g < heads_here) {
      const char* q_row = static_cast<const char*>(p.q) +
                          ((long long)seq * p.num_q_heads + q_head0 + g) * HEAD_DIM * 2;
      unpack8<DTYPE>(load_16B_readonly(q_row + lane * 16), q[g]);
#pragma unroll
      for (int e = 0; e < 8; ++e) q[g][e] *= p.scale_log2;
    } else {
#pragma unroll
      for (int e = 0; e < 8; ++e) q[g][e] = 0.0f;
    }
  }
  if (threadIdx.x < HEADS_PER_CTA) {
    running_max[threadIdx.x] = kNegInf;
    running_sum[threadIdx.x] = 0.0f;
  }
  float acc[HEADS_PER_CTA][8];
#pragma unroll
  for (int g = 0; g < HEADS_PER_CTA; ++g) {
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[g][e] = 0.0f;
  }
  __syncthreads();

  const int* pages = p.block_table + (long long)seq * p.max_pages_per_seq;
  const char* k_base =
      static_cast<const char*>(p.k_pool) + (kv_head * p.head_stride + lane * 8) * 2;
  const char* v_base =
      static_cast<const char*>(p.v_pool) + (kv_head * p.head_stride + lane * 8) * 2;

  for (int tile_begin = key_begin; tile_begin < key_end; tile_begin += TILE_TOKENS) {
    // 1. Issue every K and V load of this thread's rows before using any of them.
    uint4 k_regs[TOKENS_PER_ROW], v_regs[TOKENS_PER_ROW];
#pragma unroll
    for (int i = 0; i < TOKENS_PER_ROW; ++i) {
      const int t = tile_begin + row + i * ROWS;
      if (t < key_end) {
        const long long offset =
            pages[t / p.page_size] * p.page_stride + (t % p.page_size) * p.token_stride;
        k_regs[i] = load_16B_readonly(k_base + offset * 2);
        v_regs[i] = load_16B_readonly(v_base + offset * 2);
      } else {
        k_regs[i] = make_uint4(0, 0, 0, 0);
        v_regs[i] = make_uint4(0, 0, 0, 0);
      }
    }

    // 2. Scores: each lane's 8-element partial dot product, summed over the row's lanes.
#pragma unroll
    for (int i = 0; i < TOKENS_PER_ROW; ++i) {
      const int t = tile_begin + row + i * ROWS;
      float k[8];
      unpack8<DTYPE>(k_regs[i], k);
#pragma unroll
      for (int g = 0; g < HEADS_PER_CTA; ++g) {
        float dot = 0.0f;
#pragma unroll
        for (int e = 0; e < 8; ++e) dot = fmaf(q[g][e], k[e], dot);
        dot = group_sum<LANES>(dot);
        if (lane == 0) scratch[g * TILE_TOKENS + row + i * ROWS] = t < key_end ? dot : kNegInf;
      }
    }
    __syncthreads();

    // 3. Online softmax, one warp per head: new running max, rescale factor, probabilities.
    const int warp = threadIdx.x / 32, warp_lane = threadIdx.x % 32;
    for (int g = warp; g < HEADS_PER_CTA; g += WARPS) {
      float tile_max = kNegInf;
      for (int j = warp_lane; j < TILE_TOKENS; j += 32)
        tile_max = fmaxf(tile_max, scratch[g * TILE_TOKENS + j]);
      tile_max = warp_max(tile_max);
      const float old_max = running_max[g];
      const float new_max = fmaxf(old_max, tile_max);  // finite: the tile has a valid key
      float tile_sum = 0.0f;
      for (int j = warp_lane; j < TILE_TOKENS; j += 32) {
        const float prob = exp2f(scratch[g * TILE_TOKENS + j] - new_max);
        scratch[g * TILE_TOKENS + j] = prob;
        tile_sum += prob;
      }
      tile_sum = warp_sum(tile_sum);
      if (warp_lane == 0) {
        const float factor = exp2f(old_max - new_max);  // 0 on the first tile
        rescale[g] = factor;
        running_sum[g] = running_sum[g] * factor + tile_sum;
        running_max[g] = new_max;
      }
    }
    __syncthreads();

    // 4. Rescale the accumulators and add this tile's probability-weighted values.
#pragma unroll
    for (int g = 0; g < HEADS_PER_CTA; ++g) {
      const float factor = rescale[g];
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[g][e] *= factor;
    }
#pragma unroll
    for (int i = 0; i < TOKENS_PER_ROW; ++i) {
      float v[8];
      unpack8<DTYPE>(v_regs[i], v);
#pragma unroll
      for (int g = 0; g < HEADS_PER_CTA; ++g) {
        const float prob = scratch[g * TILE_TOKENS + row + i * ROWS];  // 0 past key_end
#pragma unroll
        for (int e = 0; e < 8; ++e) acc[g][e] = fmaf(prob, v[e], acc[g][e]);
      }
    }
    __syncthreads();  // the next tile overwrites the probabilities
  }

  // Sum the rows' accumulators: halve the live rows each step through shared memory.
#pragma unroll
  for (int live = ROWS; live > 1; live /= 2) {
    const int half = live / 2;
    if (row >= half && row < live) {
#pragma unroll
      for (int g = 0; g < HEADS_PER_CTA; ++g) {
#pragma unroll
        for (int e = 0; e < 8; ++e)
          scratch[((row - half) * HEADS_PER_CTA + g) * HEAD_DIM + lane * 8 + e] = acc[g][e];
      }
    }
    __syncthreads();
    if (row < half) {
#pragma unroll
      for (int g = 0; g < HEADS_PER_CTA; ++g) {
#pragma unroll
        for (int e = 0; e < 8; ++e)
          acc[g][e] += scratch[(row * HEADS_PER_CTA + g) * HEAD_DIM + lane * 8 + e];
      }
    }
    __syncthreads();
  }

  if (row != 0) return;
#pragma unroll
  for (int g = 0; g < HEADS_PER_CTA; ++g) {
    if (g >= heads_here) break;
    const float sum = running_sum[g];
    const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;  // no keys: output zero
    float result[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) result[e] = acc[g][e] * inv;
    const long long head_row = (long long)seq * p.num_q_heads + q_head0 + g;
    if (p.num_splits == 1) {
      *reinterpret_cast<uint4*>(static_cast<char*>(p.out) + (head_row * HEAD_DIM + lane * 8) * 2) =
          pack8<DTYPE>(result);
    } else {
      const long long split_row = (long long)split * p.num_seqs * p.num_q_heads + head_row;
      float4* dst = reinterpret_cast<float4*>(p.partial_out + split_row * HEAD_DIM + lane * 8);
      dst[0] = make_float4(result[0], result[1], result[2], result[3]);
      dst[1] = make_float4(result[4], result[5], result[6], result[7]);
      if (lane == 0) p.partial_lse[split_row] = sum > 0.0f ? running_max[g] + log2f(sum) : kNegInf;
    }
  }
}

// Combines the splits of paged_decode_splitkv: out = sum_s w_s * partial_s / sum_s w_s with
// w_s = 2^(lse_s - max lse). Grid (num_seqs, num_q_heads), HEAD_DIM threads.
template <int DTYPE, int HEAD_DIM>
__global__ void __launch_bounds__(HEAD_DIM) paged_decode_merge(const PagedDecodeParams p) {
  const float kNegInf = -__int_as_float(0x7f800000);
  const long long head_row = (long long)blockIdx.x * p.num_q_heads + blockIdx.y;
  const long long split_rows = (long long)p.num_seqs * p.num_q_heads;
  float max_lse = kNegInf;
  for (int s = 0; s < p.num_splits; ++s)
    max_lse = fmaxf(max_lse, p.partial_lse[s * split_rows + head_row]);
  float weighted = 0.0f, total = 0.0f;
  if (max_lse != kNegInf) {
    for (int s = 0; s < p.num_splits; ++s) {
      const float weight = exp2f(p.partial_lse[s * split_rows + head_row] - max_lse);
      weighted = fmaf(weight, p.partial_out[(s * split_rows + head_row) * HEAD_DIM + threadIdx.x],
                      weighted);
      total += weight;
    }
  }
  const float value = total > 0.0f ? weighted / total : 0.0f;
  // Neighbouring threads pair up so each store writes two elements.
  const float neighbour = __shfl_down_sync(0xffffffffu, value, 1);
  if (threadIdx.x % 2 == 0) {
    *reinterpret_cast<unsigned int*>(static_cast<char*>(p.out) +
                                     (head_row * HEAD_DIM + threadIdx.x) * 2) =
        pack2<DTYPE>(value, neighbour);
  }
}

}  // namespace attn
