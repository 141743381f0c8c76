// paged_decode.tensorcore: flash-decoding on the tensor cores (mma.sync m16n8k16) over a paged KV
// cache, for GQA.
//
// Computes, for each sequence s and query head h (one query token per sequence, at position
// kv_len - 1),
//   out[s, h] = softmax(logits(q[s, h] . K[s, :, h / group]) [+ sink]) V[s, :, h / group]
// where K and V rows are read through the page table: token t of sequence s lives in page
// block_table[s, t / page_size] at slot t % page_size. logits() scales, and soft-caps when asked;
// a sliding window keeps the last w keys; a sink logit joins the denominator with no value.
//
// Work decomposition (a 1-D grid over a host-built work list):
// - A CTA owns one KV head of one split of one sequence and all `group` query heads that share
//   it: the q heads are the M rows of 16 x 8 x 16 mma tiles (rows past the group are zero
//   padding), so each K/V byte is read from memory once per KV head, whatever the GQA ratio.
// - The sequence's visible keys are cut into compute blocks of BLOCK_TOKENS keys; a block spans
//   several pages or part of one (every key row is addressed through the block table). Each
//   sequence's blocks are dealt to its own number of contiguous splits (split-KV), chosen on the
//   host so that long and short sequences give CTAs of similar work; the work list runs the
//   longest splits first. A split of a multi-split sequence writes a normalised partial output
//   and its log2-sum-exp; the last of the sequence's CTAs to finish (an atomic count per
//   sequence and KV head) merges them, so there is no second kernel. With one split the CTA
//   writes `out` itself.
// - K and V of a block stream into one of STAGES shared-memory buffers with cp.async while
//   earlier blocks are computed. Rows are padded by 16 bytes so ldmatrix is bank-conflict free.
//   Each warp copies the rows it computes, so the pipeline needs no barrier between warps.
// - Each warp owns WARP_TOKENS = BLOCK_TOKENS / WARPS keys of every block and keeps its own online
//   softmax state (row max and sum in the log2 domain, fp32 output accumulator in registers):
//   S = Q K^T with K fragments from ldmatrix (Q's stay in registers up to head dim 128), then
//   P (16-bit, from S's accumulators) times V with V fragments from ldmatrix.trans. No barrier between warps inside a block; their states
//   are merged once through shared memory at the end.
//
// Tunables and why they exist:
//   BLOCK_TOKENS  keys per compute block (per pipeline stage): bytes in flight per stage vs
//                 shared memory and registers
//   WARPS         threads per CTA: key slices computed in parallel vs CTAs per SM
//   STAGES        pipeline depth: blocks in flight while one is computed
//   num_splits    (host) split-KV count per sequence; 0 = auto, by length, to fill the GPU
#pragma once

#include "kernels/common/convert.cuh"
#include "kernels/common/cp_async.cuh"
#include "kernels/common/mma_sm80.cuh"
#include "kernels/paged_decode/tensorcore_params.hpp"
#include "kernels/paged_decode/tensorcore_traits.hpp"

