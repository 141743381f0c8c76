// Traits of paged_decode.sm80_mma: threads, tile shapes, shared memory and validity derived from
// one config. Included by the host (to reject a config before compiling it) and by the device
// template (which static_asserts the same rule), so the two can never disagree.
#pragma once

#include "base/host_device.hpp"

namespace attn {
namespace paged_decode::sm80_mma {

// The q heads of one GQA group fill the M rows of an mma.sync m16n8k16 tile; larger groups would
// need a second M tile.
constexpr int kMmaRows = 16;
constexpr int kMaxGroup = kMmaRows;
// Most splits of one sequence: the CTA that merges them keeps one weight per split and row in
// shared memory.
constexpr int kMaxSplits = 128;
// Q fragments stay in registers for the whole key loop up to this head dim (32 registers at 128);
// at 256 they would crowd out the output accumulator, so they are re-read from shared memory.
constexpr int kMaxHeadDimQInRegisters = 128;
// With fp8 K/V they are always re-read (four 32-bit shared loads per k16 step): at head dim 128
// that keeps a thread at 125 registers instead of 158, 16 warps per SM instead of 12 (1-2% faster
// on the fp8 rows of decode-shapes on an H200).
ATTN_HOST_DEVICE constexpr bool q_in_registers(int head_dim, int kv_bytes) {
  return kv_bytes == 2 && head_dim <= kMaxHeadDimQInRegisters;
}

// Groups of at most kKeyRowsMaxGroup q heads at head dims up to kKeyRowsMaxHeadDim run the
// key-rows form (sm80_mma_block_key_rows.cuh: the heads are the 8 N columns of each mma instead of
// its 16 M rows, so no row is padding). Wider heads keep the head-rows form: on an H200,
// g7-d256-fp8t-64x2048 took 108.29 us in it against 121.15-130.4 in the key-rows form.
constexpr int kKeyRowsMaxGroup = 8;
constexpr int kKeyRowsMaxHeadDim = 128;
ATTN_HOST_DEVICE constexpr bool key_rows(int group, int head_dim) {
  return group <= kKeyRowsMaxGroup && head_dim <= kKeyRowsMaxHeadDim;
}

ATTN_HOST_DEVICE constexpr int threads(int warps) {
  return warps * 32;
}
// Each warp owns a contiguous slice of every compute block's keys (its own softmax state).
ATTN_HOST_DEVICE constexpr int warp_tokens(int warps, int block_tokens) {
  return block_tokens / warps;
}
// A shared-memory row of K or V: head_dim elements of kv_bytes each (2: bf16/fp16, 1: fp8 codes)
// plus 16 bytes of padding, so the 8 rows one ldmatrix (or one 32-bit load per lane) reads start in
// different bank groups (no conflicts): that needs an odd count of 16-byte chunks per row, so a row
// of an even count after the padding (fp8 at head dim 80: 5 + 1) gets 16 bytes more. Every other
// head dim keeps data + 16. Q rows are 16-bit: row_elements 16-bit elements.
ATTN_HOST_DEVICE constexpr int row_bytes(int head_dim, int kv_bytes) {
  return (head_dim * kv_bytes / 16 + 1) % 2 == 1 ? head_dim * kv_bytes + 16
                                                 : head_dim * kv_bytes + 32;
}
// A K/V row is copied by copy_chunks(head_dim, kv_bytes) lanes of 16 bytes each, in a group of
// copy_lanes, the next power of two (so a warp copies whole rows per pass); where the chunks are
// not a power of two (head dims 80, 96, 192) the group's extra lanes copy nothing.
ATTN_HOST_DEVICE constexpr int copy_chunks(int head_dim, int kv_bytes) {
  return head_dim * kv_bytes / 16;
}
ATTN_HOST_DEVICE constexpr int copy_lanes(int head_dim, int kv_bytes) {
  int lanes = 1;
  while (lanes < copy_chunks(head_dim, kv_bytes)) lanes *= 2;
  return lanes;
}
// Passes of a warp's copy of its keys of one block (rows per pass: 32 / copy_lanes).
ATTN_HOST_DEVICE constexpr int copy_passes(int head_dim, int kv_bytes, int warps,
                                           int block_tokens) {
  return warp_tokens(warps, block_tokens) / (32 / copy_lanes(head_dim, kv_bytes));
}
// Where the copy lanes are padded (head dims 80, 96, 192), more than this many passes per block
// spill: at head dim 192 in bf16 (one row per pass), 32 passes (t64.w2, t128.w4) spilled 12 bytes
// at 168 registers on sm_80, 16 passes none.
constexpr int kMaxPaddedCopyPasses = 16;
ATTN_HOST_DEVICE constexpr int row_elements(int head_dim) {
  return head_dim + 8;
}
ATTN_HOST_DEVICE constexpr int stage_bytes(int head_dim, int block_tokens, int kv_bytes = 2) {
  return 2 * block_tokens * row_bytes(head_dim, kv_bytes);
}
ATTN_HOST_DEVICE constexpr int merge_bytes(int head_dim, int warps) {
  return warps * kMmaRows * (head_dim + 2) * 4;
}
ATTN_HOST_DEVICE constexpr int split_merge_bytes() {
  return (kMaxSplits + 2) * kMmaRows * 4;
}
ATTN_HOST_DEVICE constexpr int max3(int a, int b, int c) {
  return a > b ? (a > c ? a : c) : (b > c ? b : c);
}
// STAGES buffers of K and V for block_tokens keys. After the key loop the same bytes hold the
// cross-warp merge (warps x 16 rows x head_dim floats + max and sum), then the split merge
// (kMaxSplits x 16 weights + 2 x 16 row factors): the area is the largest of the three.
ATTN_HOST_DEVICE constexpr int stage_area_bytes(int head_dim, int warps, int block_tokens,
                                                int stages, int kv_bytes = 2) {
  return max3(stages * stage_bytes(head_dim, block_tokens, kv_bytes), merge_bytes(head_dim, warps),
              split_merge_bytes());
}
// The stage area, then Q [16][row_elements] (16-bit).
ATTN_HOST_DEVICE constexpr int shared_bytes(int head_dim, int warps, int block_tokens, int stages,
                                            int kv_bytes = 2) {
  return stage_area_bytes(head_dim, warps, block_tokens, stages, kv_bytes) +
         kMmaRows * row_elements(head_dim) * 2;
}
// Rough per-thread register need: the output accumulator (16 x head_dim floats over 32 lanes),
// Q's A fragments when they stay in registers, the warp's scores and their 16-bit copies as A
// fragments, fragments and addresses.
ATTN_HOST_DEVICE constexpr int register_estimate(int head_dim, int warps, int block_tokens,
                                                 int kv_bytes = 2) {
  return head_dim / 2 + (q_in_registers(head_dim, kv_bytes) ? head_dim / 4 : 0) +
         3 * warp_tokens(warps, block_tokens) / 4 + 56;
}

// Hopper's opt-in limit per block (227 KiB); the host also checks the device's own limit.
constexpr int kMaxSharedBytes = 227 * 1024;
constexpr int kMaxRegisterEstimate = 255;

enum Rule : int {
  kOk = 0,
  kHeadDim,       // head_dim must be 64, 80, 96, 128, 192 or 256
  kWarps,         // warps must be 1, 2, 4 or 8
  kStages,        // stages must be 2, 3 or 4
  kBlockTokens,   // block_tokens must be 16 * warps * k and at most 256
  kSharedMemory,  // more than kMaxSharedBytes of shared memory
  kRegisters,     // too many registers per thread (would spill)
  kCopyPasses,    // padded copy lanes: more than kMaxPaddedCopyPasses copy passes (would spill)
};

// Why a config breaks each rule (kernels/rule_message.hpp fills the {placeholders}).
ATTN_HOST_DEVICE constexpr const char* rule_text(int rule) {
  switch (rule) {
    case kHeadDim:
      return "head_dim {head_dim} is not 64, 80, 96, 128, 192 or 256";
    case kWarps:
      return "warps must be 1, 2, 4 or 8";
    case kStages:
      return "stages must be 2, 3 or 4";
    case kBlockTokens:
      return "tile_tokens must be a multiple of {keys_per_slice} (16 keys per warp, one mma "
             "k-slice) and at most 256";
    case kSharedMemory:
      return "needs {shared_bytes} bytes of shared memory (limit {shared_limit}): lower stages or "
             "tile_tokens";
    case kRegisters:
      return "too many registers per thread (estimate {register_estimate}, limit "
             "{register_limit}): lower tile_tokens or raise warps";
    case kCopyPasses:
      return "head_dim {head_dim}: a warp copies its tile_tokens / warps keys in {copy_passes} "
             "passes, over {copy_pass_limit} (would spill): lower tile_tokens or raise warps";
    default:
      return "invalid config";
  }
}

ATTN_HOST_DEVICE constexpr int check(int head_dim, int warps, int block_tokens, int stages,
                                     int kv_bytes = 2) {
  if (head_dim != 64 && head_dim != 80 && head_dim != 96 && head_dim != 128 && head_dim != 192 &&
      head_dim != 256)
    return kHeadDim;
  if (warps != 1 && warps != 2 && warps != 4 && warps != 8) return kWarps;
  if (stages < 2 || stages > 4) return kStages;
  if (block_tokens < 16 * warps || block_tokens % (16 * warps) != 0 || block_tokens > 256)
    return kBlockTokens;
  if (shared_bytes(head_dim, warps, block_tokens, stages, kv_bytes) > kMaxSharedBytes)
    return kSharedMemory;
  if (register_estimate(head_dim, warps, block_tokens, kv_bytes) > kMaxRegisterEstimate)
    return kRegisters;
  if (copy_lanes(head_dim, kv_bytes) != copy_chunks(head_dim, kv_bytes) &&
      copy_passes(head_dim, kv_bytes, warps, block_tokens) > kMaxPaddedCopyPasses)
    return kCopyPasses;
  return kOk;
}

}  // namespace paged_decode::sm80_mma
}  // namespace attn
