// flash_fwd.sm80_mma: dense flash attention forward (FlashAttention-2 style) on the sm_80-class
// tensor-core path: mma.sync m16n8k16, ldmatrix, cp.async. Runs on Ampere and on Hopper.
//
// Computes, for every sequence s of a variable-length batch (cu_seqlens), query i < q_len and q
// head h (kv head h / group),
//   out[s, i, h] = softmax_j(scale * q[s, i, h] . k[s, j, h / group]) v[s, j, h / group]
//   lse[s, i, h] = log(sum_j exp(scale * q . k_j))            (natural log, optional)
// over the keys j < kv_len the mask lets through: all of them, or with CAUSAL j <= i + (kv_len -
// q_len) (aligned to the bottom right when the lengths differ). A row that sees no key writes
// zeros and lse = -inf.
//
// Layout: Q [total_q, num_q_heads, head_dim] and out [total_q, num_q_heads, v_head_dim]; K and V
// contiguous [total_kv, num_kv_heads, head_dim] and [total_kv, num_kv_heads, v_head_dim]
// (flash_fwd_gather_kv makes them so from the paged pool, once, outside the timing). V_HEAD_DIM
// (model.v_head_dim, e.g. DeepSeek-V3's prefill: Q/K 192, V 128) is at most HEAD_DIM.
//
// Work decomposition (grid = query tiles of all sequences, q heads): a CTA owns TILE_M query rows
// of one sequence and one q head; the host lists the (sequence, tile) pairs heaviest first, so
// causal diagonal-heavy tiles do not run alone at the end. Inside, the sm80 attention loop
// (kernels/common/sm80_attention.cuh: warps' rows and online softmax in registers, the cp.async
// K/V pipeline or, at STAGES = 1, FlashAttention-2's split K / V pipeline). What is this
// kernel's own: the key tiles, every one of the sequence's or with CAUSAL those up to the tile's
// last visible key (the later ones are never loaded); any of them may cross the diagonal or the
// sequence's end, so the loop masks every tile that reaches a warp's first hidden key.
//
// Tunables and why they exist:
//   TILE_M  query rows per CTA: K/V bytes re-read per query row vs CTAs to fill the GPU
//   TILE_N  keys per pipeline stage: score registers and shared memory vs barriers per key
//   WARPS   TILE_M / WARPS rows per warp (16 or 32): 32 reuse each K/V fragment for two mma
//           tiles (half the shared-memory traffic per FLOP) but need twice the accumulators
//   STAGES  cp.async pipeline depth: key tiles in flight while one is computed (1: the split
//           K / V pipeline)
#pragma once

#include "kernels/common/sm80_attention.cuh"
#include "kernels/flash_fwd/gather_kv.cuh"
#include "kernels/flash_fwd/sm80_mma_params.hpp"
#include "kernels/flash_fwd/sm80_mma_traits.hpp"

namespace attn {

namespace flash_fwd::sm80_mma {

// The key tiles of a dense CTA: all of the sequence's, or with CAUSAL up to the tile's last row's
// last visible key, TILE_N keys each from key 0.
template <int TILE_M, int TILE_N, bool CAUSAL>
struct DenseKeyTiles {
  static constexpr bool kRowsBeforeQueries = false;  // tiles start at query 0
  static constexpr bool kConsecutive = true;         // tile n starts at key n * TILE_N
  static constexpr bool kAdmitsSpills = true;        // flash_fwd::sm80_mma::kMaxRegisterEstimate
  static constexpr bool kTensorRowSums = true;       // where sm80_attention::tensor_row_sums says
  int m0;                                            // the tile's first query
  int tiles;                                         // key tiles to visit

  static __device__ __forceinline__ DenseKeyTiles of(const FlashFwdParams&, int row0, int,
                                                     int q_len, int kv_len) {
    const int offset = kv_len - q_len;  // causal: query i sees keys j <= i + offset
    int n_tiles = (kv_len + TILE_N - 1) / TILE_N;
    if (CAUSAL) {
      const int visible = min(row0 + TILE_M, q_len) + offset;  // keys the CTA's last row sees
      n_tiles = visible > 0 ? min(n_tiles, (visible + TILE_N - 1) / TILE_N) : 0;
    }
    return {row0, n_tiles};
  }
  static __device__ __forceinline__ float* lse(const FlashFwdParams& p) { return p.lse; }
  __device__ __forceinline__ int count() const { return tiles; }
  __device__ __forceinline__ int key0(int n) const { return n * TILE_N; }
  // Any tile may cross the diagonal or the sequence's end.
  __device__ __forceinline__ bool may_mask(int) const { return true; }
};

}  // namespace flash_fwd::sm80_mma

// V_HEAD_DIM, defaulting to HEAD_DIM, then KV_FP8 (an fp8 cache's codes, gathered as codes and
// dequantised on their way into shared memory: sm80_attention::attend), defaulting to false: a
// V as wide as Q and K over a 16-bit cache keeps its name expression.
template <int DTYPE, int HEAD_DIM, int TILE_M, int TILE_N, int WARPS, int STAGES, bool CAUSAL,
          int V_HEAD_DIM = HEAD_DIM, bool KV_FP8 = false>
__global__ void __launch_bounds__(WARPS * 32, 1) flash_fwd_sm80_mma(const FlashFwdParams p) {
  static_assert(flash_fwd::sm80_mma::check(HEAD_DIM, V_HEAD_DIM, TILE_M, TILE_N, WARPS, STAGES,
                                           KV_FP8) == flash_fwd::sm80_mma::kOk,
                "invalid flash_fwd.sm80_mma config: see flash_fwd::sm80_mma::check");
  sm80_attention::attend<DTYPE, HEAD_DIM, V_HEAD_DIM, TILE_M, TILE_N, WARPS, STAGES, CAUSAL,
                         flash_fwd::sm80_mma::DenseKeyTiles<TILE_M, TILE_N, CAUSAL>, KV_FP8>(p);
}

}  // namespace attn