namespace attn {

template <int DTYPE, int HEAD_DIM, int WARPS, int BLOCK_TOKENS, int STAGES>
__global__ void __launch_bounds__(WARPS * 32) paged_decode_tensorcore(const TensorCoreParams p) {
  static_assert(tensorcore::check(HEAD_DIM, WARPS, BLOCK_TOKENS, STAGES) == tensorcore::kOk,
                "invalid paged_decode.tensorcore config: see tensorcore::check");
  constexpr int THREADS = tensorcore::threads(WARPS);
  constexpr int ROW = tensorcore::row_elements(HEAD_DIM);  // padded smem row, 16-bit elements
  constexpr int M = tensorcore::kMmaRows;
  constexpr int WARP_TOKENS = tensorcore::warp_tokens(WARPS, BLOCK_TOKENS);
  constexpr int S_TILES = WARP_TOKENS / 8;  // n8 tiles of the warp's scores
  constexpr int D_TILES = HEAD_DIM / 8;     // n8 tiles of the output
  constexpr int K_STEPS = HEAD_DIM / 16;    // k16 steps of Q.K
  constexpr int CHUNKS = HEAD_DIM / 8;      // 16-byte chunks of a row
  constexpr int ROWS_PER_PASS = 32 / CHUNKS;  // rows one warp copies per pass
  constexpr int PASSES = WARP_TOKENS / ROWS_PER_PASS;
  constexpr int TILE = BLOCK_TOKENS * ROW;  // one K or V buffer, elements
  constexpr bool Q_IN_REGISTERS = HEAD_DIM <= tensorcore::kMaxHeadDimQInRegisters;
  constexpr int Q_STEPS = Q_IN_REGISTERS ? K_STEPS : 1;
  static_assert(32 % CHUNKS == 0 && WARP_TOKENS % ROWS_PER_PASS == 0, "copy pattern");
  static_assert(tensorcore::merge_bytes(HEAD_DIM, WARPS) <= STAGES * 2 * TILE * 2 &&
                    tensorcore::split_merge_bytes() <= STAGES * 2 * TILE * 2,
                "the cross-warp and split merges reuse the stage buffers");
  const float kNegInf = -__int_as_float(0x7f800000);

  // [STAGES][K, V][BLOCK_TOKENS][ROW], then Q [M][ROW]. After the key loop the stage buffers hold
  // the cross-warp merge: outputs [WARPS][M][HEAD_DIM], maxima and sums [WARPS][M] (floats), and
  // after that the split merge's weights.
  extern __shared__ __align__(16) unsigned short smem[];
  unsigned short* q_tile = smem + STAGES * 2 * TILE;
  __shared__ int merge_here;

  const int item = blockIdx.x / p.num_kv_heads, kv_head = blockIdx.x % p.num_kv_heads;
  const int seq = p.work[2 * item], split = p.work[2 * item + 1];
  const int num_splits = p.seq_splits[seq];
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int q_head0 = kv_head * p.group;

  // Visible keys [first_key, kv_len): the window keeps the last sliding_window of them. Blocks
  // start at first_key, so no key before it is ever loaded.
  const int kv_len = p.kv_lens[seq];
  const int first_key =
      (p.sliding_window > 0 && kv_len > p.sliding_window) ? kv_len - p.sliding_window : 0;
  const int blocks = max(0, kv_len - first_key + BLOCK_TOKENS - 1) / BLOCK_TOKENS;
  const int blocks_per_split = (blocks + num_splits - 1) / num_splits;
  const int block_begin = min(blocks, split * blocks_per_split);
  const int block_end = min(blocks, block_begin + blocks_per_split);

  // Copy pattern: each warp copies its own WARP_TOKENS rows of every block (the rows it computes),
  // so a stage needs no barrier between warps: lane copies chunk (lane % CHUNKS) of the warp's
  // rows lane / CHUNKS + i * ROWS_PER_PASS. Page numbers of the block after next are fetched from
  // the block table one iteration ahead (their latency hides behind the current block's compute),
  // and the row's page and slot advance by increments instead of a division per row.
  const int* pages = p.block_table + (long long)seq * p.max_pages_per_seq;
  const int copy_col = (lane % CHUNKS) * 8;
  const int copy_row = warp * WARP_TOKENS + lane / CHUNKS;
  const char* k_head =
      static_cast<const char*>(p.k_pool) + (kv_head * p.head_stride + copy_col) * 2;
  const char* v_head =
      static_cast<const char*>(p.v_pool) + (kv_head * p.head_stride + copy_col) * 2;
  // Rows of a block: page and slot advance from the first row's by increments (one division).
  // Page numbers of the next block to copy are held in registers where that costs few of them.
  constexpr bool PREFETCH = PASSES <= 8;
  int next_page[PASSES];
  auto fetch_pages = [&](int block) {
    const int t0 = first_key + block * BLOCK_TOKENS + copy_row;
    int page = t0 / p.page_size, slot = t0 - page * p.page_size;
#pragma unroll
    for (int i = 0; i < PASSES; ++i) {
      next_page[i] = t0 + i * ROWS_PER_PASS < kv_len ? pages[page] : 0;
      slot += ROWS_PER_PASS;
      while (slot >= p.page_size) {
        slot -= p.page_size;
        ++page;
      }
    }
  };
  auto load_block = [&](int block, int stage) {
    unsigned short* k_dst = smem + stage * 2 * TILE + copy_row * ROW + copy_col;
    unsigned short* v_dst = k_dst + TILE;
    const int t0 = first_key + block * BLOCK_TOKENS + copy_row;
    int page = t0 / p.page_size, slot = t0 - page * p.page_size;
#pragma unroll
    for (int i = 0; i < PASSES; ++i) {
      const bool valid = t0 + i * ROWS_PER_PASS < kv_len;
      long long offset = 0;  // invalid rows: an in-bounds address that is not read
      if (valid) {
        const int physical = PREFETCH ? next_page[i] : pages[page];
        offset = (long long)physical * p.page_stride + (long long)slot * p.token_stride;
      }
      // A row's 16 lanes read its 256 bytes together: one 128-byte L2 fetch per half row (1.8%
      // faster than 32-byte sectors on 64 x 4096 on an H200).
      cp_async_16_prefetch<128>(k_dst + i * ROWS_PER_PASS * ROW, k_head + offset * 2, valid);
      cp_async_16_prefetch<128>(v_dst + i * ROWS_PER_PASS * ROW, v_head + offset * 2, valid);
      slot += ROWS_PER_PASS;
      while (slot >= p.page_size) {
        slot -= p.page_size;
        ++page;
      }
    }
  };

  // Prologue: STAGES - 1 blocks in flight, then Q (in the first group, so the first wait covers
  // it). Every stage commits a group (possibly empty) so the wait count below stays exact.
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (block_begin + s < block_end) {
      if (PREFETCH) fetch_pages(block_begin + s);
      load_block(block_begin + s, s);
    }
    if (s == 0) {
      // Q rows of the group; padding rows are zero (their scores are 0, finite, never written).
      for (int c = tid; c < M * CHUNKS; c += THREADS) {
        const int r = c / CHUNKS, col = (c % CHUNKS) * 8;
        const bool valid = r < p.group;
        const long long row = valid ? (long long)seq * p.num_q_heads + q_head0 + r : 0;
        cp_async_16(q_tile + r * ROW + col,
                    static_cast<const char*>(p.q) + (row * HEAD_DIM + col) * 2, valid);
      }
    }
    cp_async_commit();
  }
  if (PREFETCH && block_begin + STAGES - 1 < block_end) fetch_pages(block_begin + STAGES - 1);

