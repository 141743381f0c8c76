// Traits of paged_decode.sm90_tma: threads, shared memory and validity derived from one config.
// Included by the host (to reject a config before compiling it) and by the device template
// (which static_asserts the same rule), so the two can never disagree. The compute warps are
// those of paged_decode.sm80_mma (sm80_mma_traits.hpp: tile shapes, merge areas, register
// estimate); one more warp issues the TMA loads.
#pragma once

#include "base/host_device.hpp"
#include "kernels/paged_decode/sm80_mma_traits.hpp"

namespace attn {
namespace paged_decode::sm90_tma {

// TMA boxes are 64 16-bit elements (128 bytes, the widest the 128-byte swizzle allows) wide: a
// K/V row of head_dim elements is column_boxes(head_dim) boxes side by side. Where head_dim is not
// a multiple of 64 (80, 96, 192 is), the last box reaches past the row: the tensor map's innermost
// extent is head_dim, so TMA fills those elements with zeros without reading memory, and the
// compute never reads them.
constexpr int kBoxElements = 64;
ATTN_HOST_DEVICE constexpr int column_boxes(int head_dim) {
  return (head_dim + kBoxElements - 1) / kBoxElements;
}
// Shared memory the kernel aligns its stage area to (the 128-byte swizzle repeats every 1024).
constexpr int kAlignment = 1024;

// The compute warps, then the producer warp.
ATTN_HOST_DEVICE constexpr int threads(int warps) {
  return (warps + 1) * 32;
}
// Keys one TMA box carries: a whole page, or the block's share of a page larger than the block.
ATTN_HOST_DEVICE constexpr int box_tokens(int page_size, int block_tokens) {
  return page_size < block_tokens ? page_size : block_tokens;
}
// One K or V tile: block_tokens rows of column_boxes(head_dim) x 64 16-bit elements (the swizzle
// keeps ldmatrix conflict-free; a row's last box may be partly zero fill).
ATTN_HOST_DEVICE constexpr int tile_bytes(int head_dim, int block_tokens) {
  return block_tokens * column_boxes(head_dim) * kBoxElements * 2;
}
ATTN_HOST_DEVICE constexpr int stage_area_bytes(int head_dim, int warps, int block_tokens,
                                                int stages) {
  return paged_decode::sm80_mma::max3(stages * 2 * tile_bytes(head_dim, block_tokens),
                                      paged_decode::sm80_mma::merge_bytes(head_dim, warps),
                                      paged_decode::sm80_mma::split_merge_bytes());
}
// Alignment slack, the stage area (rounded to 16), Q [16][row_elements] (16-bit), then the full
// and empty mbarriers of every stage.
ATTN_HOST_DEVICE constexpr int q_offset(int head_dim, int warps, int block_tokens, int stages) {
  return (stage_area_bytes(head_dim, warps, block_tokens, stages) + 15) / 16 * 16;
}
ATTN_HOST_DEVICE constexpr int barrier_offset(int head_dim, int warps, int block_tokens,
                                              int stages) {
  return q_offset(head_dim, warps, block_tokens, stages) +
         paged_decode::sm80_mma::kMmaRows * paged_decode::sm80_mma::row_elements(head_dim) * 2;
}
ATTN_HOST_DEVICE constexpr int shared_bytes(int head_dim, int warps, int block_tokens, int stages) {
  return kAlignment + barrier_offset(head_dim, warps, block_tokens, stages) + stages * 2 * 8;
}

enum Rule : int {
  kOk = 0,
  kHeadDim,       // head_dim must be 64, 80, 96, 128, 192 or 256
  kWarps,         // warps must be 1, 2, 4 or 8
  kStages,        // stages must be 2, 3 or 4
  kBlockTokens,   // block_tokens must be 16 * warps * k and at most 256
  kSharedMemory,  // more than paged_decode::sm80_mma::kMaxSharedBytes of shared memory
  kRegisters,     // too many registers per thread (would spill)
  kPageSize,      // boxes must hold a multiple of 8 keys and tile the block or the page
};

// page_size 0: not known yet (the config alone); the page rule is checked when it is.
ATTN_HOST_DEVICE constexpr int check(int head_dim, int warps, int block_tokens, int stages,
                                     int page_size = 0) {
  if (head_dim != 64 && head_dim != 80 && head_dim != 96 && head_dim != 128 && head_dim != 192 &&
      head_dim != 256)
    return kHeadDim;
  if (warps != 1 && warps != 2 && warps != 4 && warps != 8) return kWarps;
  if (stages < 2 || stages > 4) return kStages;
  if (block_tokens < 16 * warps || block_tokens % (16 * warps) != 0 || block_tokens > 256)
    return kBlockTokens;
  if (shared_bytes(head_dim, warps, block_tokens, stages) > paged_decode::sm80_mma::kMaxSharedBytes)
    return kSharedMemory;
  if (paged_decode::sm80_mma::register_estimate(head_dim, warps, block_tokens) >
      paged_decode::sm80_mma::kMaxRegisterEstimate)
    return kRegisters;
  if (page_size != 0) {
    const int box = box_tokens(page_size, block_tokens);
    if (box % 8 != 0 || block_tokens % box != 0 || page_size % box != 0) return kPageSize;
  }
  return kOk;
}

}  // namespace paged_decode::sm90_tma
}  // namespace attn
