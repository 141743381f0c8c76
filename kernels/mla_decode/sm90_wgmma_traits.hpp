// Traits of mla_decode.sm90_wgmma: threads, shared memory, registers and validity derived from one
// config, the latent widths and the page size. Included by the host (to decline a config, with a
// reason, before compiling it) and by the device template (which static_asserts the same rule),
// so the two never disagree.
//
// A CTA computes kRows = 64 rows (a row is one (query token, q head) pair of one sequence: one
// wgmma m64 tile; fewer rows are padded, more take more CTAs) against one split of the sequence's
// keys, block_tokens latent rows at a time:
//   - one producer warpgroup (one warp of it) loads each block with TMA, one box of box_tokens rows
//   x 64 columns per
//     page piece and 64-column block of the latent row, into `stages` buffers;
//   - two consumer warpgroups compute S = Q K^T (wgmma SS over the whole rank + rope width) and
//     the online softmax, and O += P V (wgmma RS, P from registers) over their half of the rank
//     output columns: the 64 x rank fp32 accumulator is split by columns, rank / 4 registers per
//     thread. With qk_split 0 each warpgroup computes all of S (nothing passes between them);
//     with qk_split 1 each computes the scores of half the block's keys, and the row maxima and
//     P pass through shared memory (half the Q K^T work, two barriers per block).
// Shared memory (after 1 KiB of alignment slack, the 128-byte swizzle's period): Q as
// (rank + rope) / 64 column blocks of [64][64] 16-bit elements, `stages` blocks as column blocks
// of [block_tokens][64], (qk_split) the exchange, then the full and empty mbarriers of every
// stage.
#pragma once

#include "base/host_device.hpp"

