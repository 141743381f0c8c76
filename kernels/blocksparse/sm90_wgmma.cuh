// blocksparse.sm90_wgmma: block-sparse varlen attention (seed 003's semantics, as blocksparse.mma)
// on Hopper (sm_90a), FlashAttention-3 style: TMA loads completing on mbarriers, wgmma from shared
// memory, a producer warpgroup and a consumer warpgroup whose softmax of each key tile overlaps
// the tensor cores. The consumer is flash_fwd.sm90_wgmma's (kernels/common/sm90_attention.cuh,
// read that first); what differs is which key tiles a CTA visits and which keys a row sees.
//
// Computes, for every sequence s (cu_seqlens), new token i at position p = context + i
// (context = kv_len - q_len) and q head h (kv head h / group),
//   out[s, i, h] = softmax_j(scale * q[s, i, h] . k[s, j, h / group]) v[s, j, h / group]
// over the keys j that workloads/visibility's key_visible admits: the layout of q head h keeps
// block (p / block_size, j / block_size), and with causal j <= p (bottom-right aligned), else
// j < kv_len. A row that sees no key writes zeros.
//
// Layout: Q and out [total_q, num_q_heads, head_dim]; K and V contiguous [total_kv, num_kv_heads,
// head_dim] (flash_fwd_gather_kv, once, outside the timing). The TMA maps view each as a 2-D
// tensor [tokens, heads * head_dim]; a box of rows x 64 columns at column head * head_dim + 64 c is
// column block c of one head's rows (flash_fwd.sm90_wgmma's boxes and shared-memory layout). The
// block layout is CSR per q head: crow [num_q_heads, num_blocks + 1], col [num_q_heads, max_nnz].
//
// Work decomposition (grid = q heads, position tiles of all sequences heaviest first; block = 256
// threads: one producer warpgroup, one consumer warpgroup; 1 or 2 CTAs per SM):
// - The q heads are the fast grid dimension, so the heads of one position tile run together and
//   the group's heads (adjacent) read the same kv head's tiles of mostly the same kept blocks
//   while they are in L2 (the benchmark's K/V, 128 MiB, do not fit in it).
// - A CTA owns 64 positions [pos0, pos0 + 64) of one sequence and one q head: one wgmma M. Tiles
//   are aligned to absolute positions, as blocksparse.mma's (a chunk after a context reads the
//   block rows its positions occupy), and 64 divides block_size, so the tile lies in one block
//   row: its kept key blocks are that row's CSR entries, each walked as block_size / TILE_N key
//   tiles (blocksparse_mma::tile_walk / tile_key0, the walk blocksparse.mma and its CPU test use),
//   and of the diagonal block only the tiles up to the last row's position. Q's box starts at the
//   tile's row 0, which may lie in the context (a negative row of the tensor, or the previous
//   sequence's rows): TMA fills rows outside the tensor with zeros; rows that are not new tokens
//   are computed but never stored.
// - Warpgroup 0 is the producer (setmaxnreg.dec): one thread issues Q's boxes once, then for key
//   tile n the K and V boxes of rows kv_begin + tile_key0(n) into stage n % STAGES, K and V on
//   their own full/empty mbarriers. Rows past the sequence's end are the next sequence's keys
//   (masked) or TMA's zero fill past the tensor; V rows there meet P = 0 (finite data only).
// - Warpgroup 1 is the consumer (setmaxnreg.inc), sm90_attn::Consumer::run over the walk's tiles:
//   S_n = Q K_n^T, then O += P_{n-1} V_{n-1} under the softmax of S_n. Only diagonal-block tiles
//   that reach a hidden key (causal: past the tile's first position; or past the sequence's end)
//   are masked element by element; the other kept blocks lie wholly before every row.
// - Why one consumer, and two CTAs per SM: with the benchmark's blocks of 64, two 64-row
//   warpgroups lie in different block rows, with different tile lists (the layout slides per head
//   and per row), so they could not share K/V tiles. Two resident CTAs give what a second consumer
//   would otherwise give, one's softmax under the other's wgmma (without IssueTurns' ordering:
//   the warp schedulers interleave them), at half the registers and shared memory each.
//
// Tunables and why they exist:
//   TILE_N       keys per stage (64 or 128, dividing the layout's block): scores in registers vs
//                barrier and softmax overhead per key; blocks of 64 allow 64 only
//   STAGES       TMA buffers of K and of V in flight (the kept blocks of a row are scattered, so
//                each tile is a fresh load, never a neighbour of the last)
//   CTAS_PER_SM  1 or 2 resident CTAs (__launch_bounds__ min blocks, setmaxnreg split, traits):
//                two hide each other's softmax and barrier waits; one has twice the shared memory
//                for stages and 128-key tiles at head_dim 128
#pragma once

