// Traits of prefix_prefill.sm80_mma and prefix_prefill.sm80_mma_masked (one kernel template,
// mma.cuh): threads, tile shapes, shared memory and validity derived from one config. Included by
// the host (to reject a config before compiling it) and by the device template (which
// static_asserts the same rule), so the two can never disagree.
#pragma once

#include "base/host_device.hpp"

namespace attn {
namespace prefix_prefill::sm80_mma {

// One mma.sync m16n8k16 tile has 16 rows; a warp owns 16 or 32 rows of the CTA's BLOCK_M.
constexpr int kMmaRows = 16;
constexpr int kMaxWarpRows = 32;

// The head dims the kernel compiles, for Q/K (head_dim) and for V and the output (v_head_dim, at
// most head_dim): multiples of 16, so that Q.K^T walks whole k16 steps and P.V whole pairs of n8
// columns. 64, 128 and 256 are the power-of-two shapes the kernel was first written for; 80, 96
// and 192 differ only where a count of 16-byte chunks per row enters (the copy loops, below).
ATTN_HOST_DEVICE constexpr bool is_head_dim(int d) {
  return d == 64 || d == 80 || d == 96 || d == 128 || d == 192 || d == 256;
}

ATTN_HOST_DEVICE constexpr int threads(int warps) {
  return warps * 32;
}
ATTN_HOST_DEVICE constexpr int warp_rows(int block_m, int warps) {
  return block_m / warps;
}
// Bytes of one stored K/V element: 1 for an fp8-e4m3 cache, 2 for bf16/fp16.
ATTN_HOST_DEVICE constexpr int kv_element_bytes(bool kv_fp8) {
  return kv_fp8 ? 1 : 2;
}
// A shared-memory row holds `cols` elements plus 16 bytes of padding, so the 8 rows one ldmatrix
// reads start in 8 different 16-byte bank groups (no conflicts), and cp.async destinations stay
// 16-byte aligned. Every head dim is a multiple of 16, so a 16-bit row is an even number of
// 16-byte chunks and the padded row an odd one: rows step through all 8 bank groups whether the
// head dim is a power of two or not (80: 11 chunks, 96: 13, 192: 25).
ATTN_HOST_DEVICE constexpr int row_bytes(int cols, int element_bytes) {
  return cols * element_bytes + 16;
}
// One K tile and one V tile of block_n keys with elements of `element_bytes`. K is key-major
// [block_n][head_dim]; V is key-major too, [block_n][v_head_dim], or dim-major
// [v_head_dim][block_n] for vLLM's V layout (its pages store each dim's keys contiguously, which
// cp.async can only copy as they are).
ATTN_HOST_DEVICE constexpr int kv_tile_bytes(int head_dim, int v_head_dim, int block_n,
                                             int element_bytes, bool v_dim_major) {
  return block_n * row_bytes(head_dim, element_bytes) +
         (v_dim_major ? v_head_dim * row_bytes(block_n, element_bytes)
                      : block_n * row_bytes(v_head_dim, element_bytes));
}
ATTN_HOST_DEVICE constexpr int q_tile_bytes(int head_dim, int block_m) {
  return block_m * row_bytes(head_dim, 2);
}
// Whether a key-major V row needs its own source offsets: its rows are narrower than K's, so
// the pools' page and token strides (and the gathered rows') differ from K's.
ATTN_HOST_DEVICE constexpr bool separate_v_sources(int head_dim, int v_head_dim, bool v_dim_major) {
  return v_head_dim != head_dim && !v_dim_major;
}
// Where each key row of a tile is read from: one 8-byte offset per key and stage (two when V's
// rows have their own, separate_v_sources).
ATTN_HOST_DEVICE constexpr int row_source_bytes(int block_n, int stages, bool separate_v) {
  return stages * block_n * 8 * (separate_v ? 2 : 1);
}
// Q (whose rows also stage the output: v_head_dim <= head_dim), then STAGES tiles of K/V as
// stored (the cp.async pipeline). An fp8 cache adds one 16-bit K/V tile that each stage is
// dequantised into before the tensor cores read it. Then the key rows' sources.
ATTN_HOST_DEVICE constexpr int shared_bytes(int head_dim, int v_head_dim, int block_m, int block_n,
                                            int stages, bool kv_fp8, bool v_dim_major) {
  return q_tile_bytes(head_dim, block_m) +
         stages *
             kv_tile_bytes(head_dim, v_head_dim, block_n, kv_element_bytes(kv_fp8), v_dim_major) +
         (kv_fp8 ? kv_tile_bytes(head_dim, v_head_dim, block_n, 2, v_dim_major) : 0) +
         row_source_bytes(block_n, stages, separate_v_sources(head_dim, v_head_dim, v_dim_major));
}
// 16 rows per warp (one mma row tile). Rough per-thread register need: the fp32 output accumulators
// (m-frags x v_head_dim / 2), the scores and their 16-bit copies (m-frags x 3/4 block_n),
// addresses, row state and fragments (72); a second row tile per warp costs fragments and
// addresses besides its accumulators; an unrolled second tile keeps part of its scores live (twice
// as much with the explicit mask's loads in flight); the fp8 dequantisation and vLLM's dims-major V
// add address and conversion registers. Calibrated against ptxas -v on sm_90a (every config this
// accepts compiled below 255 registers without spills when it was written; the CPU compile test
// re-checks a sample of each flavour). Head dims 80, 96 and 192 and a narrower V follow the same
// terms (the accumulators are V's, the rest K's): the sampled compiles at those dims stayed
// within it.
ATTN_HOST_DEVICE constexpr int register_estimate(int head_dim, int v_head_dim, int block_m,
                                                 int block_n, int warps, int unroll, bool kv_fp8,
                                                 bool v_dim_major, bool explicit_mask) {
  return (warp_rows(block_m, warps) / kMmaRows) * (v_head_dim / 2 + block_n / 2 + block_n / 4) +
         72 + (warp_rows(block_m, warps) / kMmaRows - 1) * (32 + head_dim / 4) +
         (unroll > 1 ? ((warp_rows(block_m, warps) / kMmaRows) * block_n / 4 + head_dim / 16) *
                           (explicit_mask ? 2 : 1)
                     : 0) +
         (kv_fp8 || v_dim_major ? 24 : 0);
}

// 32 rows per warp (two row tiles) keep twice the accumulators: at head_dim 128 they alone take 128
// registers, and whether the rest fits in the other 127 turns on details an estimate does not see
// (the stage count, the dequantisation, vLLM's V addressing, the explicit mask's loads, the
// soft-cap's tanh). So these shapes were measured, not estimated: ptxas -v (CUDA 13.0, sm_90a,
// 2026-11-22) over every flavour (bf16 and fp16, NHD, HND fp8, vLLM 16-bit and fp8, soft-cap,
// explicit mask), block_m 32 / 64 / 128 over 1 / 2 / 4 warps, block_n 16 to 64, 2 to 4 stages:
// - head_dim 64: no spill up to block_n 64 (unrolled tiles up to 32; not measured with the mask);
// - head_dim 128: no spill at block_n 16; at 32 and 64 only for block_m 128 over 4 warps with 2
//   stages and no unroll over 16-bit key-major K/V without mask or soft-cap (the issue-6 shape);
//   every other flavour or shape there spilled (4 to 220 bytes);
// - head_dim 256: the accumulators alone are 256 registers.
// Head dims 80 and 96 (and a V narrower than 128) take head_dim 128's shapes: fewer accumulators,
// fewer Q/K fragments. Head dim 192 takes none (192 accumulators at V 192; at V 128 Q.K^T's
// fragments are half again 128's).
ATTN_HOST_DEVICE constexpr bool wide_warp_fits(int head_dim, int block_m, int block_n, int warps,
                                               int stages, int unroll, bool kv_fp8,
                                               bool v_dim_major, bool explicit_mask,
                                               bool soft_cap) {
  if (head_dim == 64) return unroll == 1 ? block_n <= 64 : block_n <= 32 && !explicit_mask;
  if (head_dim > 128 || unroll > 1) return false;
  if (block_n == 16) return true;
  return block_n <= 64 && block_m == 128 && warps == 4 && stages == 2 && !kv_fp8 && !v_dim_major &&
         !explicit_mask && !soft_cap;
}

// Hopper's opt-in limit per block (227 KiB); the host also checks the device's own limit.
constexpr int kMaxSharedBytes = 227 * 1024;
constexpr int kMaxRegisterEstimate = 255;

enum Rule : int {
  kOk = 0,
  kHeadDim,       // head_dim and v_head_dim must be head dims (is_head_dim), V's at most K's
  kWarps,         // warps must be 1, 2, 4 or 8
  kStages,        // stages must be 2, 3 or 4
  kBlockM,        // block_m must be 16 or 32 rows per warp (one or two mma row tiles)
  kBlockN,        // block_n must be 16, 32, 64 or 128 (a multiple of the mma k16 slice)
  kUnroll,        // unroll_cache and unroll_new must be 1 or 2
  kSharedMemory,  // more than kMaxSharedBytes of shared memory
  kRegisters,     // too many registers per thread (would spill)
};

ATTN_HOST_DEVICE constexpr int check(int head_dim, int v_head_dim, int block_m, int block_n,
                                     int warps, int stages, int unroll_cache, int unroll_new,
                                     bool kv_fp8, bool v_dim_major, bool explicit_mask,
                                     bool soft_cap = false) {
  if (!is_head_dim(head_dim) || !is_head_dim(v_head_dim) || v_head_dim > head_dim) return kHeadDim;
  if (warps != 1 && warps != 2 && warps != 4 && warps != 8) return kWarps;
  if (stages < 2 || stages > 4) return kStages;
  if (block_m % warps != 0 ||
      (warp_rows(block_m, warps) != kMmaRows && warp_rows(block_m, warps) != kMaxWarpRows))
    return kBlockM;
  if (block_n != 16 && block_n != 32 && block_n != 64 && block_n != 128) return kBlockN;
  if (unroll_cache < 1 || unroll_cache > 2 || unroll_new < 1 || unroll_new > 2) return kUnroll;
  if (shared_bytes(head_dim, v_head_dim, block_m, block_n, stages, kv_fp8, v_dim_major) >
      kMaxSharedBytes)
    return kSharedMemory;
  const int unroll = unroll_cache > unroll_new ? unroll_cache : unroll_new;
  if (warp_rows(block_m, warps) == kMmaRows
          ? register_estimate(head_dim, v_head_dim, block_m, block_n, warps, unroll, kv_fp8,
                              v_dim_major, explicit_mask) > kMaxRegisterEstimate
          : !wide_warp_fits(head_dim, block_m, block_n, warps, stages, unroll, kv_fp8, v_dim_major,
                            explicit_mask, soft_cap))
    return kRegisters;
  return kOk;
}

}  // namespace prefix_prefill::sm80_mma
}  // namespace attn
