// paged_decode.sm90_tma: paged_decode.sm80_mma's flash-decoding on the tensor cores, with the K/V
// pages loaded by Hopper's Tensor Memory Accelerator instead of cp.async.
//
// Same semantics, work list, split-KV and in-kernel split merge as sm80_mma.cuh (read that
// first); what differs is how a compute block's keys reach shared memory:
// - One producer warp (the CTA's last) issues, per block, one TMA box per page the block touches
//   (box_tokens keys x 64 dims of one KV head; column_boxes(head_dim) boxes side by side, the
//   last one zero-filled past the row at head dims 80, 96 and 192) for K and for V,
//   each completing its bytes on the stage's "full" mbarrier. Lanes read the block's page numbers
//   from the block table in parallel, one box each. There is no per-row address arithmetic, no
//   copy instruction per 16 bytes, and the compute warps never wait on their own copies.
// - The WARPS compute warps wait on "full", compute their slice of the block exactly as in
//   sm80_mma (sm80_mma_block.cuh, with the 128-byte swizzled tile layout TMA writes), and
//   arrive on the stage's "empty" mbarrier, which the producer waits on before reusing it.
// - Blocks are aligned to multiples of BLOCK_TOKENS keys from the sequence's start (a box is a
//   page or an aligned part of one), so a sliding window's first block also holds keys before the
//   window: they are masked. Boxes past the sequence's last page are not loaded; V rows past the
//   sequence end (unloaded, or the unused slots of the last page) are zeroed before P V, because
//   0 x NaN would poison the output.
//
// Tunables: BLOCK_TOKENS, WARPS (compute warps), STAGES as sm80_mma; BOX_TOKENS follows from the
// page size (sm90_tma_traits.hpp). 16-bit K/V only (fp8 pools: paged_decode.sm80_mma).
#pragma once

#include "kernels/common/cp_async.cuh"
#include "kernels/common/sm90.cuh"
#include "kernels/paged_decode/sm80_mma_block.cuh"
#include "kernels/paged_decode/sm80_mma_epilogue.cuh"
#include "kernels/paged_decode/sm90_tma_params.hpp"
#include "kernels/paged_decode/sm90_tma_traits.hpp"

