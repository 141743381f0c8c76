// Traits of blocksparse.sm80_mma_decode: threads, tile shapes, shared memory and validity derived
// from one config (head_dim, tile_n, warps, stages) and the cache's dtype (16-bit or fp8 codes).
// Included by the host (to refuse a config with a reason before compiling it) and by the device
// template (which static_asserts the same rule).
#pragma once

#include "base/host_device.hpp"

namespace attn {
namespace blocksparse::sm80_mma_decode {

// The q heads of one GQA group fill the M rows of an mma.sync m16n8k16 tile (rows past the group
// are padding), so one CTA reads each K/V tile once for the whole group.
constexpr int kMmaRows = 16;
constexpr int kMaxGroup = kMmaRows;

ATTN_HOST_DEVICE constexpr int threads(int warps) {
  return warps * 32;
}
// Each warp owns a contiguous slice of every key tile and its own softmax state.
ATTN_HOST_DEVICE constexpr int warp_keys(int tile_n, int warps) {
  return tile_n / warps;
}
// A padded shared-memory row of Q, K or V (16-bit): 16 bytes of padding keep ldmatrix
// bank-conflict free.
ATTN_HOST_DEVICE constexpr int row_elements(int head_dim) {
  return head_dim + 8;
}
// A K/V row's 16-byte chunks are copied by a group of copy_lanes lanes, the next power of two (a
// warp copies whole rows per pass); at head dims 80, 96 and 192 the group's extra lanes idle.
ATTN_HOST_DEVICE constexpr int copy_lanes(int head_dim) {
  int lanes = 1;
  while (lanes < head_dim / 8) lanes *= 2;
  return lanes;
}
// One stage: K and V of tile_n keys, padded 16-bit rows, or with an fp8 cache the codes as copied
// (plain rows, one byte a code).
ATTN_HOST_DEVICE constexpr int stage_bytes(int head_dim, int tile_n, bool kv_fp8 = false) {
  return kv_fp8 ? 2 * tile_n * head_dim : 2 * tile_n * row_elements(head_dim) * 2;
}
// With an fp8 cache, after the stages: the one K and V tile of 16-bit values (padded rows) each
// warp converts its rows of the landed stage into.
ATTN_HOST_DEVICE constexpr int converted_bytes(int head_dim, int tile_n, bool kv_fp8) {
  return kv_fp8 ? 2 * tile_n * row_elements(head_dim) * 2 : 0;
}
ATTN_HOST_DEVICE constexpr int kv_area_bytes(int head_dim, int tile_n, int stages, bool kv_fp8) {
  return stages * stage_bytes(head_dim, tile_n, kv_fp8) + converted_bytes(head_dim, tile_n, kv_fp8);
}
// The cross-warp merge after the key loop: each warp's [16][head_dim] output and its 16 row maxima
// and sums, as floats.
ATTN_HOST_DEVICE constexpr int merge_bytes(int head_dim, int warps) {
  return warps * kMmaRows * (head_dim + 2) * 4;
}
// STAGES K/V buffers (fp8: and the converted tile; reused by the merge), then Q [16][row_elements].
ATTN_HOST_DEVICE constexpr int shared_bytes(int head_dim, int tile_n, int warps, int stages,
                                            bool kv_fp8 = false) {
  return (kv_area_bytes(head_dim, tile_n, stages, kv_fp8) > merge_bytes(head_dim, warps)
              ? kv_area_bytes(head_dim, tile_n, stages, kv_fp8)
              : merge_bytes(head_dim, warps)) +
         kMmaRows * row_elements(head_dim) * 2;
}
// Per-thread registers: the output accumulator (16 x head_dim floats over 32 lanes), Q's A
// fragments (kept in registers), the warp's scores, and addresses, statistics and fragments in
// flight (paged_decode.sm80_mma's allowance for the same loop).
ATTN_HOST_DEVICE constexpr int register_estimate(int head_dim, int tile_n, int warps) {
  return head_dim / 2 + head_dim / 4 + 3 * warp_keys(tile_n, warps) / 4 + 56;
}

constexpr int kMaxSharedBytes = 227 * 1024;
constexpr int kMaxRegisterEstimate = 255;
// With an fp8 cache the codes a lane converts are in flight beside the loop's registers: ptxas
// (CUDA 13.0) spilled 8 bytes at sm_80 and 40 at sm_90a at head dim 192 with 64 keys per warp
// (estimate 248) and used 243 registers at head dim 128 with 64 keys per warp (estimate 200);
// flash_fwd.sm80_mma's fp8 limit holds here too.
constexpr int kMaxRegisterEstimateKvFp8 = 212;
ATTN_HOST_DEVICE constexpr int max_register_estimate(bool kv_fp8) {
  return kv_fp8 ? kMaxRegisterEstimateKvFp8 : kMaxRegisterEstimate;
}

enum Rule : int {
  kOk = 0,
  kHeadDim,       // head_dim must be 64, 80, 96, 128 or 192
  kWarps,         // warps must be 1, 2, 4 or 8
  kStages,        // stages must be 2, 3 or 4 (with an fp8 cache too)
  kTileN,         // tile_n must be a multiple of 16 * warps, at most 128
  kSharedMemory,  // more than kMaxSharedBytes of shared memory
  kRegisters,     // too many registers per thread (would spill)
  kBlockSize,     // tile_n must divide the layout's block size
};

// kv_fp8: an fp8 cache (the kernel's KV_FP8: codes in the stages, one converted tile).
ATTN_HOST_DEVICE constexpr int check(int head_dim, int tile_n, int warps, int stages,
                                     bool kv_fp8 = false) {
  if (head_dim != 64 && head_dim != 80 && head_dim != 96 && head_dim != 128 && head_dim != 192)
    return kHeadDim;
  if (warps != 1 && warps != 2 && warps != 4 && warps != 8) return kWarps;
  if (stages < 2 || stages > 4) return kStages;
  if (tile_n < 16 * warps || tile_n % (16 * warps) != 0 || tile_n > 128) return kTileN;
  if (shared_bytes(head_dim, tile_n, warps, stages, kv_fp8) > kMaxSharedBytes) return kSharedMemory;
  if (register_estimate(head_dim, tile_n, warps) > max_register_estimate(kv_fp8)) return kRegisters;
  return kOk;
}

// A key tile lies inside one layout block, so one bit per q head says whether it is kept.
ATTN_HOST_DEVICE constexpr int check_block(int block_size, int tile_n) {
  return block_size % tile_n == 0 ? kOk : kBlockSize;
}

}  // namespace blocksparse::sm80_mma_decode
}  // namespace attn