  // This lane's rows of the accumulators: r0 = lane / 4 and r0 + 8.
  float o[D_TILES][4];
#pragma unroll
  for (int n = 0; n < D_TILES; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
  float row_max[2] = {kNegInf, kNegInf};  // log2 domain
  float row_sum[2] = {0.0f, 0.0f};        // this lane's columns only; summed over lanes at the end

  // ldmatrix row addresses (lane l names a row of matrix l / 8).
  const unsigned short* q_frag = q_tile + (lane % 16) * ROW + (lane / 16) * 8;
  const int k_frag = ((lane / 16) * 8 + lane % 8) * ROW + ((lane / 8) % 2) * 8;
  const int v_frag = (lane % 16) * ROW + (lane / 16) * 8;
  unsigned int q_a[Q_STEPS][4];  // Q's A fragments, loaded once (head dims up to 128)

  for (int block = block_begin; block < block_end; ++block) {
    const int i = block - block_begin;
    cp_async_wait<STAGES - 2>();
    if (i == 0) {
      __syncthreads();  // Q, copied by every warp, visible to all
      if constexpr (Q_IN_REGISTERS) {
#pragma unroll
        for (int ks = 0; ks < K_STEPS; ++ks) ldmatrix_x4(q_a[ks], q_frag + ks * 16);
      }
    } else {
      __syncwarp();  // the warp's copies of this block visible to all its lanes; block - 1 consumed
    }
    if (block + STAGES - 1 < block_end) load_block(block + STAGES - 1, (i + STAGES - 1) % STAGES);
    cp_async_commit();
    if (PREFETCH && block + STAGES < block_end) fetch_pages(block + STAGES);

    const unsigned short* k_tile = smem + (i % STAGES) * 2 * TILE + warp * WARP_TOKENS * ROW;
    const unsigned short* v_tile = k_tile + TILE;

    // S = Q K^T over the warp's keys: [16 heads x WARP_TOKENS keys].
    float s[S_TILES][4];
#pragma unroll
    for (int j = 0; j < S_TILES; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
#pragma unroll
    for (int ks = 0; ks < K_STEPS; ++ks) {
      unsigned int a_reread[4];
      if constexpr (!Q_IN_REGISTERS) ldmatrix_x4(a_reread, q_frag + ks * 16);
      const unsigned int(&a)[4] = Q_IN_REGISTERS ? q_a[ks % Q_STEPS] : a_reread;
#pragma unroll
      for (int pair = 0; pair < S_TILES / 2; ++pair) {
        unsigned int b[4];  // keys pair*16 .. +7 and +8 .. +15, dims ks*16 .. +15
        ldmatrix_x4(b, k_tile + pair * 16 * ROW + k_frag + ks * 16);
        mma_m16n8k16<DTYPE>(s[2 * pair], a, b[0], b[1]);
        mma_m16n8k16<DTYPE>(s[2 * pair + 1], a, b[2], b[3]);
      }
    }

    // Logits (log2 domain), the end-of-sequence mask, and this block's row maxima.
    const int warp_key0 = first_key + block * BLOCK_TOKENS + warp * WARP_TOKENS;
    float tile_max[2] = {kNegInf, kNegInf};
#pragma unroll
    for (int j = 0; j < S_TILES; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int t = warp_key0 + j * 8 + 2 * (lane % 4) + (e & 1);
        float x = s[j][e] * p.score_scale;
        if (p.cap_log2 > 0.0f) x = p.cap_log2 * tanhf(x);
        if (t >= kv_len) x = kNegInf;
        s[j][e] = x;
        tile_max[e / 2] = fmaxf(tile_max[e / 2], x);
      }
    }
    float base[2], alpha[2];
    bool grew = false;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      // The 4 lanes of a quad hold one row.
      tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 1));
      tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 2));
      const float new_max = fmaxf(row_max[r], tile_max[r]);
      base[r] = new_max == kNegInf ? 0.0f : new_max;  // no key yet: avoid -inf - -inf
      alpha[r] = exp2f(row_max[r] - base[r]);         // 0 while the row had no key
      grew |= new_max != row_max[r];
      row_max[r] = new_max;
      row_sum[r] *= alpha[r];
    }
    // Rescale the output only when some row's maximum grew (after the first blocks it rarely
    // does); the test is warp-uniform, so the lanes stay converged.
    if (__any_sync(0xffffffffu, grew)) {
#pragma unroll
      for (int n = 0; n < D_TILES; ++n) {
        o[n][0] *= alpha[0];
        o[n][1] *= alpha[0];
        o[n][2] *= alpha[1];
        o[n][3] *= alpha[1];
      }
    }

    // P = 2^(S - max), then O += P V; P's accumulator layout is the A fragment layout of the
    // next mma (two n8 tiles of S make one k16 slice of P).
