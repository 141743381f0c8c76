// Traits of blocksparse.sm80_mma: validity of a config (head_dim, tile_m, tile_n, warps, stages)
// and of its fit to a layout's block size, and the walk over one query tile's kept key tiles.
// Included by the host (to refuse a config with a reason before compiling it, and by the CPU tests
// that check the walk against workloads/visibility) and by the device template (which
// static_asserts the config rule and walks the layout with the same functions), so the two cannot
// disagree.
//
// The kernel body is the sm80 attention loop that flash_fwd.sm80_mma runs too
// (kernels/common/sm80_attention.cuh), so its register and shared-memory model is that loop's
// (kernels/common/sm80_attention_traits.hpp), measured with ptxas; its config rule is
// flash_fwd.sm80_mma's narrowed (no split pipeline, no head_dim 256, no spills); only the rules
// that differ live here. An fp8 cache (kv_fp8) takes the loop's fp8 form: its shared memory
// (codes in the stages, one converted 16-bit tile) and flash_fwd.sm80_mma's fp8 register limit.
#pragma once

#include "base/host_device.hpp"
#include "kernels/flash_fwd/sm80_mma_traits.hpp"

namespace attn {
namespace blocksparse::sm80_mma {

enum Rule : int {
  kOk = 0,
  kHeadDim,       // head_dim must be 64, 80, 96, 128 or 192
  kWarps,         // warps must be 1, 2, 4 or 8
  kStages,        // stages must be 2, 3 or 4 (with an fp8 cache too)
  kTileM,         // tile_m / warps must be 16 or 32
  kTileN,         // tile_n must be 16, 32, 64 or 128
  kSharedMemory,  // more than flash_fwd::sm80_mma::kMaxSharedBytes of shared memory
  kRegisters,     // too many registers per thread (would spill)
  kBlockSize,     // tile_m and tile_n must each divide the layout's block size
  kVHeadDim,      // v_head_dim must be one of the head dims and at most head_dim
};

constexpr int kMaxRegisterEstimate = 255;
// With an fp8 cache the conversion's registers join the loop's: flash_fwd.sm80_mma's limit for
// the same loop (ptxas spilled above it there), held to this family's V-as-wide-as-K estimate.
ATTN_HOST_DEVICE constexpr int max_register_estimate(bool kv_fp8) {
  return kv_fp8 ? flash_fwd::sm80_mma::kMaxRegisterEstimateKvFp8 : kMaxRegisterEstimate;
}

// The estimate the no-spill rule holds a config to: V counted as wide as Q and K. With a
// narrower V's own (smaller) estimate, 32-row warps at (192, 128) were admitted and ptxas spilled
// 8 to 32 bytes there (st2.tm32.tn32.w1 and st2..4.tm64.tn32.w2, sm_90a, CUDA 13.0).
ATTN_HOST_DEVICE constexpr int register_estimate(int head_dim, int tile_m, int tile_n, int warps) {
  return sm80_attention::register_estimate(head_dim, head_dim, tile_m, tile_n, warps);
}

// head_dim: Q's and K's rows; v_head_dim: V's and the output's (model.v_head_dim, else head_dim).
// kv_fp8: an fp8 cache (sm80_attention::attend's KV_FP8).
ATTN_HOST_DEVICE constexpr int check(int head_dim, int v_head_dim, int tile_m, int tile_n,
                                     int warps, int stages, bool kv_fp8 = false) {
  if (head_dim == 256 || !flash_fwd::sm80_mma::is_head_dim(head_dim)) return kHeadDim;
  const int rule =
      flash_fwd::sm80_mma::check(head_dim, v_head_dim, tile_m, tile_n, warps, stages, kv_fp8);
  if (rule == flash_fwd::sm80_mma::kVHeadDim) return kVHeadDim;
  // No split K / V pipeline here (flash_fwd.sm80_mma's stages 1); its rules run warps, then stages.
  if (rule != flash_fwd::sm80_mma::kWarps && stages < 2) return kStages;
  switch (rule) {
    case flash_fwd::sm80_mma::kOk:  // no spills here (flash_fwd.sm80_mma admits a few bytes where
                                    // they paid)
      return register_estimate(head_dim, tile_m, tile_n, warps) > max_register_estimate(kv_fp8)
                 ? kRegisters
                 : kOk;
    case flash_fwd::sm80_mma::kWarps:
      return kWarps;
    case flash_fwd::sm80_mma::kStages:
      return kStages;
    case flash_fwd::sm80_mma::kTileM:
      return kTileM;
    case flash_fwd::sm80_mma::kTileN:
      return kTileN;
    case flash_fwd::sm80_mma::kSharedMemory:
      return kSharedMemory;
    case flash_fwd::sm80_mma::kRegisters:
      return kRegisters;
    default:
      return kHeadDim;
  }
}
// V as wide as Q and K.
ATTN_HOST_DEVICE constexpr int check(int head_dim, int tile_m, int tile_n, int warps, int stages) {
  return check(head_dim, head_dim, tile_m, tile_n, warps, stages);
}

// A query tile lies in one block row of the layout and a key tile in one block column, so every
// tile is kept or dropped whole and the kernel needs no per-element block test: both tile sizes
// divide the layout's block (a block of 64 is walked as one 64-key tile, or two of 32, ...).
ATTN_HOST_DEVICE constexpr int check_block(int block_size, int tile_m, int tile_n) {
  return (block_size % tile_m == 0 && block_size % tile_n == 0) ? kOk : kBlockSize;
}

ATTN_HOST_DEVICE constexpr int shared_bytes(int head_dim, int v_head_dim, int tile_m, int tile_n,
                                            int stages, bool kv_fp8 = false) {
  return kv_fp8 ? sm80_attention::shared_bytes_kv_fp8(head_dim, v_head_dim, tile_m, tile_n, stages)
                : sm80_attention::shared_bytes(head_dim, v_head_dim, tile_m, tile_n, stages);
}
ATTN_HOST_DEVICE constexpr int shared_bytes(int head_dim, int tile_m, int tile_n, int stages) {
  return shared_bytes(head_dim, head_dim, tile_m, tile_n, stages);
}

// The key tiles one query tile visits. Query tiles are aligned to absolute positions: tile t of a
// sequence holds positions [t * tile_m, (t + 1) * tile_m), the rows before the sequence's context
// or past its end being padding; so the tile sits in block row (t * tile_m) / block_size. The row's
// kept blocks (cols[0 .. count), increasing, all <= the row) are walked tile_n keys at a time; only
// the last kept block can be the diagonal one, and of it only the tiles up to `key_limit` (the
// first key no row of the query tile sees: its last position + 1 when causal, else kv_len) are
// visited.
struct TileWalk {
  const int* cols;  // the row's kept block columns
  int count;        // kept blocks in the row
  int sub_tiles;    // block_size / tile_n
  int block_size;
  int tiles;  // key tiles visited
};

ATTN_HOST_DEVICE inline TileWalk tile_walk(const int* crow_row, const int* head_cols, int q_block,
                                           int block_size, int tile_n, int key_limit) {
  TileWalk w;
  w.cols = head_cols + crow_row[0];
  w.count = crow_row[1] - crow_row[0];
  w.sub_tiles = block_size / tile_n;
  w.block_size = block_size;
  w.tiles = 0;
  if (w.count > 0) {
    w.tiles = (w.count - 1) * w.sub_tiles;
    const int last = w.cols[w.count - 1];
    int last_tiles = w.sub_tiles;
    if (last == q_block) {  // the diagonal block: not past key_limit
      const int keys = key_limit - last * block_size;
      last_tiles = keys <= 0 ? 0 : (keys + tile_n - 1) / tile_n;
      if (last_tiles > w.sub_tiles) last_tiles = w.sub_tiles;
    }
    w.tiles += last_tiles;
  }
  return w;
}

// The first key (sequence-local) of the walk's tile n < tiles.
ATTN_HOST_DEVICE inline int tile_key0(const TileWalk& w, int n, int tile_n) {
  const int entry = n / w.sub_tiles;
  return w.cols[entry] * w.block_size + (n - entry * w.sub_tiles) * tile_n;
}

}  // namespace blocksparse::sm80_mma
}  // namespace attn