#include "kernels/blocksparse/mma_traits.hpp"  // blocksparse_mma::tile_walk / tile_key0
#include "kernels/blocksparse/sm90_wgmma_params.hpp"
#include "kernels/blocksparse/sm90_wgmma_traits.hpp"
#include "kernels/common/sm90_attention.cuh"
#include "kernels/flash_fwd/gather_kv.cuh"

namespace attn {

template <int DTYPE, int HEAD_DIM, int TILE_N, int STAGES, int CTAS_PER_SM, bool CAUSAL>
__global__ void __launch_bounds__(blocksparse_sm90::threads(), CTAS_PER_SM)
    blocksparse_sm90_wgmma(const __grid_constant__ BlockSparseSm90Params p) {
  static_assert(blocksparse_sm90::check(HEAD_DIM, TILE_N, STAGES, CTAS_PER_SM) == sm90_attn::kOk,
                "invalid blocksparse.sm90_wgmma config: see blocksparse_sm90::check");
  static_assert(blocksparse_sm90::register_split_fits(CTAS_PER_SM), "setmaxnreg split");
  constexpr int TILE_M = blocksparse_sm90::kTileM;  // 64: the consumer warpgroup's rows
  constexpr int Q_BYTES = sm90_attn::q_bytes(HEAD_DIM, TILE_M);
  constexpr int KV_BYTES = sm90_attn::kv_tile_bytes(HEAD_DIM, TILE_N);
  constexpr int BLOCKS = sm90_attn::column_blocks(HEAD_DIM);
  constexpr int ROW_BYTES = sm90_attn::kBlockRowBytes;  // 128
  constexpr int Q_BLOCK = TILE_M * ROW_BYTES;           // one column block of Q, bytes

  extern __shared__ unsigned char shared_raw[];
  unsigned char* shared = reinterpret_cast<unsigned char*>(
      (reinterpret_cast<unsigned long long>(shared_raw) + 1023) & ~1023ull);
  unsigned char* q_tile = shared;                        // [BLOCKS][64][64]
  unsigned char* k_tiles = shared + Q_BYTES;             // [STAGES][BLOCKS][TILE_N][64]
  unsigned char* v_tiles = k_tiles + STAGES * KV_BYTES;  // [STAGES][BLOCKS][TILE_N][64]
  unsigned long long* q_full = reinterpret_cast<unsigned long long*>(v_tiles + STAGES * KV_BYTES);
  unsigned long long* k_full = q_full + 1;
  unsigned long long* k_empty = k_full + STAGES;
  unsigned long long* v_full = k_empty + STAGES;
  unsigned long long* v_empty = v_full + STAGES;

  const int seq = p.tiles[2 * blockIdx.y];
  const int pos0 = p.tiles[2 * blockIdx.y + 1] * TILE_M;  // position of the tile's row 0
  const int q_head = blockIdx.x, kv_head = q_head / p.group;
  const int q_begin = p.cu_seqlens_q[seq], q_len = p.cu_seqlens_q[seq + 1] - q_begin;
  const int kv_begin = p.cu_seqlens_kv[seq], kv_len = p.cu_seqlens_kv[seq + 1] - kv_begin;
  const int context = kv_len - q_len;  // positions [context, kv_len) are the new tokens
  const int m0 = pos0 - context;       // query index of row 0 (negative: rows in the context)

  // The first key no row of the tile sees, then the kept key tiles of the tile's block row.
  const int last_pos = min(pos0 + TILE_M, kv_len) - 1;
  const int key_limit = CAUSAL ? last_pos + 1 : kv_len;
  const int q_block = pos0 / p.block_size;
  const blocksparse_mma::TileWalk walk = blocksparse_mma::tile_walk(
      p.crow + (long long)q_head * (p.num_blocks + 1) + q_block,
      p.col + (long long)q_head * p.max_nnz, q_block, p.block_size, TILE_N, key_limit);
  const int n_tiles = walk.tiles;

  if (threadIdx.x == 0) {
    sm90::mbarrier_init(q_full, 1);
    for (int s = 0; s < STAGES; ++s) {
      sm90::mbarrier_init(&k_full[s], 1);  // the producer's arrive.expect_tx
      sm90::mbarrier_init(&v_full[s], 1);
      sm90::mbarrier_init(&k_empty[s], 4);  // one arrival per consumer warp
      sm90::mbarrier_init(&v_empty[s], 4);
    }
    sm90::fence_barrier_init();
  }
  __syncthreads();

  if (threadIdx.x < 128) {
    // Producer: one thread issues every load. Stage s = n % STAGES is refilled for tile n once
    // every consumer warp released tile n - STAGES (a fresh empty barrier passes parity 1).
    sm90::setmaxnreg_dec<blocksparse_sm90::producer_registers(CTAS_PER_SM)>();
    if (threadIdx.x == 0 && n_tiles > 0) {
      sm90::mbarrier_expect_bytes(q_full, Q_BYTES);
#pragma unroll
      for (int c = 0; c < BLOCKS; ++c) {
        sm90::tma_load_2d(q_tile + c * Q_BLOCK, &p.q_map, q_head * HEAD_DIM + c * 64, q_begin + m0,
                          q_full);
      }
      const sm90_attn::KvPipeline kv{k_tiles, v_tiles, k_full, k_empty, v_full, v_empty};
      for (int n = 0; n < n_tiles; ++n) {
        sm90_attn::load_kv_tile_2d<HEAD_DIM, TILE_N, STAGES>(
            k_tiles, v_tiles, kv, &p.k_map, &p.v_map, n, kv_head * HEAD_DIM,
            kv_begin + blocksparse_mma::tile_key0(walk, n, TILE_N));
      }
    }
    return;
  }

  // ---- Consumer (kernels/common/sm90_attention.cuh) ----
  sm90::setmaxnreg_inc<blocksparse_sm90::consumer_registers(CTAS_PER_SM)>();
  const int tid = threadIdx.x - 128;
  // Keys of diagonal-block tiles from mask_from on are hidden from at least one row (causal, or
  // past the sequence's end): those tiles are masked element by element, the others not at all.
  const int diagonal_key0 = q_block * p.block_size;
  const int mask_from = CAUSAL ? min(kv_len, pos0 + 1) : kv_len;
  // This thread's two rows (accumulator layout): positions pos_row and pos_row + 8; with CAUSAL
  // each sees keys up to its position.
  const int row0 = sm90_attn::accumulator_row(tid, 0);
  const int limit0 = CAUSAL ? pos0 + row0 : sm90_attn::kNoLimit;
  const int limit1 = CAUSAL ? pos0 + row0 + 8 : sm90_attn::kNoLimit;

  sm90_attn::Consumer<DTYPE, HEAD_DIM, TILE_M, TILE_N, STAGES> c;
  c.init(tid, p.scale_log2, 0.0f);
  c.run(
      sm90_attn::KvPipeline{k_tiles, v_tiles, k_full, k_empty, v_full, v_empty}, q_tile, q_full,
      n_tiles, n_tiles, sm90_attn::IssueTurns{},
      [&](int n, float(&s)[TILE_N / 2]) {
        const int key0 = blocksparse_mma::tile_key0(walk, n, TILE_N);
        if (key0 >= diagonal_key0 && key0 + TILE_N > mask_from)
          sm90_attn::mask_scores<TILE_N>(s, tid, key0, kv_len, limit0, limit1);
      },
      [](int) {});

  // Normalise and store this thread's two rows of new tokens straight from registers.
  const long long row_stride = (long long)p.num_q_heads * HEAD_DIM;
  unsigned short* out =
      static_cast<unsigned short*>(p.out) + q_begin * row_stride + q_head * HEAD_DIM;
  c.reduce_row_sums();
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int i = m0 + row0 + 8 * h;  // query index
    if (i < 0 || i >= q_len) continue;
    const float inv = c.row_sum[h] > 0.0f ? 1.0f / c.row_sum[h] : 0.0f;  // no key: zeros
    c.store_row(out + i * row_stride, h, inv);
  }
}

}  // namespace attn
