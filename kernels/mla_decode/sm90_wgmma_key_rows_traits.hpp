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
// [tile_rows][64], the stages as column blocks of [64][64], each warpgroup's P^T, the maxima's
// exchange, then the mbarriers. After the loop the stages hold warpgroup 1's state and the
// normalised rows.
// An fp8 e4m3 cache (one scale): a stage holds a block's codes as column blocks of 64 keys x 128
// codes (TMA boxes of 128 bytes, the last one zero-filled past the row), so that 5 stages fit at
// DeepSeek-V3's widths where 16-bit blocks fit 2; the warpgroups take the stages in turn. S^T runs
// on fp8 tensor cores over the codes as they landed, Q held as two e4m3 terms (hi and lo, each
// laid out as a stage's rows; a power of two per row, its factor one float per row after the
// exchange); O^T in fp16 with V^T's A operand converted in registers after an ldmatrix.
#pragma once

#include "base/host_device.hpp"

namespace attn {
namespace mla_decode::sm90_wgmma_key_rows {

constexpr int kBlock = 64;           // keys of one block: one wgmma M tile of S^T
constexpr int kStages16 = 2;         // 16-bit blocks: one stage per consumer warpgroup
constexpr int kMaxFp8Stages = 6;     // fp8 blocks: as many stages as fit, up to this
constexpr int kFp8BlockCodes = 128;  // codes of one 128-byte swizzle row (a TMA box's width)
constexpr int kConsumers = 2;        // consumer warpgroups, alternate blocks
constexpr int kWarpsPerGroup = 4;    // warps of a warpgroup (the maxima's exchange)
constexpr int kBlockColumns = 64;    // 16-bit elements of a 128-byte swizzle row (a TMA box width)
constexpr int kRowBytes = kBlockColumns * 2;
constexpr int kMaxSplits = 64;    // the merging CTA reads one partial row per split
constexpr int kAlignment = 1024;  // the 128-byte swizzle repeats every 8 rows of 128 bytes
constexpr int kMinBoxTokens = 8;  // a box is whole 8-row swizzle atoms
constexpr int kThreads = 128 * (kConsumers + 1);
// A column's running maximum (log2 units of its scaled scores) moves only where a block's exceeds
// it by more than this: P stays below 2^8 (in range for bf16 and fp16).
constexpr float kMaxSlack = 8.0f;
// Hopper's opt-in limit per block (227 KiB); the host also checks the device's own limit.
constexpr int kMaxSharedBytes = 227 * 1024;
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
// Column blocks of 128 codes of an fp8 latent row (the last one partly past the row).
ATTN_HOST_DEVICE constexpr int fp8_column_blocks(int rank, int rope) {
  return (width(rank, rope) + kFp8BlockCodes - 1) / kFp8BlockCodes;
}
// Q: 16-bit rows, or (fp8) two e4m3 terms of [tile_rows][128] column blocks each.
ATTN_HOST_DEVICE constexpr int q_bytes(int rank, int rope, int tile_rows, bool fp8 = false) {
  return fp8 ? 2 * fp8_column_blocks(rank, rope) * tile_rows * kFp8BlockCodes
             : tile_rows * width(rank, rope) * 2;
}
ATTN_HOST_DEVICE constexpr int stage_bytes(int rank, int rope, bool fp8 = false) {
  return fp8 ? kBlock * fp8_column_blocks(rank, rope) * kFp8BlockCodes
             : kBlock * width(rank, rope) * 2;
}
ATTN_HOST_DEVICE constexpr int p_bytes(int tile_rows) {
  return tile_rows * kRowBytes;  // one warpgroup's P^T: [tile_rows][64 keys] 16-bit
}
// Each warpgroup's per-warp block maxima, double-buffered by block parity: [2][2][4][tile_rows].
ATTN_HOST_DEVICE constexpr int exchange_bytes(int tile_rows) {
  return kConsumers * 2 * kWarpsPerGroup * tile_rows * 4;
}
// What the stages hold after the loop: warpgroup 1's accumulator and statistics (stage 1) and the
// normalised rows [tile_rows][out_stride] (stage 0).
ATTN_HOST_DEVICE constexpr int state_bytes(int rank, int tile_rows) {
  return (rank * tile_rows + 2 * tile_rows) * 4;
}
ATTN_HOST_DEVICE constexpr int rows_bytes(int rank, int tile_rows) {
  return (tile_rows * out_stride(rank) + tile_rows) * 4;
}
// fp8: Q's per-row factors (f16_row_factors' back), one float per row.
ATTN_HOST_DEVICE constexpr int factor_bytes(int tile_rows, bool fp8) {
  return fp8 ? tile_rows * 4 : 0;
}
// Stages: two 16-bit blocks (one per warpgroup); fp8 blocks as many as the bytes left after
// everything else (the barriers of kMaxFp8Stages included) hold, 2 to kMaxFp8Stages.
ATTN_HOST_DEVICE constexpr int stages(int rank, int rope, int tile_rows, bool fp8 = false) {
  if (!fp8) return kStages16;
  const int rest = kAlignment + q_bytes(rank, rope, tile_rows, fp8) +
                   kConsumers * p_bytes(tile_rows) + exchange_bytes(tile_rows) +
                   factor_bytes(tile_rows, fp8) + 2 * kMaxFp8Stages * 8;
  const int fit = (kMaxSharedBytes - rest) / stage_bytes(rank, rope, fp8);
  return fit < kStages16 ? kStages16 : (fit > kMaxFp8Stages ? kMaxFp8Stages : fit);
}
// Offsets from the aligned base: Q, the stages, each warpgroup's P^T, the exchange, (fp8) Q's
// row factors, the barriers.
ATTN_HOST_DEVICE constexpr int stages_offset(int rank, int rope, int tile_rows, bool fp8 = false) {
  return q_bytes(rank, rope, tile_rows, fp8);
}
ATTN_HOST_DEVICE constexpr int p_offset(int rank, int rope, int tile_rows, bool fp8 = false) {
  return stages_offset(rank, rope, tile_rows, fp8) +
         stages(rank, rope, tile_rows, fp8) * stage_bytes(rank, rope, fp8);
}
ATTN_HOST_DEVICE constexpr int exchange_offset(int rank, int rope, int tile_rows,
                                               bool fp8 = false) {
  return p_offset(rank, rope, tile_rows, fp8) + kConsumers * p_bytes(tile_rows);
}
ATTN_HOST_DEVICE constexpr int factor_offset(int rank, int rope, int tile_rows, bool fp8 = false) {
  return exchange_offset(rank, rope, tile_rows, fp8) + exchange_bytes(tile_rows);
}
ATTN_HOST_DEVICE constexpr int barrier_offset(int rank, int rope, int tile_rows, bool fp8 = false) {
  return factor_offset(rank, rope, tile_rows, fp8) + factor_bytes(tile_rows, fp8);
}
ATTN_HOST_DEVICE constexpr int shared_bytes(int rank, int rope, int tile_rows, bool fp8 = false) {
  return kAlignment + barrier_offset(rank, rope, tile_rows, fp8) +
         2 * stages(rank, rope, tile_rows, fp8) * 8;
}

// Keys one TMA box carries: the largest common divisor of the page size and the block.
ATTN_HOST_DEVICE constexpr int gcd(int a, int b) {
  return b == 0 ? a : gcd(b, a % b);
}
ATTN_HOST_DEVICE constexpr int box_tokens(int page_size) {
  return gcd(page_size, kBlock);
}

// fp8 (sm90_key_rows_fp8.cuh): O^T's accumulator row R of a 64-row tile holds dim fp8_v_dim(R)
// (rows r and r + 8 of a warp's 16: the two dims of the b16 element a transposed ldmatrix gives
// lane 4 r).
ATTN_HOST_DEVICE constexpr int fp8_v_dim(int row) {
  return (row & ~15) | ((row & 7) << 1) | ((row >> 3) & 1);
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
// after: 4 at 16 rows, 2 at 32 (fp8: half of them the hi term's, half the lo term's).
ATTN_HOST_DEVICE constexpr int score_chains(int tile_rows) {
  return tile_rows <= 16 ? 4 : 2;
}
// fp8: O^T's A fragments of two k16 steps, their codes and the next steps' (32 rows at rank 256
// compile within 168 without spills).
constexpr int kFp8FragmentRegisters = 16;
ATTN_HOST_DEVICE constexpr int register_estimate(int rank, int tile_rows, bool fp8 = false) {
  return rank * tile_rows / 128 + score_chains(tile_rows) * tile_rows / 2 + tile_rows / 2 +
         kRegisterOverhead + (fp8 ? kFp8FragmentRegisters : 0);
}

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

// After the loop: the normalised rows from stage 0 on, warpgroup 1's state from the first whole
// stage after them (stage 1 where the rows fit one stage).
ATTN_HOST_DEVICE constexpr int state_offset(int rank, int rope, int tile_rows, bool fp8 = false) {
  const int stage = stage_bytes(rank, rope, fp8);
  const int rows = rows_bytes(rank, tile_rows);
  return rows <= stage ? stage : (rows + stage - 1) / stage * stage;
}

// page_size 0: not known yet (the config alone); the page rule is checked when it is.
ATTN_HOST_DEVICE constexpr int check(int rank, int rope, int tile_rows, int page_size = 0,
                                     bool fp8 = false) {
  if (rank <= 0 || rank % 64 != 0) return kRank;
  if (rope != 64 && rope != 128) return kRope;
  if (tile_rows != 16 && tile_rows != 32) return kTileRows;
  if (shared_bytes(rank, rope, tile_rows, fp8) > kMaxSharedBytes) return kSharedMemory;
  if (register_estimate(rank, tile_rows, fp8) > kMaxRegisters) return kRegisters;
  // After the loop: the rows and warpgroup 1's state (state_offset), in the stages.
  const int stage_total = stages(rank, rope, tile_rows, fp8) * stage_bytes(rank, rope, fp8);
  if (state_offset(rank, rope, tile_rows, fp8) + state_bytes(rank, tile_rows) > stage_total)
    return kSharedMemory;
  if (page_size != 0 && box_tokens(page_size) % kMinBoxTokens != 0) return kPageSize;
  return kOk;
}

}  // namespace mla_decode::sm90_wgmma_key_rows
}  // namespace attn
