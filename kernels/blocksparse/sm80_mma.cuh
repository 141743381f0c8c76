// blocksparse.sm80_mma: block-sparse varlen attention (seed 003's semantics) on the sm_80-class
// tensor-core path: mma.sync m16n8k16, ldmatrix, cp.async. Runs on Ampere and on Hopper.
//
// Computes, for every sequence s (cu_seqlens), new token i at position p = context + i
// (context = kv_len - q_len) and q head h (kv head h / group),
//   out[s, i, h] = softmax_j(scale * q[s, i, h] . k[s, j, h / group]) v[s, j, h / group]
// over the keys j that workloads/visibility's key_visible admits: the layout of q head h keeps
// block (p / block_size, j / block_size), and with causal j <= p (bottom-right aligned), else
// j < kv_len. A row that sees no key writes zeros.
//
// Layout: Q [total_q, num_q_heads, head_dim] and out [total_q, num_q_heads, v_head_dim]; K and V
// contiguous [total_kv, num_kv_heads, head_dim] and [.., v_head_dim] (gathered from the paged pool
// once, outside the timing; v_head_dim is model.v_head_dim, at most head_dim). The block layout is
// CSR per q head: crow [num_q_heads, num_blocks + 1], col [num_q_heads, max_nnz].
//
// Work decomposition (grid = query tiles of all sequences, q heads): a CTA owns TILE_M positions
// of one sequence and one q head. Tiles are aligned to absolute positions (a chunk after a
// context reads the block rows of the positions it occupies, as seed 003 does), and TILE_M
// divides block_size, so a tile lies in one block row of the layout: its kept key blocks are that
// row's CSR entries, walked TILE_N keys at a time (TILE_N divides block_size, so a key tile is
// kept or dropped whole; blocksparse::sm80_mma::tile_walk). Key tiles past the tile's last visible
// key are never loaded, and only the diagonal block's tiles can need the element mask (causality,
// and the sequence's end): the earlier kept blocks lie wholly before every row's position and
// inside the sequence. The host lists the (sequence, tile) pairs heaviest first. Inside, the sm80
// attention loop that flash_fwd.sm80_mma runs (kernels/common/sm80_attention.cuh): each warp owns
// TILE_M / WARPS rows and their online-softmax state in registers; K and V tiles stream through
// STAGES cp.async buffers (ldmatrix without bank conflicts); P stays in registers as the A
// operand of P V; a warp skips the products of a tile none of its rows can see.
//
// An fp8 cache (KV_FP8): the gather keeps the codes, and the loop copies them into its stages and
// converts each landed tile into one 16-bit K and V tile (sm80_attention::attend's KV_FP8); K's
// scale joins the logit scale, V's the output.
//
// Tunables and why they exist:
//   TILE_M  query rows per CTA (the q block size): K/V bytes re-read per row vs CTAs to fill the
//           GPU; at most the layout's block
//   TILE_N  keys per pipeline stage (the kv block size): a layout block is walked as
//           block_size / TILE_N tiles; score registers and shared memory vs barriers per key
//   WARPS   TILE_M / WARPS rows per warp (16 or 32)
//   STAGES  cp.async pipeline depth: key tiles in flight while one is computed
#pragma once

#include "kernels/blocksparse/blocksparse_params.hpp"
#include "kernels/blocksparse/sm80_mma_traits.hpp"
#include "kernels/common/sm80_attention.cuh"
#include "kernels/flash_fwd/gather_kv.cuh"  // flash_fwd_gather_kv, in the same program

namespace attn {

namespace blocksparse::sm80_mma {

// The key tiles of one query tile: the walk over its block row's kept blocks, up to the tile's
// last visible key.
template <int TILE_M, int TILE_N, bool CAUSAL>
struct KeyTiles {
  // Tiles are aligned to absolute positions: the first rows of a chunk's first tile lie inside
  // the sequence's context.
  static constexpr bool kRowsBeforeQueries = true;
  static constexpr bool kConsecutive = false;   // the kept blocks' tiles, key0(n)
  static constexpr bool kAdmitsSpills = false;  // blocksparse::sm80_mma::kMaxRegisterEstimate
  // Row sums in the softmax: on the tensor cores (the flash rule, d128 over 4 warps) the Phi-3
  // block-sparse prefills ran 1.1% and 0.9% slower (H200, 2026-11-29, two rounds each, default
  // config 64 x 64 over 4 warps: 4 x 8192 2474.93 / 2463.12 -> 2500.51 / 2501.71 us, 2 x 16384
  // 3384.34 / 3400.69 -> 3422.83 / 3424.98 us).
  static constexpr bool kTensorRowSums = false;
  int m0;  // query index of the tile's row 0 (negative: rows inside the context)
  TileWalk walk;
  int diagonal_key0;  // the diagonal block's first key: tiles from here on may need the mask

  // row0 is the position of the tile's first row; positions [context, kv_len) are the new tokens.
  static __device__ __forceinline__ KeyTiles of(const BlockSparseMmaParams& p, int row0, int q_head,
                                                int q_len, int kv_len) {
    const int context = kv_len - q_len;
    // Row r of the tile is new token row0 + r - context when context <= row0 + r < kv_len.
    const int m0 = row0 - context;
    // The first key no row of the tile sees, then the kept key tiles of the tile's block row.
    const int last_pos = min(row0 + TILE_M, kv_len) - 1;
    const int key_limit = CAUSAL ? last_pos + 1 : kv_len;
    const int q_block = row0 / p.block_size;
    const TileWalk walk =
        tile_walk(p.crow + (long long)q_head * (p.num_blocks + 1) + q_block,
                  p.col + (long long)q_head * p.max_nnz, q_block, p.block_size, TILE_N, key_limit);
    return {m0, walk, q_block * p.block_size};
  }
  static __device__ __forceinline__ float* lse(const BlockSparseMmaParams&) { return nullptr; }
  __device__ __forceinline__ int count() const { return walk.tiles; }
  __device__ __forceinline__ int key0(int n) const { return tile_key0(walk, n, TILE_N); }
  // Earlier kept blocks lie wholly before every row's position and inside the sequence.
  __device__ __forceinline__ bool may_mask(int key0) const { return key0 >= diagonal_key0; }
};

}  // namespace blocksparse::sm80_mma

// V_HEAD_DIM, defaulting to HEAD_DIM, then KV_FP8 (an fp8 cache's codes), defaulting to false: a
// V as wide as Q and K over a 16-bit cache keeps its name expression.
template <int DTYPE, int HEAD_DIM, int TILE_M, int TILE_N, int WARPS, int STAGES, bool CAUSAL,
          int V_HEAD_DIM = HEAD_DIM, bool KV_FP8 = false>
__global__ void __launch_bounds__(WARPS * 32, 1)
    blocksparse_sm80_mma(const BlockSparseMmaParams p) {
  static_assert(blocksparse::sm80_mma::check(HEAD_DIM, V_HEAD_DIM, TILE_M, TILE_N, WARPS, STAGES,
                                             KV_FP8) == blocksparse::sm80_mma::kOk,
                "invalid blocksparse.sm80_mma config: see blocksparse::sm80_mma::check");
  sm80_attention::attend<DTYPE, HEAD_DIM, V_HEAD_DIM, TILE_M, TILE_N, WARPS, STAGES, CAUSAL,
                         blocksparse::sm80_mma::KeyTiles<TILE_M, TILE_N, CAUSAL>, KV_FP8>(p);
}

}  // namespace attn
