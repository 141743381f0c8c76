// Traits of mla_decode.sm90_wgmma_key_rows: threads, shared memory, registers and validity derived
// from one config, the latent widths and the page size. Included by the host (to decline a
// config, with a reason, before compiling it) and by the device template (which static_asserts the
// same rule), so the two never disagree.
//
// The key-rows form: the keys are wgmma's 64 M rows and a CTA's tile_rows (query token, q head)
// rows its N, so 16 or 32 heads fill the tensor cores where mla_decode.sm90_wgmma's 64-row tiles
// would be three quarters padding:
//   S^T = K Q^T    [64 keys x tile_rows]: A the latent block (K-major), B Q's rows (K-major)
//   O^T += V^T P^T [rank x tile_rows]: A V's columns of the block (MN-major), B P^T
//                  [tile_rows][64 keys] (K-major, written by the softmax to shared memory)
// A CTA has one producer warpgroup (one warp loads 64-key blocks by TMA into two stages) and two
// consumer warpgroups; warpgroup w takes the blocks i = w, w + 2, .. of the split (stage w), each
// with its own online softmax and its own rank x tile_rows accumulator (rank / 64 wgmma M tiles,
// tile_rows / 2 registers each); the two meet once, after the loop. 32 rows fit the registers at
// ranks up to 256; DeepSeek-V3's 512 takes 16.
// Shared memory (after 1 KiB of alignment slack): Q as (rank + rope) / 64 column blocks of
// [tile_rows][64], the two stages as column blocks of [64][64], each warpgroup's P^T, the
// maxima's exchange, then the mbarriers. After the loop the stages hold warpgroup 1's state, the
// normalised rows and the split merge's weights.
#pragma once

#include "base/host_device.hpp"

