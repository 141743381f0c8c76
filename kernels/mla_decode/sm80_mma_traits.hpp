// Traits of mla_decode.sm80_mma: threads, tile shapes, shared memory and validity derived from one
// config and the latent widths. Included by the host (to refuse a config before compiling it) and
// by the device template (which static_asserts the same rule), so the two never disagree.
//
// A CTA computes TILE_ROWS = 16 x m_tiles rows (a row is one (query token, q head) pair of one
// sequence) against one split of the sequence's keys, block_tokens keys at a time:
//   S = Q K^T   Q [rows][rank + rope] and the latent block [keys][rank + rope], split over the
//               warps by keys (qk_by_dims 0: block_tokens / warps keys each, at least one n8
//               tile; Q re-read from shared memory every block) or by width (qk_by_dims 1: a
//               slice each (latent_steps, rotary_steps), Q's slice held in registers; the
//               partial scores summed through shared memory, a share of the columns per warp)
//   O += P V    P [rows][keys] through shared memory, V the same latent block's first rank
//               columns; the output columns are dealt to the warps, rank / warps each
// An fp8 e4m3 latent cache (kv_fp8) is copied by cp.async into `stages` staging buffers of fp8
// rows (rank + rope bytes each) and converted, exactly, into one fp16 block tile that both
// products (in fp16, Q converted once) read as they read a 16-bit cache's stage: the pipeline holds
// fp8 blocks, the compute one 16-bit block (qk_by_dims: each warp converts its own columns, in Q's
// bytes). The cache's scale multiplies the score scale and the output.
#pragma once

#include "base/host_device.hpp"

