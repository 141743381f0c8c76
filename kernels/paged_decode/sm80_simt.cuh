// paged_decode.sm80_simt: flash-decoding on CUDA cores over a paged KV cache.
//
// Computes, for each sequence s and query head h (one query token per sequence, the last position),
//   out[s, h] = softmax(softcap(scale * q[s, h] . K[s, j, h / group]) over visible keys j,
//                       plus the head's sink logit in the denominator) V[s, :, h / group]
// where K and V rows are read through the page table: token t of sequence s lives in page
// block_table[s, t / page_size] at slot t % page_size. fp8 caches hold codes; the value is
// code * scale (per tensor or per kv head). A sliding window w leaves the last w keys visible.
//
// Work decomposition (grid = sequences x kv_heads x head_chunks with the KV head fastest, splits):
// - A CTA owns one KV head of one sequence and HEADS_PER_CTA of the query heads that share it, so
//   each K/V byte it loads serves all of those heads (read once per KV head when HEADS_PER_CTA >=
//   the group size).
// - A sequence's visible keys are cut into splits of whole blocks
// (paged_decode::sm80_simt::splits_of): long
//   sequences get many CTAs, short ones one, so uneven batches and single long sequences fill the
//   GPU. A sequence with one split writes `out` directly; otherwise each split writes a normalised
//   partial output and its log-sum-exp and paged_decode_merge combines them.
// - Memory: the CTA streams its keys BLOCK_TOKENS at a time through a STAGES-deep ring of shared
//   memory with cp.async (16-byte copies, coalesced along each row), so STAGES - 1 blocks of K and
//   V are in flight while one is computed; the bytes in flight live in shared memory, not in
//   registers.
// - Compute: a key row is read from shared memory by HEAD_DIM / 8 lanes (8 elements each) of a
//   group of LANES, the next power of two (head dims 80, 96, 192: 10, 12, 24 lanes of 16, 16, 32;
//   the idle lanes hold zeros and add nothing to the group's shuffle sum); the CTA's threads cover
//   TOKEN_ROWS rows at once. Every row group keeps its own online softmax (max,
//   sum, accumulator per head) in registers, so a block needs no barrier besides the pipeline's
//   one; the rows are merged by log-sum-exp once at the end.
//
// Tunables (sm80_simt_traits.hpp): HEADS_PER_CTA, WARPS, BLOCK_TOKENS (keys per stage), STAGES.
#pragma once

#include "kernels/common/convert.cuh"
#include "kernels/common/cp_async.cuh"
#include "kernels/common/warp.cuh"
#include "kernels/paged_decode/paged_decode_params.hpp"
#include "kernels/paged_decode/sm80_simt_traits.hpp"