namespace attn {

template <int DTYPE, int HEAD_DIM, int WARPS, int BLOCK_TOKENS, int STAGES, int BOX_TOKENS>
__global__ void __launch_bounds__((WARPS + 1) * 32)
    paged_decode_sm90_tma(const __grid_constant__ Sm90TmaParams params) {
  static_assert(paged_decode::sm90_tma::check(HEAD_DIM, WARPS, BLOCK_TOKENS, STAGES, BOX_TOKENS) ==
                    paged_decode::sm90_tma::kOk,
                "invalid paged_decode.sm90_tma config: see paged_decode::sm90_tma::check");
  constexpr int THREADS = paged_decode::sm80_mma::threads(WARPS);  // compute threads
  constexpr int M = paged_decode::sm80_mma::kMmaRows;
  constexpr int ROW =
      paged_decode::sm80_mma::row_elements(HEAD_DIM);  // padded Q smem row, 16-bit elements
  constexpr int WARP_TOKENS = paged_decode::sm80_mma::warp_tokens(WARPS, BLOCK_TOKENS);
  constexpr int TILE_BYTES = paged_decode::sm90_tma::tile_bytes(HEAD_DIM, BLOCK_TOKENS);
  constexpr int HALVES =
      paged_decode::sm90_tma::column_boxes(HEAD_DIM);  // boxes side by side in a row
  constexpr int BOXES = BLOCK_TOKENS / BOX_TOKENS;     // box rows of a block, <= 32
  constexpr int BOX_BYTES = BOX_TOKENS * paged_decode::sm90_tma::kBoxElements * 2;
  constexpr int HALF_BYTES = BLOCK_TOKENS * paged_decode::sm90_tma::kBoxElements * 2;
  static_assert(BOXES <= 32, "one producer lane per box");
  using Tile = paged_decode::sm80_mma::Swizzled128Tile<BLOCK_TOKENS>;
  const Sm80MmaParams& p = params.base;

  // [alignment slack][stage area: STAGES x (K tile, V tile)][Q][full[STAGES], empty[STAGES]].
  // After the key loop the stage area holds the cross-warp and split merges, as in sm80_mma.
  extern __shared__ __align__(16) unsigned char smem_raw[];
  unsigned char* smem = reinterpret_cast<unsigned char*>(
      (reinterpret_cast<unsigned long long>(smem_raw) + paged_decode::sm90_tma::kAlignment - 1) &
      ~(unsigned long long)(paged_decode::sm90_tma::kAlignment - 1));
  unsigned short* q_tile = reinterpret_cast<unsigned short*>(
      smem + paged_decode::sm90_tma::q_offset(HEAD_DIM, WARPS, BLOCK_TOKENS, STAGES));
  unsigned long long* full = reinterpret_cast<unsigned long long*>(
      smem + paged_decode::sm90_tma::barrier_offset(HEAD_DIM, WARPS, BLOCK_TOKENS, STAGES));
  unsigned long long* empty = full + STAGES;
  __shared__ int merge_here;

  // One segment per CTA (the host plans it so: decode_work_plan.hpp, per-sequence schedule).
  const int segment = p.cta_work[blockIdx.x / p.num_kv_heads],
            kv_head = blockIdx.x % p.num_kv_heads;
  const int seq = p.work[4 * segment], split = p.work[4 * segment + 1];
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int q_head0 = kv_head * p.group;

  // Visible keys [first_key, kv_len); blocks are aligned to BLOCK_TOKENS from key 0, and the
  // segment's blocks count from the first that holds a visible key.
  const int kv_len = p.kv_lens[seq];
  const int first_key =
      (p.sliding_window > 0 && kv_len > p.sliding_window) ? kv_len - p.sliding_window : 0;
  const int first_block = first_key / BLOCK_TOKENS;
  const int block_begin = first_block + p.work[4 * segment + 2];
  const int block_end = first_block + p.work[4 * segment + 3];

  if (tid == 0) {
    for (int s = 0; s < STAGES; ++s) {
      sm90::mbarrier_init(&full[s], 1);
      sm90::mbarrier_init(&empty[s], WARPS);  // one arrival per compute warp
    }
  }
  __syncthreads();

  if (warp == WARPS) {
    // Producer: lane b loads box b of each block (keys b * BOX_TOKENS ..) when it holds a key of
    // the sequence. A stage is refilled once every compute warp has released it.
    const int* pages = p.block_table + (long long)seq * p.max_pages_per_seq;
    const int head_coordinate = 3 - params.token_coordinate;
    for (int block = block_begin; block < block_end; ++block) {
      const int i = block - block_begin, stage = i % STAGES;
      const int key = block * BLOCK_TOKENS + lane * BOX_TOKENS;
      const bool load = lane < BOXES && key < kv_len;
      const int page = load ? __ldg(pages + key / p.page_size) : 0;
      const int boxes = __popc(__ballot_sync(0xffffffffu, load));
      if (i >= STAGES) sm90::mbarrier_wait(&empty[stage], ((i / STAGES) - 1) & 1);
      if (lane == 0) sm90::mbarrier_expect_bytes(&full[stage], boxes * 2 * HALVES * BOX_BYTES);
      __syncwarp();
      if (load) {
        int c[4] = {0, 0, 0, page};
        c[params.token_coordinate] = key % p.page_size;
        c[head_coordinate] = kv_head;
        unsigned char* k_dst = smem + stage * 2 * TILE_BYTES + lane * BOX_BYTES;
#pragma unroll
        for (int h = 0; h < HALVES; ++h) {
          const int dim0 = h * paged_decode::sm90_tma::kBoxElements;
          sm90::tma_load_4d(k_dst + h * HALF_BYTES, &params.k_map, dim0, c[1], c[2], c[3],
                            &full[stage]);
          sm90::tma_load_4d(k_dst + TILE_BYTES + h * HALF_BYTES, &params.v_map, dim0, c[1], c[2],
                            c[3], &full[stage]);
        }
      }
    }
    return;  // the compute warps synchronise among themselves from here on (named barrier 1)
  }
  auto compute_sync = [] { asm volatile("bar.sync 1, %0;\n" ::"n"(THREADS) : "memory"); };

  // Q rows of the group (padding rows zero), while the first boxes are on their way.
  constexpr int Q_CHUNKS = HEAD_DIM / 8;
  for (int c = tid; c < M * Q_CHUNKS; c += THREADS) {
    const int r = c / Q_CHUNKS, col = (c % Q_CHUNKS) * 8;
    const bool valid = r < p.group;
    const long long row = valid ? (long long)seq * p.num_q_heads + q_head0 + r : 0;
    cp_async_16(q_tile + r * ROW + col, static_cast<const char*>(p.q) + (row * HEAD_DIM + col) * 2,
                valid);
  }
  cp_async_commit();
  cp_async_wait<0>();
  compute_sync();
  paged_decode::sm80_mma::QFragments<false, HEAD_DIM> q;
  q.init(q_tile);
  paged_decode::sm80_mma::WarpState<HEAD_DIM> st;
  st.init();

  for (int block = block_begin; block < block_end; ++block) {
    const int i = block - block_begin, stage = i % STAGES;
    sm90::mbarrier_wait(&full[stage], (i / STAGES) & 1);
    unsigned char* k_tile = smem + stage * 2 * TILE_BYTES;
    unsigned char* v_tile = k_tile + TILE_BYTES;
    const int key0 = block * BLOCK_TOKENS + warp * WARP_TOKENS;
    if (key0 + WARP_TOKENS > kv_len) {
      // The warp's V rows past the sequence end: zero (P is 0 there; their bytes may be NaN).
      for (int idx = lane; idx < WARP_TOKENS * HALVES * 8; idx += 32) {
        const int r = idx / (HALVES * 8), h = (idx / 8) % HALVES, chunk = idx % 8;
        if (key0 + r >= kv_len) {
          *reinterpret_cast<uint4*>(v_tile + h * HALF_BYTES + (warp * WARP_TOKENS + r) * 128 +
                                    chunk * 16) = make_uint4(0, 0, 0, 0);
        }
      }
      sm90::fence_proxy_async_shared();  // before TMA may write these bytes again
      __syncwarp();
    }
    paged_decode::sm80_mma::attend_block<DTYPE, false, HEAD_DIM, WARP_TOKENS, Tile>(
        k_tile, v_tile, warp * WARP_TOKENS, q, key0, first_key, kv_len, p.score_scale, p.cap_log2,
        st);
    __syncwarp();
    if (lane == 0) sm90::mbarrier_arrive(&empty[stage]);
  }
  compute_sync();  // every compute warp is done with the stages: they become the merge area
  paged_decode::sm80_mma::finish_split<DTYPE, false, HEAD_DIM, WARPS>(
      p, st, smem, &merge_here, seq, split, kv_head, 1.0f, compute_sync);
}

}  // namespace attn
