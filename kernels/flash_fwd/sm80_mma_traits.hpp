// Traits of flash_fwd.sm80_mma: the validity of one config (head_dim, tile_m, tile_n, warps,
// stages) over the shared sm80 attention loop's shapes, shared memory and register model
// (kernels/common/sm80_attention_traits.hpp). Included by the host (to refuse a config, with a
// reason, before compiling it) and by the device template (which static_asserts the same rule), so
// the two can never disagree.
#pragma once

#include "base/host_device.hpp"
#include "kernels/common/sm80_attention_traits.hpp"

namespace attn {
namespace flash_fwd::sm80_mma {

// The limit of register_estimate admits 32 rows x 64 keys at head_dim 128 (estimate 260), the
// fastest non-causal config measured there (FlashAttention-2's too), and 32 rows x 128 keys at
// head_dim 64. ptxas spills a little in some accepted configs (at c5ad04e on sm_90a: 32 of 282
// programs over the space at 16 x 1024, causal or not, at most 136 bytes, mostly the split
// pipeline with few warps or 32-row warps; in the d128 default a few local loads per key tile);
// the compile test bounds it at 256. blocksparse.sm80_mma keeps 255 and no spills.
constexpr int kMaxRegisterEstimate = 260;
// With an fp8 cache (the conversion's registers beside the loop's) no config spills: at sm_90a
// ptxas spilled 12 to 196 bytes in fp8 configs estimated at 216 (head dim 256, 32 x 32 over two
// warps) and from 225 up (head dims 128, 192 and 256), none at 212 or less.
constexpr int kMaxRegisterEstimateKvFp8 = 212;
ATTN_HOST_DEVICE constexpr int max_register_estimate(bool kv_fp8) {
  return kv_fp8 ? kMaxRegisterEstimateKvFp8 : kMaxRegisterEstimate;
}

// Hopper's opt-in limit per block (227 KiB); the host also checks the device's own limit.
constexpr int kMaxSharedBytes = 227 * 1024;

enum Rule : int {
  kOk = 0,
  kHeadDim,       // head_dim must be 64, 80, 96, 128, 192 or 256
  kWarps,         // warps must be 1, 2, 4 or 8
  kStages,        // stages must be 1 (split K / V pipeline), 2, 3 or 4; 2 to 4 with an fp8 cache
  kTileM,         // tile_m / warps must be 16 or 32 (one or two m16 fragments per warp)
  kTileN,         // tile_n must be 16, 32, 64 or 128
  kSharedMemory,  // more than kMaxSharedBytes of shared memory
  kRegisters,     // too many registers per thread (would spill)
  kVHeadDim,      // v_head_dim must be one of the head dims and at most head_dim
};

ATTN_HOST_DEVICE constexpr bool is_head_dim(int d) {
  return d == 64 || d == 80 || d == 96 || d == 128 || d == 192 || d == 256;
}

// head_dim: Q's and K's rows; v_head_dim: V's and the output's (model.v_head_dim, else head_dim).
// kv_fp8: an fp8 cache (sm80_attention::attend's KV_FP8: no split pipeline, its own shared
// memory).
ATTN_HOST_DEVICE constexpr int check(int head_dim, int v_head_dim, int tile_m, int tile_n,
                                     int warps, int stages, bool kv_fp8 = false) {
  if (!is_head_dim(head_dim)) return kHeadDim;
  if (!is_head_dim(v_head_dim) || v_head_dim > head_dim) return kVHeadDim;
  if (warps != 1 && warps != 2 && warps != 4 && warps != 8) return kWarps;
  if (stages < (kv_fp8 ? 2 : 1) || stages > 4) return kStages;
  if (tile_m != warps * sm80_attention::kMmaRows && tile_m != warps * 2 * sm80_attention::kMmaRows)
    return kTileM;
  if (tile_n != 16 && tile_n != 32 && tile_n != 64 && tile_n != 128) return kTileN;
  if ((kv_fp8 ? sm80_attention::shared_bytes_kv_fp8(head_dim, v_head_dim, tile_m, tile_n, stages)
              : sm80_attention::shared_bytes(head_dim, v_head_dim, tile_m, tile_n, stages)) >
      kMaxSharedBytes)
    return kSharedMemory;
  if (sm80_attention::register_estimate(head_dim, v_head_dim, tile_m, tile_n, warps) >
      max_register_estimate(kv_fp8))
    return kRegisters;
  return kOk;
}
// V as wide as Q and K.
ATTN_HOST_DEVICE constexpr int check(int head_dim, int tile_m, int tile_n, int warps, int stages) {
  return check(head_dim, head_dim, tile_m, tile_n, warps, stages);
}

}  // namespace flash_fwd::sm80_mma
}  // namespace attn