namespace attn {

namespace paged_decode::sm80_simt_detail {

// Eight KV elements of one row from shared memory, as floats (fp8: scaled by 2^-120).
template <int DTYPE, bool KV_FP8>
__device__ __forceinline__ void load_row8(const unsigned char* address, float (&out)[8]) {
  if constexpr (KV_FP8) {
    unpack8_e4m3_scaled(*reinterpret_cast<const uint2*>(address), out);
  } else {
    unpack8<DTYPE>(*reinterpret_cast<const uint4*>(address), out);
  }
}

// The keys a split covers: [begin, end) inside the visible keys [lo, kv_len).
struct SplitRange {
  int begin, end, count;  // count: splits of this sequence
};

__device__ __forceinline__ SplitRange split_range(const PagedDecodeParams& p, int kv_len, int split,
                                                  int block_tokens) {
  int lo = 0;
  if (p.sliding_window > 0 && kv_len > p.sliding_window) lo = kv_len - p.sliding_window;
  const int visible = kv_len - lo;
  SplitRange r;
  r.count = paged_decode::sm80_simt::splits_of(visible, p.split_tokens, p.num_splits);
  const int size = paged_decode::sm80_simt::split_size(visible, r.count, block_tokens);
  r.begin = min(kv_len, lo + split * size);
  r.end = min(kv_len, r.begin + size);
  return r;
}

}  // namespace paged_decode::sm80_simt_detail

template <int DTYPE, bool KV_FP8, int HEAD_DIM, int HEADS_PER_CTA, int WARPS, int BLOCK_TOKENS,
          int STAGES>
__global__ void __launch_bounds__(WARPS * 32,
                                  paged_decode::sm80_simt::min_ctas_per_sm(WARPS, HEADS_PER_CTA))
    paged_decode_sm80_simt(const PagedDecodeParams p) {
  constexpr int KV_BYTES = KV_FP8 ? 1 : 2;
  static_assert(
      paged_decode::sm80_simt::check(HEAD_DIM, KV_BYTES, HEADS_PER_CTA, WARPS, BLOCK_TOKENS,
                                     STAGES) == paged_decode::sm80_simt::kOk,
      "invalid paged_decode.sm80_simt config: see paged_decode::sm80_simt::check");
  constexpr int THREADS = paged_decode::sm80_simt::threads(WARPS);
  constexpr int LANES = paged_decode::sm80_simt::lanes_per_token(HEAD_DIM);
  constexpr int ACTIVE_LANES = paged_decode::sm80_simt::active_lanes(HEAD_DIM);
  constexpr int ROWS = paged_decode::sm80_simt::token_rows(HEAD_DIM, WARPS);
  constexpr int TPR = paged_decode::sm80_simt::tokens_per_row(HEAD_DIM, WARPS, BLOCK_TOKENS);
  constexpr int ROW_BYTES = paged_decode::sm80_simt::row_bytes(HEAD_DIM, KV_BYTES);
  constexpr int CHUNKS_PER_ROW = ROW_BYTES / 16;
  constexpr int BLOCK_CHUNKS = BLOCK_TOKENS * CHUNKS_PER_ROW;
  constexpr int COPY_ITERS = (BLOCK_CHUNKS + THREADS - 1) / THREADS;
  constexpr int STAGE_BYTES =
      paged_decode::sm80_simt::stage_bytes(HEAD_DIM, KV_BYTES, BLOCK_TOKENS);
  const float kNegInf = -__int_as_float(0x7f800000);

  extern __shared__ __align__(16) unsigned char smem[];

  const int group = p.num_q_heads / p.num_kv_heads;
  // The (KV head, head chunk) pairs of a sequence are consecutive CTAs: neighbouring KV heads,
  // whose rows share 128-byte lines in an NHD cache at head dims 80 and 96, run at the same time
  // and read those lines once between them, from L2.
  const int head_ctas = p.num_kv_heads * p.head_chunks;
  const int head_cta = blockIdx.x % head_ctas;
  const int kv_head = head_cta / p.head_chunks;
  const int first_head_in_group = (head_cta % p.head_chunks) * HEADS_PER_CTA;
  const int heads_here = min(HEADS_PER_CTA, group - first_head_in_group);
  const int q_head0 = kv_head * group + first_head_in_group;
  const int seq = blockIdx.x / head_ctas;
  const int split = blockIdx.z;
  const int lane = threadIdx.x % LANES;  // which 8 elements of a row
  const int row = threadIdx.x / LANES;   // which key row of a block (plus multiples of ROWS)
  // Lanes past the row's HEAD_DIM / 8 (only where that is not a power of two) read and write
  // nothing; their q and accumulator stay zero. Compile-time true for 64, 128 and 256.
  const bool lane_active = ACTIVE_LANES == LANES || lane < ACTIVE_LANES;

  const int kv_len = p.kv_lens[seq];
  const paged_decode::sm80_simt_detail::SplitRange range =
      paged_decode::sm80_simt_detail::split_range(p, kv_len, split, BLOCK_TOKENS);
  if (split >= range.count) return;  // the merge reads only this sequence's splits
  const int key_begin = range.begin, key_end = range.end;
  const bool direct = range.count == 1;

  // q of each head, scaled (softmax scale, log2(e) unless soft-capped, fp8: k scale * 2^120).
  const float q_mult = p.q_scale * (KV_FP8 ? p.k_scale[kv_head] : 1.0f);
  float q[HEADS_PER_CTA][8];
#pragma unroll
  for (int g = 0; g < HEADS_PER_CTA; ++g) {
    if (g < heads_here && lane_active) {
      const char* q_row = static_cast<const char*>(p.q) +
                          ((long long)seq * p.num_q_heads + q_head0 + g) * HEAD_DIM * 2;
      unpack8<DTYPE>(load_16B_readonly(q_row + lane * 16), q[g]);
#pragma unroll
      for (int e = 0; e < 8; ++e) q[g][e] *= q_mult;
    } else {
#pragma unroll
      for (int e = 0; e < 8; ++e) q[g][e] = 0.0f;
    }
  }
  float acc[HEADS_PER_CTA][8], row_max[HEADS_PER_CTA], row_sum[HEADS_PER_CTA];
#pragma unroll
  for (int g = 0; g < HEADS_PER_CTA; ++g) {
    row_max[g] = kNegInf;
    row_sum[g] = 0.0f;
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[g][e] = 0.0f;
  }

  const int* pages = p.block_table + (long long)seq * p.max_pages_per_seq;
  const unsigned char* k_head =
      static_cast<const unsigned char*>(p.k_pool) + kv_head * p.head_stride * KV_BYTES;
  const unsigned char* v_head =
      static_cast<const unsigned char*>(p.v_pool) + kv_head * p.head_stride * KV_BYTES;
  const int n_blocks = (key_end - key_begin + BLOCK_TOKENS - 1) / BLOCK_TOKENS;

  // Page ids of the rows this thread copies, loaded one block ahead of the copies that use them so
  // the page-table read's latency never stalls the copy issue (page size 1: one id per key).
  auto fetch_pages = [&](int b, int(&ids)[COPY_ITERS]) {
    const int token0 = key_begin + b * BLOCK_TOKENS;
#pragma unroll
    for (int i = 0; i < COPY_ITERS; ++i) {
      const int t = token0 + (threadIdx.x + i * THREADS) / CHUNKS_PER_ROW;
      ids[i] = 0;
      if (b < n_blocks && t < key_end)
        ids[i] = __ldg(pages + (p.page_shift >= 0 ? t >> p.page_shift : t / p.page_size));
    }
  };
  // Issues block b's K and V rows into its stage; keys past key_end are zero-filled.
  auto issue = [&](int b, const int(&ids)[COPY_ITERS]) {
    unsigned char* k_dst = smem + (b % STAGES) * STAGE_BYTES;
    unsigned char* v_dst = k_dst + BLOCK_TOKENS * ROW_BYTES;
    const int token0 = key_begin + b * BLOCK_TOKENS;
#pragma unroll
    for (int i = 0; i < COPY_ITERS; ++i) {
      const int c = threadIdx.x + i * THREADS;
      if (BLOCK_CHUNKS % THREADS == 0 || c < BLOCK_CHUNKS) {
        const int r = c / CHUNKS_PER_ROW, col = c % CHUNKS_PER_ROW;
        const int t = token0 + r;
        const bool valid = t < key_end;
        long long offset = 0;
        if (valid) {
          const int slot = p.page_shift >= 0 ? t & (p.page_size - 1) : t % p.page_size;
          offset = (ids[i] * p.page_stride + slot * p.token_stride) * KV_BYTES;
        }
        cp_async_16(k_dst + r * ROW_BYTES + col * 16, k_head + offset + col * 16, valid);
        cp_async_16(v_dst + r * ROW_BYTES + col * 16, v_head + offset + col * 16, valid);
      }
    }
  };

  int ids[COPY_ITERS];
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < n_blocks) {
      fetch_pages(s, ids);
      issue(s, ids);
    }
    cp_async_commit();
  }
  fetch_pages(STAGES - 1, ids);

  for (int b = 0; b < n_blocks; ++b) {
    cp_async_wait<STAGES - 2>();
    __syncthreads();  // block b is in shared memory; every thread is done with block b - 1
    if (b + STAGES - 1 < n_blocks) {
      issue(b + STAGES - 1, ids);
      fetch_pages(b + STAGES, ids);
    }
    cp_async_commit();

    const unsigned char* k_src = smem + (b % STAGES) * STAGE_BYTES;
    const unsigned char* v_src = k_src + BLOCK_TOKENS * ROW_BYTES;
    const int token0 = key_begin + b * BLOCK_TOKENS;

    // Scores of this thread's rows, every lane of a row holding the full dot product.
    float score[TPR][HEADS_PER_CTA];
#pragma unroll
    for (int i = 0; i < TPR; ++i) {
      const int r = row + i * ROWS;
      float k[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      if (lane_active)
        paged_decode::sm80_simt_detail::load_row8<DTYPE, KV_FP8>(
            k_src + r * ROW_BYTES + lane * 8 * KV_BYTES, k);
#pragma unroll
      for (int g = 0; g < HEADS_PER_CTA; ++g) {
        float dot = 0.0f;
#pragma unroll
        for (int e = 0; e < 8; ++e) dot = fmaf(q[g][e], k[e], dot);
        score[i][g] = group_sum<LANES>(dot);
      }
    }
#pragma unroll
    for (int i = 0; i < TPR; ++i) {
      const bool valid = token0 + row + i * ROWS < key_end;
#pragma unroll
      for (int g = 0; g < HEADS_PER_CTA; ++g) {
        float s = score[i][g];
        if (p.soft_cap > 0.0f) {
          // cap * tanh(x / cap) in the log2 domain; tanh(y) = 1 - 2 / (exp(2y) + 1).
          const float e2y = __expf(2.0f * s / p.soft_cap);
          s = p.soft_cap_log2 * (1.0f - 2.0f / (e2y + 1.0f));
        }
        score[i][g] = valid ? s : kNegInf;
      }
    }

    // Online softmax per head for this row group, then the probability-weighted values.
#pragma unroll
    for (int g = 0; g < HEADS_PER_CTA; ++g) {
      float block_max = score[0][g];
#pragma unroll
      for (int i = 1; i < TPR; ++i) block_max = fmaxf(block_max, score[i][g]);
      const float new_max = fmaxf(row_max[g], block_max);
      const float base = new_max == kNegInf ? 0.0f : new_max;  // no valid key yet
      const float factor = exp2f(row_max[g] - base);           // 0 while row_max is -inf
      float block_sum = 0.0f;
#pragma unroll
      for (int i = 0; i < TPR; ++i) {
        const float prob = exp2f(score[i][g] - base);
        block_sum += prob;
        score[i][g] = KV_FP8 ? prob * 1.329227995784916e36f : prob;  // fp8: * 2^120
      }
      row_sum[g] = row_sum[g] * factor + block_sum;
      row_max[g] = new_max;
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[g][e] *= factor;
    }
#pragma unroll
    for (int i = 0; i < TPR; ++i) {
      const int r = row + i * ROWS;
      float v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      if (lane_active)
        paged_decode::sm80_simt_detail::load_row8<DTYPE, KV_FP8>(
            v_src + r * ROW_BYTES + lane * 8 * KV_BYTES, v);
#pragma unroll
      for (int g = 0; g < HEADS_PER_CTA; ++g) {
#pragma unroll
        for (int e = 0; e < 8; ++e) acc[g][e] = fmaf(score[i][g], v[e], acc[g][e]);
      }
    }
  }

  // Merge the row groups by log-sum-exp through shared memory (the pipeline's, now idle).
  cp_async_wait<0>();
  __syncthreads();
  float* red_acc = reinterpret_cast<float*>(smem);             // [ROWS][HEADS][HEAD_DIM]
  float* red_max = red_acc + ROWS * HEADS_PER_CTA * HEAD_DIM;  // [ROWS][HEADS]
  float* red_sum = red_max + ROWS * HEADS_PER_CTA;             // [ROWS][HEADS]
#pragma unroll
  for (int g = 0; g < HEADS_PER_CTA; ++g) {
    if (lane_active) {
      float4* dst =
          reinterpret_cast<float4*>(red_acc + (row * HEADS_PER_CTA + g) * HEAD_DIM + lane * 8);
      dst[0] = make_float4(acc[g][0], acc[g][1], acc[g][2], acc[g][3]);
      dst[1] = make_float4(acc[g][4], acc[g][5], acc[g][6], acc[g][7]);
    }
    if (lane == 0) {
      red_max[row * HEADS_PER_CTA + g] = row_max[g];
      red_sum[row * HEADS_PER_CTA + g] = row_sum[g];
    }
  }
  __syncthreads();

  const float v_mult = KV_FP8 ? p.v_scale[kv_head] : 1.0f;
  // Each item: 8 consecutive output elements of one head.
  constexpr int ITEMS = HEADS_PER_CTA * HEAD_DIM / 8;
  for (int item = threadIdx.x; item < ITEMS; item += THREADS) {
    const int g = item / (HEAD_DIM / 8);
    const int d0 = (item % (HEAD_DIM / 8)) * 8;
    if (g >= heads_here) continue;
    float m = kNegInf;
#pragma unroll
    for (int r = 0; r < ROWS; ++r) m = fmaxf(m, red_max[r * HEADS_PER_CTA + g]);
    float sum = 0.0f, result[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    if (m != kNegInf) {
#pragma unroll
      for (int r = 0; r < ROWS; ++r) {
        const float w = exp2f(red_max[r * HEADS_PER_CTA + g] - m);
        sum = fmaf(red_sum[r * HEADS_PER_CTA + g], w, sum);
        const float* src = red_acc + (r * HEADS_PER_CTA + g) * HEAD_DIM + d0;
#pragma unroll
        for (int e = 0; e < 8; ++e) result[e] = fmaf(src[e], w, result[e]);
      }
    }
    const int q_head = q_head0 + g;
    const long long head_row = (long long)seq * p.num_q_heads + q_head;
    if (direct) {
      float denominator = sum;
      if (p.has_sinks && sum > 0.0f) denominator += exp2f(p.sink_log2[q_head] - m);
      const float inv = sum > 0.0f ? v_mult / denominator : 0.0f;  // no keys: output zero
#pragma unroll
      for (int e = 0; e < 8; ++e) result[e] *= inv;
      *reinterpret_cast<uint4*>(static_cast<char*>(p.out) + (head_row * HEAD_DIM + d0) * 2) =
          pack8<DTYPE>(result);
    } else {
      const float inv = sum > 0.0f ? v_mult / sum : 0.0f;
      const long long split_row = (long long)split * p.num_seqs * p.num_q_heads + head_row;
      float4* dst = reinterpret_cast<float4*>(p.partial_out + split_row * HEAD_DIM + d0);
      dst[0] = make_float4(result[0] * inv, result[1] * inv, result[2] * inv, result[3] * inv);
      dst[1] = make_float4(result[4] * inv, result[5] * inv, result[6] * inv, result[7] * inv);
      if (d0 == 0) p.partial_lse[split_row] = sum > 0.0f ? m + log2f(sum) : kNegInf;
    }
  }
}

// Combines the splits of sequences that have more than one: out = sum_s w_s * partial_s /
// (sum_s w_s + sink) with w_s = 2^(lse_s - max lse), sink = 2^(sink - max lse) when the head has
// one. Grid (num_seqs, num_q_heads), HEAD_DIM / 2 threads of two elements each.
template <int DTYPE, int HEAD_DIM, int BLOCK_TOKENS>
__global__ void __launch_bounds__(HEAD_DIM / 2) paged_decode_merge(const PagedDecodeParams p) {
  const float kNegInf = -__int_as_float(0x7f800000);
  const int seq = blockIdx.x;
  const int count =
      paged_decode::sm80_simt_detail::split_range(p, p.kv_lens[seq], 0, BLOCK_TOKENS).count;
  if (count == 1) return;  // written directly
  const long long head_row = (long long)seq * p.num_q_heads + blockIdx.y;
  const long long split_rows = (long long)p.num_seqs * p.num_q_heads;
  float max_lse = kNegInf;
  for (int s = 0; s < count; ++s)
    max_lse = fmaxf(max_lse, p.partial_lse[s * split_rows + head_row]);
  float2 weighted = make_float2(0.0f, 0.0f);
  float total = 0.0f;
  if (max_lse != kNegInf) {
    for (int s = 0; s < count; ++s) {
      const float lse = p.partial_lse[s * split_rows + head_row];
      if (lse == kNegInf) continue;  // an empty split wrote no partial output
      const float weight = exp2f(lse - max_lse);
      const float2 part = reinterpret_cast<const float2*>(
          p.partial_out + (s * split_rows + head_row) * HEAD_DIM)[threadIdx.x];
      weighted.x = fmaf(weight, part.x, weighted.x);
      weighted.y = fmaf(weight, part.y, weighted.y);
      total += weight;
    }
    if (p.has_sinks) total += exp2f(p.sink_log2[blockIdx.y] - max_lse);
  }
  const float inv = total > 0.0f ? 1.0f / total : 0.0f;
  *reinterpret_cast<unsigned int*>(static_cast<char*>(p.out) +
                                   (head_row * HEAD_DIM + threadIdx.x * 2) * 2) =
      pack2<DTYPE>(weighted.x * inv, weighted.y * inv);
}

}  // namespace attn
