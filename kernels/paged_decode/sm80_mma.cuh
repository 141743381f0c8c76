// paged_decode.sm80_mma: flash-decoding on the tensor cores (mma.sync m16n8k16) over a paged KV
// cache, for GQA.
//
// Computes, for each sequence s and query head h (one query token per sequence, at position
// kv_len - 1),
//   out[s, h] = softmax(logits(q[s, h] . K[s, :, h / group]) [+ sink]) V[s, :, h / group]
// where K and V rows are read through the page table: token t of sequence s lives in page
// block_table[s, t / page_size] at slot t % page_size. logits() scales, and soft-caps when asked;
// a sliding window keeps the last w keys; a sink logit joins the denominator with no value.
//
// Work decomposition (a 1-D grid over a host-built work list, decode_work_plan.hpp):
// - A CTA owns one KV head and all `group` query heads that share it, over its segments (chunks
//   of sequences, in order), so each K/V byte is read from memory once per KV head, whatever the
//   GQA ratio. Groups of more than 8 q heads are the M rows of 16 x 8 x 16 mma tiles (rows past
//   the group are zero padding: sm80_mma_block.cuh); groups of up to 8 are the N columns of the
//   transposed products S^T = K Q^T and O^T += V^T P^T (KEY_ROWS: sm80_mma_block_key_rows.cuh),
//   which leave no row idle. (paged_decode.sm90_tma keeps the head-rows form: on an H200 the
//   key-rows form was slower there, g8-d128-64x4096 266.37 against 278.94 us.)
// - The sequence's visible keys are cut into compute blocks of BLOCK_TOKENS keys; a block spans
//   several pages or part of one (every key row is addressed through the block table). The host
//   lays the sequences' blocks end to end and gives each CTA of one wave the same number of them
//   (a CTA may finish one sequence and start the next), or, with a fixed split count, one equal
//   split per CTA. A chunk of a sequence cut into several writes a normalised partial output and
//   its log2-sum-exp; the last of the sequence's CTAs to finish (an atomic count per sequence and
//   KV head) merges them, so there is no second kernel. A sequence in one chunk is written to
//   `out` directly.
// - K and V of a block stream into one of STAGES shared-memory buffers with cp.async while
//   earlier blocks are computed. Rows are padded by 16 bytes so ldmatrix is bank-conflict free.
//   Each warp copies the rows it computes, so the pipeline needs no barrier between warps.
// - Each warp owns WARP_TOKENS = BLOCK_TOKENS / WARPS keys of every block and keeps its own online
//   softmax state (row max and sum in the log2 domain, fp32 output accumulator in registers):
//   S = Q K^T with K fragments from ldmatrix (Q's stay in registers up to head dim 128), then
//   P (16-bit, from S's accumulators) times V with V fragments from ldmatrix.trans. No barrier
//   between warps inside a block; their states are merged once through shared memory at the end.
//
// Tunables and why they exist:
//   BLOCK_TOKENS  keys per compute block (per pipeline stage): bytes in flight per stage vs
//                 shared memory and registers
//   WARPS         threads per CTA: key slices computed in parallel vs CTAs per SM
//   STAGES        pipeline depth: blocks in flight while one is computed
//   num_splits    (host) split-KV count per sequence; 0 = auto, by length, to fill the GPU
//
// The per-block compute (sm80_mma_block.cuh) and the end of the CTA (sm80_mma_epilogue.cuh)
// are shared with paged_decode.sm90_tma, which loads the same tiles with TMA.
#pragma once

#include "kernels/common/convert.cuh"
#include "kernels/common/cp_async.cuh"
#include "kernels/paged_decode/sm80_mma_block.cuh"
#include "kernels/paged_decode/sm80_mma_block_key_rows.cuh"
#include "kernels/paged_decode/sm80_mma_epilogue.cuh"
#include "kernels/paged_decode/sm80_mma_params.hpp"
#include "kernels/paged_decode/sm80_mma_traits.hpp"

