// Traits of paged_decode.splitkv: threads, tile shapes, shared memory and validity derived from one
// config. Included by the host (to reject a config before compiling it) and by the device template
// (which static_asserts the same rule), so the two can never disagree.
#pragma once

#include "base/host_device.hpp"

namespace attn {
namespace splitkv {

// Each key row of head_dim elements is read by LANES lanes, 8 elements (16 bytes) per lane.
ATTN_HOST_DEVICE constexpr int lanes_per_token(int head_dim) {
  return head_dim / 8;
}
ATTN_HOST_DEVICE constexpr int threads(int warps) {
  return warps * 32;
}
// Key rows a CTA reads at once.
ATTN_HOST_DEVICE constexpr int token_rows(int head_dim, int warps) {
  return threads(warps) / lanes_per_token(head_dim);
}
ATTN_HOST_DEVICE constexpr int tokens_per_row(int head_dim, int warps, int tile_tokens) {
  return tile_tokens / token_rows(head_dim, warps);
}
// Scores of the tile for each head, or (after the key loop) half of the rows' partial outputs for
// the cross-row reduction: the two uses never overlap in time.
ATTN_HOST_DEVICE constexpr int shared_bytes(int head_dim, int heads_per_cta, int warps,
                                            int tile_tokens) {
  int scores = heads_per_cta * tile_tokens * 4;
  int reduction = (token_rows(head_dim, warps) / 2) * heads_per_cta * head_dim * 4;
  return (scores > reduction ? scores : reduction) + 3 * heads_per_cta * 4;
}
// Rough per-thread register need, fitted to ptxas (sm_90a, CUDA 13.0): q and accumulator (8 floats
// per head each), the tile's K and V registers plus their addresses (~12 per key row), and
// bookkeeping. Configs over the limit would spill to local memory.
ATTN_HOST_DEVICE constexpr int register_estimate(int head_dim, int heads_per_cta, int warps,
                                                 int tile_tokens) {
  return 16 * heads_per_cta + 12 * tokens_per_row(head_dim, warps, tile_tokens) + 40;
}

constexpr int kMaxSharedBytes = 48 * 1024;
constexpr int kMaxRegisterEstimate = 255;

enum Rule : int {
  kOk = 0,
  kHeadDim,       // head_dim must be 64, 128 or 256 (8 elements per lane, lanes dividing 32)
  kWarps,         // warps must be 1, 2, 4 or 8
  kHeadsPerCta,   // heads_per_cta must be 1, 2, 4 or 8
  kTileTokens,    // tile_tokens must be a multiple of the CTA's token rows, at most 256
  kSharedMemory,  // more than 48 KiB of shared memory
  kRegisters,     // too many registers per thread (would spill)
};

ATTN_HOST_DEVICE constexpr int check(int head_dim, int heads_per_cta, int warps, int tile_tokens) {
  if (head_dim != 64 && head_dim != 128 && head_dim != 256) return kHeadDim;
  if (warps != 1 && warps != 2 && warps != 4 && warps != 8) return kWarps;
  if (heads_per_cta != 1 && heads_per_cta != 2 && heads_per_cta != 4 && heads_per_cta != 8)
    return kHeadsPerCta;
  int rows = token_rows(head_dim, warps);
  if (tile_tokens < rows || tile_tokens % rows != 0 || tile_tokens > 256) return kTileTokens;
  if (shared_bytes(head_dim, heads_per_cta, warps, tile_tokens) > kMaxSharedBytes)
    return kSharedMemory;
  if (register_estimate(head_dim, heads_per_cta, warps, tile_tokens) > kMaxRegisterEstimate)
    return kRegisters;
  return kOk;
}

}  // namespace splitkv
}  // namespace attn