namespace attn {
namespace mla_decode::sm90_wgmma {

constexpr int kRows = 64;          // rows of one wgmma tile: (query token, q head) rows per CTA
constexpr int kConsumers = 2;      // consumer warpgroups, each half of the output columns
constexpr int kBlockColumns = 64;  // 16-bit elements of a 128-byte swizzle row (a TMA box width)
constexpr int kMaxSplits = 64;     // the merging CTA reads one partial row per split
constexpr int kAlignment = 1024;   // the 128-byte swizzle repeats every 8 rows of 128 bytes
constexpr int kMinBoxTokens = 8;   // a box is whole 8-row swizzle atoms
constexpr int kThreads = 128 * (kConsumers + 1);  // the consumers and one producer warpgroup

ATTN_HOST_DEVICE constexpr int width(int rank, int rope) {
  return rank + rope;
}
ATTN_HOST_DEVICE constexpr int column_blocks(int rank, int rope) {
  return width(rank, rope) / kBlockColumns;
}
// Output columns of one consumer warpgroup, and the N of each of its P V wgmmas (256, 128 or 64:
// the widths wgmma's register-sourced form takes here).
ATTN_HOST_DEVICE constexpr int consumer_columns(int rank) {
  return rank / kConsumers;
}
ATTN_HOST_DEVICE constexpr int pv_chunk(int rank) {
  return consumer_columns(rank) % 256 == 0 ? 256 : consumer_columns(rank) % 128 == 0 ? 128 : 64;
}
ATTN_HOST_DEVICE constexpr int q_bytes(int rank, int rope) {
  return kRows * width(rank, rope) * 2;
}
ATTN_HOST_DEVICE constexpr int stage_bytes(int rank, int rope, int block_tokens) {
  return block_tokens * width(rank, rope) * 2;
}
ATTN_HOST_DEVICE constexpr int stage_area_bytes(int rank, int rope, int block_tokens, int stages) {
  return stages * stage_bytes(rank, rope, block_tokens);
}
// qk_split: the scores' exchange between the two warpgroups, each row's block maximum (and, at
// the end, its sum) of each warpgroup, [2][kRows] floats, and P of the whole block as 16-bit A
// fragments, [block_tokens / 16][4][128] 32-bit words (64 x block_tokens 16-bit values).
ATTN_HOST_DEVICE constexpr int exchange_bytes(int block_tokens, bool qk_split) {
  return qk_split ? kConsumers * kRows * 4 + kRows * block_tokens * 2 : 0;
}
// Offsets from the aligned base: Q, the stages, the exchange, the barriers.
ATTN_HOST_DEVICE constexpr int stages_offset(int rank, int rope) {
  return q_bytes(rank, rope);
}
ATTN_HOST_DEVICE constexpr int exchange_offset(int rank, int rope, int block_tokens, int stages) {
  return stages_offset(rank, rope) + stage_area_bytes(rank, rope, block_tokens, stages);
}
ATTN_HOST_DEVICE constexpr int barrier_offset(int rank, int rope, int block_tokens, int stages,
                                              bool qk_split = false) {
  return exchange_offset(rank, rope, block_tokens, stages) + exchange_bytes(block_tokens, qk_split);
}
ATTN_HOST_DEVICE constexpr int shared_bytes(int rank, int rope, int block_tokens, int stages,
                                            bool qk_split = false) {
  return kAlignment + barrier_offset(rank, rope, block_tokens, stages, qk_split) + 2 * stages * 8;
}

// Keys one TMA box carries: the largest common divisor of the page size and the block, so that a
// box never crosses a page and the boxes tile the block (pages of 48 keys and 64-key blocks: 16).
ATTN_HOST_DEVICE constexpr int gcd(int a, int b) {
  return b == 0 ? a : gcd(b, a % b);
}
ATTN_HOST_DEVICE constexpr int box_tokens(int page_size, int block_tokens) {
  return gcd(page_size, block_tokens);
}

// Per-thread registers of a consumer's live arrays: its share of O (64 rows x rank / 2 fp32 over
// 128 threads), the block's scores (64 x block_tokens fp32) and P as packed 16-bit A fragments,
// plus addresses, row statistics and loop state. setmaxnreg splits the 384 threads' 168 each:
// the producer warpgroup gives back to 24, the consumers take 240 (128 x 24 + 256 x 240 = 384 x
// 168).
constexpr int kRegisterOverhead = 40;
constexpr int kProducerRegisters = 24;
constexpr int kConsumerRegisters = 240;
constexpr int kMaxRegisters = kConsumerRegisters;
ATTN_HOST_DEVICE constexpr int register_estimate(int rank, int block_tokens,
                                                 bool qk_split = false) {
  return consumer_columns(rank) / 2 + (qk_split ? block_tokens / 4 : block_tokens / 2) +
         block_tokens / 4 + kRegisterOverhead;
}

// Hopper's opt-in limit per block (227 KiB); the host also checks the device's own limit.
constexpr int kMaxSharedBytes = 227 * 1024;

enum Rule : int {
  kOk = 0,
  kRank,          // kv_lora_rank: a multiple of 128 (64-column P V chunks per warpgroup)
  kRope,          // qk_rope_head_dim: 64 or 128 (latent rows of whole 64-column blocks)
  kBlockTokens,   // block_tokens: 32 or 64
  kStages,        // stages: 2 to 4
  kSharedMemory,  // more than kMaxSharedBytes
  kRegisters,     // more registers per consumer thread than the CTA allows (would spill)
  kPageSize,      // a TMA box (page piece) must hold a multiple of 8 keys
};

ATTN_HOST_DEVICE constexpr const char* rule_text(int rule) {
  switch (rule) {
    case kRank:
      return "kv_lora_rank {rank} is not a multiple of 128 (each of the two consumer warpgroups "
             "takes whole 64-column wgmma tiles of the output)";
    case kRope:
      return "qk_rope_head_dim {rope} is not 64 or 128 (latent rows of whole 64-column TMA boxes)";
    case kBlockTokens:
      return "block_tokens must be 32 or 64";
    case kStages:
      return "stages must be 2, 3 or 4";
    case kSharedMemory:
      return "needs {shared_bytes} bytes of shared memory (limit {shared_limit}): lower stages or "
             "block_tokens";
    case kRegisters:
      return "too many registers per consumer thread (estimate {register_estimate}, limit "
             "{register_limit}): the output accumulator of kv_lora_rank {rank} is too wide";
    case kPageSize:
      return "pages of {page_size} keys: a TMA box (the largest part of a page that tiles the "
             "block) must hold a multiple of 8 keys, whole 128-byte swizzle atoms; "
             "mla_decode.sm80_mma takes any page size";
    default:
      return "invalid config";
  }
}

// page_size 0: not known yet (the config alone); the page rule is checked when it is.
ATTN_HOST_DEVICE constexpr int check(int rank, int rope, int block_tokens, int stages,
                                     int page_size = 0, bool qk_split = false) {
  if (rank <= 0 || rank % (kConsumers * 64) != 0) return kRank;
  if (rope != 64 && rope != 128) return kRope;
  if (block_tokens != 32 && block_tokens != 64) return kBlockTokens;
  if (stages < 2 || stages > 4) return kStages;
  if (shared_bytes(rank, rope, block_tokens, stages, qk_split) > kMaxSharedBytes)
    return kSharedMemory;
  if (register_estimate(rank, block_tokens, qk_split) > kMaxRegisters) return kRegisters;
  if (page_size != 0 && box_tokens(page_size, block_tokens) % kMinBoxTokens != 0) return kPageSize;
  return kOk;
}

}  // namespace mla_decode::sm90_wgmma
}  // namespace attn