namespace attn {

template <int DTYPE, bool KV_FP8, int HEAD_DIM, int WARPS, int BLOCK_TOKENS, int STAGES,
          bool KEY_ROWS>
__global__ void __launch_bounds__(WARPS * 32, KEY_ROWS ? 1 : 0)
    paged_decode_sm80_mma(const Sm80MmaParams p) {
  constexpr int KV_BYTES = KV_FP8 ? 1 : 2;
  static_assert(paged_decode::sm80_mma::check(HEAD_DIM, WARPS, BLOCK_TOKENS, STAGES, KV_BYTES) ==
                    paged_decode::sm80_mma::kOk,
                "invalid paged_decode.sm80_mma config: see paged_decode::sm80_mma::check");
  // fp8 K/V codes are converted exactly to f16, so the products run in f16 (Q converted once).
  constexpr int MMA_DTYPE = KV_FP8 ? kDTypeFp16 : DTYPE;
  constexpr int THREADS = paged_decode::sm80_mma::threads(WARPS);
  constexpr int ROW_BYTES =
      paged_decode::sm80_mma::row_bytes(HEAD_DIM, KV_BYTES);  // padded K/V smem row
  constexpr int ROW =
      paged_decode::sm80_mma::row_elements(HEAD_DIM);  // padded Q smem row, 16-bit elements
  constexpr int M = paged_decode::sm80_mma::kMmaRows;
  constexpr int WARP_TOKENS = paged_decode::sm80_mma::warp_tokens(WARPS, BLOCK_TOKENS);
  // 16-byte chunks of a K/V row, copied by a group of COPY_LANES lanes (the next power of two;
  // the group's extra lanes copy nothing at head dims 80, 96 and 192).
  constexpr int CHUNKS = paged_decode::sm80_mma::copy_chunks(HEAD_DIM, KV_BYTES);
  constexpr int COPY_LANES = paged_decode::sm80_mma::copy_lanes(HEAD_DIM, KV_BYTES);
  constexpr int ROWS_PER_PASS = 32 / COPY_LANES;  // rows one warp copies per pass
  constexpr int PASSES = WARP_TOKENS / ROWS_PER_PASS;
  constexpr int TILE_BYTES = BLOCK_TOKENS * ROW_BYTES;  // one K or V buffer
  static_assert(32 % COPY_LANES == 0 && WARP_TOKENS % ROWS_PER_PASS == 0, "copy pattern");

  // The stage area [STAGES][K, V][BLOCK_TOKENS][ROW_BYTES], then Q [M][ROW] (16-bit). After the
  // key loop the stage area holds the cross-warp merge: outputs [WARPS][M][HEAD_DIM], maxima and
  // sums [WARPS][M] (floats), and after that the split merge's weights.
  extern __shared__ __align__(16) unsigned char smem[];
  unsigned short* q_tile = reinterpret_cast<unsigned short*>(
      smem +
      paged_decode::sm80_mma::stage_area_bytes(HEAD_DIM, WARPS, BLOCK_TOKENS, STAGES, KV_BYTES));
  __shared__ int merge_here;

  const int cta = blockIdx.x / p.num_kv_heads, kv_head = blockIdx.x % p.num_kv_heads;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int q_head0 = kv_head * p.group;

  // The CTA's segments in order: each a chunk of one sequence, computed and finished (written,
  // or merged by the chunk's last CTA) before the next begins.
  for (int segment = p.cta_work[cta]; segment < p.cta_work[cta + 1]; ++segment) {
    const int seq = p.work[4 * segment], split = p.work[4 * segment + 1];
    const int block_begin = p.work[4 * segment + 2], block_end = p.work[4 * segment + 3];

    // Visible keys [first_key, kv_len): the window keeps the last sliding_window of them. Blocks
    // start at first_key, so no key before it is ever loaded.
    const int kv_len = p.kv_lens[seq];
    const int first_key =
        (p.sliding_window > 0 && kv_len > p.sliding_window) ? kv_len - p.sliding_window : 0;

    // Copy pattern: each warp copies its own WARP_TOKENS rows of every block (the rows it
    // computes), so a stage needs no barrier between warps: lane copies chunk (lane % COPY_LANES)
    // of the warp's rows lane / COPY_LANES + i * ROWS_PER_PASS (if that chunk is in the row). Page
    // numbers of the block after next are fetched from the block table one iteration ahead (their
    // latency hides behind the current block's compute), and the row's page and slot advance by
    // increments instead of a division per row.
    const int* pages = p.block_table + (long long)seq * p.max_pages_per_seq;
    const int copy_col = (lane % COPY_LANES) * 16;  // bytes
    const int copy_row = warp * WARP_TOKENS + lane / COPY_LANES;
    // Compile-time true where CHUNKS is a power of two (head dims 64, 128, 256).
    const bool copy_lane_active = CHUNKS == COPY_LANES || lane % COPY_LANES < CHUNKS;
    const char* k_head =
        static_cast<const char*>(p.k_pool) + kv_head * p.head_stride * KV_BYTES + copy_col;
    const char* v_head =
        static_cast<const char*>(p.v_pool) + kv_head * p.head_stride * KV_BYTES + copy_col;
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
      unsigned char* k_dst = smem + stage * 2 * TILE_BYTES + copy_row * ROW_BYTES + copy_col;
      unsigned char* v_dst = k_dst + TILE_BYTES;
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
        // The lanes of a row read it together (256 bytes at head dim 128 in bf16): 128-byte L2
        // fetches instead of 32-byte sectors (1.8% faster on 64 x 4096 on an H200).
        if (copy_lane_active) {
          cp_async_16_prefetch<128>(k_dst + i * ROWS_PER_PASS * ROW_BYTES,
                                    k_head + offset * KV_BYTES, valid);
          cp_async_16_prefetch<128>(v_dst + i * ROWS_PER_PASS * ROW_BYTES,
                                    v_head + offset * KV_BYTES, valid);
        }
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
        constexpr int Q_CHUNKS = HEAD_DIM / 8;
        for (int c = tid; c < M * Q_CHUNKS; c += THREADS) {
          const int r = c / Q_CHUNKS, col = (c % Q_CHUNKS) * 8;
          const bool valid = r < p.group;
          const long long row = valid ? (long long)seq * p.num_q_heads + q_head0 + r : 0;
          cp_async_16(q_tile + r * ROW + col,
                      static_cast<const char*>(p.q) + (row * HEAD_DIM + col) * 2, valid);
        }
      }
      cp_async_commit();
    }
    if (PREFETCH && block_begin + STAGES - 1 < block_end) fetch_pages(block_begin + STAGES - 1);