#pragma unroll
    for (int kc = 0; kc < S_TILES / 2; ++kc) {
      float prob[2][4];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          prob[h][e] = exp2f(s[2 * kc + h][e] - base[e / 2]);
          row_sum[e / 2] += prob[h][e];
        }
      }
      unsigned int a[4];
      a[0] = pack2<DTYPE>(prob[0][0], prob[0][1]);
      a[1] = pack2<DTYPE>(prob[0][2], prob[0][3]);
      a[2] = pack2<DTYPE>(prob[1][0], prob[1][1]);
      a[3] = pack2<DTYPE>(prob[1][2], prob[1][3]);
#pragma unroll
      for (int dp = 0; dp < D_TILES / 2; ++dp) {
        unsigned int b[4];  // keys kc*16 .. +15, dims dp*16 .. +7 and +8 .. +15
        ldmatrix_x4_trans(b, v_tile + kc * 16 * ROW + v_frag + dp * 16);
        mma_m16n8k16<DTYPE>(o[2 * dp], a, b[0], b[1]);
        mma_m16n8k16<DTYPE>(o[2 * dp + 1], a, b[2], b[3]);
      }
    }
  }
  cp_async_wait<0>();
  __syncthreads();  // the stage buffers become the merge area

  // Merge the warps' states: each warp's output, max and sum per row into shared memory.
  float* merge_out = reinterpret_cast<float*>(smem);    // [WARPS][M][HEAD_DIM]
  float* merge_max = merge_out + WARPS * M * HEAD_DIM;  // [WARPS][M]
  float* merge_sum = merge_max + WARPS * M;             // [WARPS][M]
  const int r0 = lane / 4;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    row_sum[r] += __shfl_xor_sync(0xffffffffu, row_sum[r], 1);
    row_sum[r] += __shfl_xor_sync(0xffffffffu, row_sum[r], 2);
    float* dst = merge_out + (warp * M + r0 + 8 * r) * HEAD_DIM + 2 * (lane % 4);
#pragma unroll
    for (int n = 0; n < D_TILES; ++n)
      *reinterpret_cast<float2*>(dst + n * 8) = make_float2(o[n][2 * r], o[n][2 * r + 1]);
    if (lane % 4 == 0) {
      merge_max[warp * M + r0 + 8 * r] = row_max[r];
      merge_sum[warp * M + r0 + 8 * r] = row_sum[r];
    }
  }
  __syncthreads();

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
  __syncthreads();  // every thread's rows published; the cross-warp merge area is free
  int* counter = p.split_counters + (long long)seq * p.num_kv_heads + kv_head;
  if (tid == 0) merge_here = atomicAdd(counter, 1) == num_splits - 1;
  __syncthreads();
  if (!merge_here) return;
  __threadfence();  // the other splits' rows are read after their count was seen
  float* weight = reinterpret_cast<float*>(smem);  // [kMaxSplits][M], normalised
  float* row_top = weight + tensorcore::kMaxSplits * M;  // [M]
  float* row_inv = row_top + M;                          // [M]
  const long long first_row = (long long)p.seq_partial[seq] * p.num_q_heads + q_head0;
  for (int idx = tid; idx < num_splits * p.group; idx += THREADS) {
    const int s = idx / p.group, r = idx % p.group;
    weight[s * M + r] = __ldcg(p.partial_lse + first_row + (long long)s * p.num_q_heads + r);
  }
  __syncthreads();
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
  __syncthreads();
  for (int idx = tid; idx < num_splits * p.group; idx += THREADS) {
    const int s = idx / p.group, r = idx % p.group;
    weight[s * M + r] = row_inv[r] > 0.0f ? exp2f(weight[s * M + r] - row_top[r]) * row_inv[r] : 0.0f;
  }
  __syncthreads();
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

}  // namespace attn