namespace attn {
namespace mla_decode::sm80_mma {

constexpr int kMmaRows = 16;
// Most splits of one sequence's keys; the CTA that merges them reads one partial row per split.
constexpr int kMaxSplits = 64;

ATTN_HOST_DEVICE constexpr int threads(int warps) {
  return warps * 32;
}
ATTN_HOST_DEVICE constexpr int tile_rows(int m_tiles) {
  return kMmaRows * m_tiles;
}
// A latent row in shared memory: rank + rope 16-bit elements (a multiple of 64: whole 128-byte
// lines), its 16-byte chunks XOR-swizzled by the row's index mod 8 within each line (no padding:
// the 8 rows one ldmatrix reads hit 8 different bank groups).
ATTN_HOST_DEVICE constexpr int latent_row_bytes(int rank, int rope) {
  return (rank + rope) * 2;
}
ATTN_HOST_DEVICE constexpr int q_bytes(int rank, int rope, int m_tiles) {
  return tile_rows(m_tiles) * latent_row_bytes(rank, rope);
}
ATTN_HOST_DEVICE constexpr int stage_bytes(int rank, int rope, int block_tokens) {
  return block_tokens * latent_row_bytes(rank, rope);
}
// kv_fp8: one staged block of fp8 latent rows, rank + rope bytes each, unswizzled (read back 8
// bytes per thread, consecutive threads consecutive bytes).
ATTN_HOST_DEVICE constexpr int fp8_stage_bytes(int rank, int rope, int block_tokens) {
  return block_tokens * (rank + rope);
}
// qk_by_dims: a warp's 16-wide steps of the width: its rank / warps latent columns (its output
// columns of P V), then the rotary steps dealt round-robin (warp w takes rotary steps w, w + warps,
// ...: at 8 warps over a 64-wide rope, warps 0 to 3 take one each, the others none).
ATTN_HOST_DEVICE constexpr int latent_steps(int rank, int warps) {
  return rank / warps / 16;
}
ATTN_HOST_DEVICE constexpr int rotary_steps(int rope, int warps, int warp) {
  return rope / 16 > warp ? (rope / 16 - warp - 1) / warps + 1 : 0;
}
ATTN_HOST_DEVICE constexpr int max_slice_steps(int rank, int rope, int warps) {
  return latent_steps(rank, warps) + rotary_steps(rope, warps, 0);
}
// qk_by_dims: Q's rows are read into registers once (each warp its slice), so they need their own
// bytes only until then: with a 16-bit cache they lie in the last stage (first loaded after every
// warp has its slice) where they fit in it; with an fp8 cache, in the 16-bit tile, whose columns
// each warp converts only where it reads them.
ATTN_HOST_DEVICE constexpr bool q_in_pipeline(int m_tiles, int block_tokens, bool qk_by_dims,
                                              bool kv_fp8) {
  return qk_by_dims && (kv_fp8 || tile_rows(m_tiles) <= block_tokens);
}
// Q's rows and the block pipeline, from the start of shared memory: Q, then `stages` 16-bit
// stages; or (kv_fp8) `stages` fp8 staging buffers and the one 16-bit block tile they are
// converted into. Where q_in_pipeline, Q shares the bytes of the last stage or of the tile.
// stages_offset: the bytes before the first stage: Q's own, or (kv_fp8, qk_by_dims) the tile's,
// which holds Q, the larger of the two; the tile of an fp8 cache split by keys follows the stages.
ATTN_HOST_DEVICE constexpr int stages_offset(int rank, int rope, int m_tiles, int block_tokens,
                                             bool qk_by_dims, bool kv_fp8) {
  const int q = q_bytes(rank, rope, m_tiles);
  const int tile = stage_bytes(rank, rope, block_tokens);
  if (kv_fp8 && qk_by_dims) return q > tile ? q : tile;
  return q_in_pipeline(m_tiles, block_tokens, qk_by_dims, kv_fp8) ? 0 : q;
}
ATTN_HOST_DEVICE constexpr int q_and_pipeline_bytes(int rank, int rope, int m_tiles,
                                                    int block_tokens, int stages, bool qk_by_dims,
                                                    bool kv_fp8) {
  const int tile = stage_bytes(rank, rope, block_tokens);
  const int stage = kv_fp8 ? fp8_stage_bytes(rank, rope, block_tokens) : tile;
  return stages_offset(rank, rope, m_tiles, block_tokens, qk_by_dims, kv_fp8) + stages * stage +
         (kv_fp8 && !qk_by_dims ? tile : 0);
}
// P [rows][block_tokens + 8] 16-bit: 16 bytes of padding per row keep ldmatrix conflict free.
ATTN_HOST_DEVICE constexpr int p_bytes(int m_tiles, int block_tokens) {
  return tile_rows(m_tiles) * (block_tokens + 8) * 2;
}
// The warps' row maxima and row sums, [warps][rows] floats each.
ATTN_HOST_DEVICE constexpr int reduce_bytes(int m_tiles, int warps) {
  return 2 * warps * tile_rows(m_tiles) * 4;
}
// qk_by_dims: the warps' partial scores, [warps][rows][block_tokens + 8] floats (8 floats of
// padding keep the fragment stores at two wavefronts).
ATTN_HOST_DEVICE constexpr int partial_score_bytes(int m_tiles, int block_tokens, int warps,
                                                   bool qk_by_dims) {
  return qk_by_dims ? warps * tile_rows(m_tiles) * (block_tokens + 8) * 4 : 0;
}
// qk_by_dims: lanes per row in the softmax of a warp's share of the columns, and scores per lane.
ATTN_HOST_DEVICE constexpr int lanes_per_row(int m_tiles) {
  return 32 / tile_rows(m_tiles);
}
ATTN_HOST_DEVICE constexpr int scores_per_lane(int m_tiles, int block_tokens, int warps) {
  return block_tokens / warps / lanes_per_row(m_tiles);
}
// An fp8 cache under a bf16 Q: each row's power-of-two factor (q_to_scaled_f16).
ATTN_HOST_DEVICE constexpr int factor_bytes(int m_tiles) {
  return tile_rows(m_tiles) * 4;
}
ATTN_HOST_DEVICE constexpr int shared_bytes(int rank, int rope, int m_tiles, int block_tokens,
                                            int warps, int stages, bool qk_by_dims = false,
                                            bool kv_fp8 = false) {
  return q_and_pipeline_bytes(rank, rope, m_tiles, block_tokens, stages, qk_by_dims, kv_fp8) +
         p_bytes(m_tiles, block_tokens) + reduce_bytes(m_tiles, warps) + factor_bytes(m_tiles) +
         partial_score_bytes(m_tiles, block_tokens, warps, qk_by_dims);
}
// Per-thread registers of the live arrays: the output accumulator (rows x rank / warps floats over
// 32 lanes) and the warp's scores (rows x block_tokens / warps; qk_by_dims: rows x block_tokens
// partial scores, and Q's slice, rows x 16 x max_slice_steps 16-bit values), plus fragments and
// addresses. kv_fp8 adds none: its conversion runs between blocks, when the scores are dead, and
// holds one 8-byte load and one 16-byte store.
ATTN_HOST_DEVICE constexpr int register_estimate(int rank, int m_tiles, int block_tokens, int warps,
                                                 bool qk_by_dims = false, int rope = 64) {
  return tile_rows(m_tiles) * (rank / warps) / 32 +
         (qk_by_dims ? tile_rows(m_tiles) * block_tokens / 32 +
                           tile_rows(m_tiles) * 16 * max_slice_steps(rank, rope, warps) / 64
                     : tile_rows(m_tiles) * (block_tokens / warps) / 32) +
         64;
}

// Hopper's opt-in limit per block (227 KiB); the host also checks the device's own limit.
constexpr int kMaxSharedBytes = 227 * 1024;
constexpr int kMaxRegisterEstimate = 232;

enum Rule : int {
  kOk = 0,
  kRank,          // kv_lora_rank: a multiple of 16 x warps (whole n16 column pairs per warp)
  kRope,          // qk_rope_head_dim: 64 or 128 (rows of whole 128-byte swizzle groups)
  kWarps,         // warps must be 4 or 8
  kMTiles,        // m_tiles must be 1, 2 or 4
  kStages,        // stages must be 2, 3 or 4
  kBlockTokens,   // block_tokens: a multiple of 16 (split by keys: of 8 x warps), at most 128
  kSharedMemory,  // more than kMaxSharedBytes
  kRegisters,     // too many registers per thread (would spill)
  kDimsSplit,     // qk_by_dims: 16 or 32 rows, 2 or 4k scores per lane
};

ATTN_HOST_DEVICE constexpr const char* rule_text(int rule) {
  switch (rule) {
    case kRank:
      return "kv_lora_rank {rank} is not a multiple of {rank_step} (16 output columns per warp "
             "and step)";
    case kRope:
      return "qk_rope_head_dim {rope} is not 64 or 128 (latent rows of whole 128-byte lines)";
    case kWarps:
      return "warps must be 4 or 8";
    case kMTiles:
      return "m_tiles must be 1, 2 or 4";
    case kStages:
      return "stages must be 2, 3 or 4";
    case kBlockTokens:
      return "block_tokens must be a multiple of 16, at most 128, and (qk_by_dims 0) of "
             "{keys_per_warp_step} (8 keys per warp)";
    case kSharedMemory:
      return "needs {shared_bytes} bytes of shared memory (limit {shared_limit}): lower stages, "
             "block_tokens or m_tiles";
    case kRegisters:
      return "too many registers per thread (estimate {register_estimate}, limit "
             "{register_limit}): lower m_tiles or raise warps";
    case kDimsSplit:
      return "qk_by_dims needs m_tiles 1 or 2 and block_tokens / warps 2 x (32 / rows) or a "
             "multiple of 4 x (32 / rows): use qk_by_dims 0";
    default:
      return "invalid config";
  }
}

ATTN_HOST_DEVICE constexpr int check(int rank, int rope, int m_tiles, int block_tokens, int warps,
                                     int stages, bool qk_by_dims = false, bool kv_fp8 = false) {
  if (warps != 4 && warps != 8) return kWarps;
  if (rank <= 0 || rank % (16 * warps) != 0) return kRank;
  if (rope != 64 && rope != 128) return kRope;
  if (m_tiles != 1 && m_tiles != 2 && m_tiles != 4) return kMTiles;
  if (stages < 2 || stages > 4) return kStages;
  if (block_tokens < 16 || block_tokens % 16 != 0 ||
      (!qk_by_dims && block_tokens % (8 * warps) != 0) || block_tokens > 128)
    return kBlockTokens;
  if (qk_by_dims && (m_tiles > 2 || (scores_per_lane(m_tiles, block_tokens, warps) != 2 &&
                                     scores_per_lane(m_tiles, block_tokens, warps) % 4 != 0)))
    return kDimsSplit;
  if (shared_bytes(rank, rope, m_tiles, block_tokens, warps, stages, qk_by_dims, kv_fp8) >
      kMaxSharedBytes)
    return kSharedMemory;
  if (register_estimate(rank, m_tiles, block_tokens, warps, qk_by_dims, rope) >
      kMaxRegisterEstimate)
    return kRegisters;
  return kOk;
}

}  // namespace mla_decode::sm80_mma
}  // namespace attn