    using Form = paged_decode::sm80_mma::BlockForm<KEY_ROWS, KV_FP8, HEAD_DIM>;
    typename Form::State st;
    st.init();
    typename Form::Q q;
    // fp8 dequantisation, folded into the logits' scale and the output.
    const float score_scale = KV_FP8 ? p.score_scale * p.k_scale[kv_head] : p.score_scale;
    const float v_scale = KV_FP8 ? p.v_scale[kv_head] : 1.0f;

    for (int block = block_begin; block < block_end; ++block) {
      const int i = block - block_begin;
      cp_async_wait<STAGES - 2>();
      if (i == 0) {
        __syncthreads();  // Q, copied by every warp, visible to all
        if constexpr (KV_FP8 && DTYPE != kDTypeFp16) {
          // The products run in f16: convert Q in place (exact for |q| < 65504).
          unsigned int* words = reinterpret_cast<unsigned int*>(q_tile);
          for (int w = tid; w < M * ROW / 2; w += THREADS) {
            const float2 v = unpack2<DTYPE>(words[w]);
            words[w] = pack2<kDTypeFp16>(v.x, v.y);
          }
          __syncthreads();
        }
        q.init(q_tile);
      } else {
        __syncwarp();  // the warp's copies of this block visible to all its lanes; block - 1
                       // consumed
      }
      if (block + STAGES - 1 < block_end) load_block(block + STAGES - 1, (i + STAGES - 1) % STAGES);
      cp_async_commit();
      if (PREFETCH && block + STAGES < block_end) fetch_pages(block + STAGES);

      const unsigned char* k_tile = smem + (i % STAGES) * 2 * TILE_BYTES;
      paged_decode::sm80_mma::attend_block<MMA_DTYPE, KV_FP8, HEAD_DIM, WARP_TOKENS,
                                           paged_decode::sm80_mma::PaddedTile<ROW_BYTES>>(
          k_tile, k_tile + TILE_BYTES, warp * WARP_TOKENS, q,
          first_key + block * BLOCK_TOKENS + warp * WARP_TOKENS, first_key, kv_len, score_scale,
          p.cap_log2, st);
    }
    cp_async_wait<0>();
    __syncthreads();  // the stage buffers become the merge area
    paged_decode::sm80_mma::finish_split<DTYPE, KV_FP8, HEAD_DIM, WARPS>(
        p, st, smem, &merge_here, seq, split, kv_head, v_scale, [] { __syncthreads(); });
    __syncthreads();  // every thread is done with the merge area and Q before the next segment
  }
}

}  // namespace attn