namespace attn {
namespace mla_decode::sm90_wgmma_key_rows {

constexpr int kBlock = 64;         // keys of one block: one wgmma M tile of S^T
constexpr int kStages = 2;         // one per consumer warpgroup
constexpr int kConsumers = 2;      // consumer warpgroups, alternate blocks
constexpr int kWarpsPerGroup = 4;  // warps of a warpgroup (the maxima's exchange)
constexpr int kBlockColumns = 64;  // 16-bit elements of a 128-byte swizzle row (a TMA box width)
constexpr int kRowBytes = kBlockColumns * 2;
constexpr int kMaxSplits = 64;    // the merging CTA reads one partial row per split
constexpr int kAlignment = 1024;  // the 128-byte swizzle repeats every 8 rows of 128 bytes
constexpr int kMinBoxTokens = 8;  // a box is whole 8-row swizzle atoms
constexpr int kThreads = 128 * (kConsumers + 1);
// The normalised rows' stride in floats (rank + 4: the four lanes of a quad, two rows apart,
// land in different banks).
ATTN_HOST_DEVICE constexpr int out_stride(int rank) {
  return rank + 4;
}

ATTN_HOST_DEVICE constexpr int width(int rank, int rope) {
  return rank + rope;
}
ATTN_HOST_DEVICE constexpr int column_blocks(int rank, int rope) {
  return width(rank, rope) / kBlockColumns;
}
ATTN_HOST_DEVICE constexpr int q_bytes(int rank, int rope, int tile_rows) {
  return tile_rows * width(rank, rope) * 2;
}
ATTN_HOST_DEVICE constexpr int stage_bytes(int rank, int rope) {
  return kBlock * width(rank, rope) * 2;
}
ATTN_HOST_DEVICE constexpr int p_bytes(int tile_rows) {
  return tile_rows * kRowBytes;  // one warpgroup's P^T: [tile_rows][64 keys] 16-bit
}
// Each warpgroup's per-warp block maxima, double-buffered by block parity: [2][2][4][tile_rows].
ATTN_HOST_DEVICE constexpr int exchange_bytes(int tile_rows) {
  return kConsumers * 2 * kWarpsPerGroup * tile_rows * 4;
}
// What the stages hold after the loop: warpgroup 1's accumulator and statistics (stage 1), the
// normalised rows [tile_rows][out_stride] (stage 0), then the merge's weights [kMaxSplits]
// [tile_rows] (stage 0).
ATTN_HOST_DEVICE constexpr int state_bytes(int rank, int tile_rows) {
  return (rank * tile_rows + 2 * tile_rows) * 4;
}
ATTN_HOST_DEVICE constexpr int rows_bytes(int rank, int tile_rows) {
  return (tile_rows * out_stride(rank) + tile_rows) * 4;
}
ATTN_HOST_DEVICE constexpr int merge_bytes(int tile_rows) {
  return kMaxSplits * tile_rows * 4;
}
// Offsets from the aligned base: Q, the stages, each warpgroup's P^T, the exchange, the barriers.
ATTN_HOST_DEVICE constexpr int stages_offset(int rank, int rope, int tile_rows) {
  return q_bytes(rank, rope, tile_rows);
}
ATTN_HOST_DEVICE constexpr int p_offset(int rank, int rope, int tile_rows) {
  return stages_offset(rank, rope, tile_rows) + kStages * stage_bytes(rank, rope);
}
ATTN_HOST_DEVICE constexpr int exchange_offset(int rank, int rope, int tile_rows) {
  return p_offset(rank, rope, tile_rows) + kConsumers * p_bytes(tile_rows);
}
ATTN_HOST_DEVICE constexpr int barrier_offset(int rank, int rope, int tile_rows) {
  return exchange_offset(rank, rope, tile_rows) + exchange_bytes(tile_rows);
}
ATTN_HOST_DEVICE constexpr int shared_bytes(int rank, int rope, int tile_rows) {
  return kAlignment + barrier_offset(rank, rope, tile_rows) + 2 * kStages * 8;
}

// Keys one TMA box carries: the largest common divisor of the page size and the block.
ATTN_HOST_DEVICE constexpr int gcd(int a, int b) {
  return b == 0 ? a : gcd(b, a % b);
}
ATTN_HOST_DEVICE constexpr int box_tokens(int page_size) {
  return gcd(page_size, kBlock);
}

// Per-thread registers of a consumer's live arrays: its accumulator (rank x tile_rows fp32 over
// 128 threads), the block's scores S^T (64 x tile_rows fp32, in score_chains partial sums) and
// the statistics of its
// tile_rows / 4 columns, plus addresses and loop state. The limit is the launch's 168 per thread
// (65536 / 384, rounded down to a multiple of 8), not the 240 setmaxnreg gives the consumers at
// run time: ptxas allocated this kernel within 168 (32 rows at rank 512, an estimate of 200,
// spilled 168 bytes).
constexpr int kRegisterOverhead = 40;
constexpr int kProducerRegisters = 24;
constexpr int kConsumerRegisters = 240;
constexpr int kMaxRegisters = 168;
// S^T's k16 steps go to this many accumulators in turn (independent chains of wgmmas), summed
// after: 4 at 16 rows, 2 at 32.
ATTN_HOST_DEVICE constexpr int score_chains(int tile_rows) {
  return tile_rows <= 16 ? 4 : 2;
}
ATTN_HOST_DEVICE constexpr int register_estimate(int rank, int tile_rows) {
  return rank * tile_rows / 128 + score_chains(tile_rows) * tile_rows / 2 + tile_rows / 2 +
         kRegisterOverhead;
}

// Hopper's opt-in limit per block (227 KiB); the host also checks the device's own limit.
constexpr int kMaxSharedBytes = 227 * 1024;

enum Rule : int {
  kOk = 0,
  kRank,          // kv_lora_rank: a multiple of 64 (whole wgmma M tiles of O^T)
  kRope,          // qk_rope_head_dim: 64 or 128 (latent rows of whole 64-column blocks)
  kTileRows,      // tile_rows: 16 or 32
  kSharedMemory,  // more than kMaxSharedBytes
  kRegisters,     // more registers per consumer thread than the launch gives (would spill)
  kPageSize,      // a TMA box (page piece) must hold a multiple of 8 keys
};

ATTN_HOST_DEVICE constexpr const char* rule_text(int rule) {
  switch (rule) {
    case kRank:
      return "kv_lora_rank {rank} is not a multiple of 64 (whole 64-row wgmma tiles of the "
             "transposed output)";
    case kRope:
      return "qk_rope_head_dim {rope} is not 64 or 128 (latent rows of whole 64-column TMA boxes)";
    case kTileRows:
      return "tile_rows must be 16 or 32";
    case kSharedMemory:
      return "needs {shared_bytes} bytes of shared memory (limit {shared_limit}): a narrower "
             "latent row or fewer tile_rows";
    case kRegisters:
      return "too many registers per consumer thread (estimate {register_estimate}, limit "
             "{register_limit}): kv_lora_rank {rank} x tile_rows is too wide an accumulator";
    case kPageSize:
      return "pages of {page_size} keys: a TMA box (the largest part of a page that tiles a "
             "64-key block) must hold a multiple of 8 keys, whole 128-byte swizzle atoms; "
             "mla_decode.sm80_mma takes any page size";
    default:
      return "invalid config";
  }
}

// page_size 0: not known yet (the config alone); the page rule is checked when it is.
ATTN_HOST_DEVICE constexpr int check(int rank, int rope, int tile_rows, int page_size = 0) {
  if (rank <= 0 || rank % 64 != 0) return kRank;
  if (rope != 64 && rope != 128) return kRope;
  if (tile_rows != 16 && tile_rows != 32) return kTileRows;
  if (shared_bytes(rank, rope, tile_rows) > kMaxSharedBytes) return kSharedMemory;
  if (register_estimate(rank, tile_rows) > kMaxRegisters) return kRegisters;
  if (state_bytes(rank, tile_rows) > stage_bytes(rank, rope) ||
      rows_bytes(rank, tile_rows) > stage_bytes(rank, rope) ||
      merge_bytes(tile_rows) > stage_bytes(rank, rope))
    return kSharedMemory;
  if (page_size != 0 && box_tokens(page_size) % kMinBoxTokens != 0) return kPageSize;
  return kOk;
}

}  // namespace mla_decode::sm90_wgmma_key_rows
}  // namespace attn
