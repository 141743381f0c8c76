// Traits of paged_decode.sm80_simt: threads, block shapes, the cp.async pipeline's shared memory,
// register estimate, split ranges and validity, derived from one config. Included by the host (to
// reject a config before compiling it, and to size the launch) and by the device template (which
// static_asserts the same rule), so the two can never disagree.
#pragma once

#include "base/host_device.hpp"

namespace attn {
namespace paged_decode::sm80_simt {

// Each key row of head_dim elements is read from shared memory by active_lanes lanes, 8 elements
// per lane (16 bytes of bf16/fp16, 8 bytes of fp8). The lanes of a row form a group of
// lanes_per_token, the next power of two (the dot product is reduced by shuffles within the
// group): head dims 80, 96 and 192 leave 6, 4 and 8 lanes of their 16, 16 and 32 idle.
ATTN_HOST_DEVICE constexpr int active_lanes(int head_dim) {
  return head_dim / 8;
}
ATTN_HOST_DEVICE constexpr int lanes_per_token(int head_dim) {
  int lanes = 1;
  while (lanes < active_lanes(head_dim)) lanes *= 2;
  return lanes;
}
ATTN_HOST_DEVICE constexpr int threads(int warps) {
  return warps * 32;
}
// Key rows the CTA's threads work on at once.
ATTN_HOST_DEVICE constexpr int token_rows(int head_dim, int warps) {
  return threads(warps) / lanes_per_token(head_dim);
}
ATTN_HOST_DEVICE constexpr int tokens_per_row(int head_dim, int warps, int block_tokens) {
  return block_tokens / token_rows(head_dim, warps);
}
// Bytes of one K (or V) row of one KV head: head_dim elements of the KV dtype (2 or 1 bytes).
ATTN_HOST_DEVICE constexpr int row_bytes(int head_dim, int kv_bytes) {
  return head_dim * kv_bytes;
}
// One pipeline stage: the K rows then the V rows of block_tokens keys.
ATTN_HOST_DEVICE constexpr int stage_bytes(int head_dim, int kv_bytes, int block_tokens) {
  return 2 * block_tokens * row_bytes(head_dim, kv_bytes);
}
// After the key loop the pipeline's memory holds every row's partial output, max and sum for the
// cross-row merge.
ATTN_HOST_DEVICE constexpr int reduction_bytes(int head_dim, int heads_per_cta, int warps) {
  return token_rows(head_dim, warps) * heads_per_cta * (head_dim + 2) * 4;
}
ATTN_HOST_DEVICE constexpr int shared_bytes(int head_dim, int kv_bytes, int heads_per_cta,
                                            int warps, int block_tokens, int stages) {
  int pipeline = stages * stage_bytes(head_dim, kv_bytes, block_tokens);
  int reduction = reduction_bytes(head_dim, heads_per_cta, warps);
  return pipeline > reduction ? pipeline : reduction;
}
// Rough per-thread register need: q and accumulator (8 floats per head each), max and sum per
// head, the block's scores (one per head and key row of the thread), and bookkeeping. The K/V data
// itself lives in shared memory, so registers no longer grow with the bytes in flight.
ATTN_HOST_DEVICE constexpr int register_estimate(int head_dim, int heads_per_cta, int warps,
                                                 int block_tokens) {
  return 18 * heads_per_cta + heads_per_cta * tokens_per_row(head_dim, warps, block_tokens) + 48;
}

// __launch_bounds__ minimum CTAs per SM. 1: no register cap. Measured on an H200 (BENCHMARKS.md):
// capping at 128 registers (4 CTAs of 4 warps) made 64 x 4096 slower (388 vs 379 us at 16 keys x
// 6 stages, 580 vs 452 us at 32 x 4) than the compiler's own choice (152).
ATTN_HOST_DEVICE constexpr int min_ctas_per_sm(int, int) {
  return 1;
}

constexpr int kMaxSharedBytes = 200 * 1024;  // the host also checks the device's opt-in limit
constexpr int kMaxRegisterEstimate = 255;
constexpr int kMaxStages = 8;
constexpr int kMaxSplits = 256;
// Per-head data travels in the parameter struct.
constexpr int kMaxKvHeads = 64;  // fp8 dequantisation scales
constexpr int kMaxQHeads = 128;  // sink logits

enum Rule : int {
  kOk = 0,
  kHeadDim,       // head_dim must be 64, 80, 96, 128, 192 or 256 (8 elements per lane, <= 32 lanes)
  kKvBytes,       // KV elements are 2 (bf16/fp16) or 1 (fp8) bytes
  kWarps,         // warps must be 1, 2, 4 or 8
  kHeadsPerCta,   // heads_per_cta must be 1, 2, 4, 8 or 16
  kBlockTokens,   // block_tokens: a power of two, a multiple of the CTA's key rows, at most 256
  kStages,        // stages must be 2..8
  kSharedMemory,  // more than kMaxSharedBytes of shared memory
  kRegisters,     // too many registers per thread (would spill)
};

ATTN_HOST_DEVICE constexpr bool power_of_two(int x) {
  return x > 0 && (x & (x - 1)) == 0;
}

ATTN_HOST_DEVICE constexpr int check(int head_dim, int kv_bytes, int heads_per_cta, int warps,
                                     int block_tokens, int stages) {
  if (head_dim != 64 && head_dim != 80 && head_dim != 96 && head_dim != 128 && head_dim != 192 &&
      head_dim != 256)
    return kHeadDim;
  if (kv_bytes != 1 && kv_bytes != 2) return kKvBytes;
  if (warps != 1 && warps != 2 && warps != 4 && warps != 8) return kWarps;
  if (heads_per_cta != 1 && heads_per_cta != 2 && heads_per_cta != 4 && heads_per_cta != 8 &&
      heads_per_cta != 16)
    return kHeadsPerCta;
  int rows = token_rows(head_dim, warps);
  if (!power_of_two(block_tokens) || block_tokens < rows || block_tokens > 256) return kBlockTokens;
  if (stages < 2 || stages > kMaxStages) return kStages;
  if (register_estimate(head_dim, heads_per_cta, warps, block_tokens) > kMaxRegisterEstimate)
    return kRegisters;
  if (shared_bytes(head_dim, kv_bytes, heads_per_cta, warps, block_tokens, stages) >
      kMaxSharedBytes)
    return kSharedMemory;
  return kOk;
}

// Split-KV ranges. A sequence's visible keys [lo, kv_len) are cut into n splits of `size` keys
// (whole blocks). split_tokens > 0 (auto): n = the visible count over split_tokens, rounded to
// nearest, 1..max_splits, so long sequences get many splits and short ones one. split_tokens == 0:
// every sequence gets max_splits (fixed count); trailing splits may be empty. A sequence with one
// split writes its output directly; otherwise the merge kernel combines its splits.
ATTN_HOST_DEVICE constexpr int splits_of(int visible, int split_tokens, int max_splits) {
  if (split_tokens <= 0) return max_splits;
  int n = (visible + split_tokens / 2) / split_tokens;
  if (n < 1) n = 1;
  return n > max_splits ? max_splits : n;
}
ATTN_HOST_DEVICE constexpr int split_size(int visible, int n, int block_tokens) {
  int per = (visible + n - 1) / n;
  return (per + block_tokens - 1) / block_tokens * block_tokens;
}

}  // namespace paged_decode::sm80_simt
}  // namespace attn
