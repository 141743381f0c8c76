// Traits of flash_fwd.sm90_wgmma: threads, shared-memory layout, register budgets, the order of
// the persistent grid's work items and validity derived from one config (head_dim, tile_m,
// tile_n, stages, consumers). Included by the host (to refuse a config, with a reason, before
// compiling it) and by the device template (which static_asserts the same rule), so the two can
// never disagree.
#pragma once

#include "base/host_device.hpp"
#include "kernels/common/sm90_attention_traits.hpp"
#include "kernels/common/sm90_persistent_traits.hpp"

namespace attn {
namespace flash_fwd::sm90_wgmma {

// The tile shapes, index maps, register split and tile rules are those of every FA3-style kernel
// here (kernels/common/sm90_attention_traits.hpp).
using sm90_attention::a_fragment_accumulator;
using sm90_attention::accumulator_column;
using sm90_attention::accumulator_row;
using sm90_attention::column_blocks;
using sm90_attention::k_major_step_offset;
using sm90_attention::kBlockColumns;
using sm90_attention::kBlockRowBytes;
using sm90_attention::kConsumerRegisters;
using sm90_attention::kConsumerRows;
using sm90_attention::kMaxSharedBytes;
using sm90_attention::kProducerRegisters;
using sm90_attention::kRegisterOverhead;
using sm90_attention::kSwizzleAtomBytes;
using sm90_attention::kv_tile_bytes;
using sm90_attention::mn_major_step_offset;
using sm90_attention::q_bytes;
using sm90_attention::register_estimate;
using sm90_attention::threads;
using sm90_attention::v_leading_bytes;

using Rule = sm90_attention::Rule;
using sm90_attention::kConsumers;
using sm90_attention::kHeadDim;
using sm90_attention::kOk;
using sm90_attention::kRegisters;
using sm90_attention::kSharedMemory;
using sm90_attention::kStages;
using sm90_attention::kTileM;
using sm90_attention::kTileN;

// The grid is persistent (sm90_persistent_traits.hpp): Q has two buffers wherever they fit, and
// the barriers are Q's full and empty per buffer, full + empty for K and for V in every stage, and
// the item slots. Shared memory: the 1 KiB alignment slack, the Q buffers, STAGES K and V
// buffers, the barriers.
// An item's slot holds its index and what the consumers need of it (SlotField), so that they do
// not look it up in global memory at each item's start: 8 ints.
constexpr int kSlotInts = 8;
enum SlotField : int {
  kSlotIndex = 0,  // the work item, -1: none left
  kSlotM0,         // its first query row in the sequence
  kSlotQHead,
  kSlotQBegin,  // the sequence's first query token in the batch
  kSlotQLen,
  kSlotKvLen,
  kSlotTiles,  // key tiles the CTA loads for it (of every head of a stack)
  kSlotHeads,  // a stack's q heads (stacks_heads; 1 otherwise)
};

// Stacked heads: the top query tile of a sequence whose rows are all the last consumer
// warpgroup's (a sequence 64 rows past a multiple of TILE_M, QueryTilesFrom::end) is one item
// for up to CONSUMERS consecutive q heads, warpgroup w taking head q_head + w: the item's key
// tiles interleave the heads' (tile j of the stack is key tile j / heads of head q_head + j %
// heads), and each warpgroup stores its own head's rows. Alone, such a tile kept one warpgroup
// busy and the others idle. The work order lists the tile once per stack: for q heads that are
// multiples of CONSUMERS (stacked_heads). With two or three consumers at head dim 64 (the
// default there), under a causal mask, where such a tile sees few key tiles (one when none are
// cached) and its fixed cost, once per q head, was most of its time. Without the mask the shared
// rows below pay more: stacks multiply each K/V tile for 64 rows only, and measured on an H200
// (BENCHMARKS.md, flash_fwd, "stacked heads") they took d64 4x4096 from 1129.60 / 1124.18 /
// 1123.06 to 1153.62 / 1154.94 / 1147.44 us, and 16x1024 no faster (328.99 / 329.26 / 327.39,
// 327.58 / 328.64 / 328.27).
ATTN_HOST_DEVICE constexpr bool stacks_heads(int head_dim, int tile_m, bool causal) {
  return causal && head_dim == 64 && tile_m >= 2 * kConsumerRows;
}
// Whether a work item of `consumers` warpgroups starting at row m0 of its sequence is a stack's:
// its first row is above the sequence by all but the last warpgroup's rows.
ATTN_HOST_DEVICE constexpr bool stacked_item(int m0, int consumers) {
  return m0 == -(consumers - 1) * kConsumerRows;
}
// The q heads of the stack that starts at q head `q_head`.
ATTN_HOST_DEVICE constexpr int stacked_heads(int q_head, int num_q_heads, int consumers) {
  return num_q_heads - q_head < consumers ? num_q_heads - q_head : consumers;
}

// Shared rows: an item whose rows are all the last consumer warpgroup's (the top query tile of a
// sequence that is 64 rows past a multiple of 192, QueryTilesFrom::end) has every warpgroup take
// every third key tile of those rows, and the last one merges the others' partial results
// (sm90_attention::Consumer::merge_partial) from a scratch area after the item slots: 2 x (HEAD_DIM
// / 2 + 4) x 128 floats. Three consumers at head dim 64 (the default there), without a causal mask
// (with one such a tile is stacked instead; the scratch is there either way).
ATTN_HOST_DEVICE constexpr bool shares_rows(int head_dim, int tile_m) {
  return head_dim == 64 && tile_m == 3 * kConsumerRows;
}
// Where a config shares rows, whether a work item of `consumers` warpgroups is such an item: its
// first row m0 is above the sequence by all but the last warpgroup's rows, and it needs a key tile
// per warpgroup at least. The work order asks it (weigh_shared_rows); the kernel's loop writes the
// same test out.
ATTN_HOST_DEVICE constexpr bool shared_rows_item(int m0, int n_tiles, int consumers) {
  return m0 == -(consumers - 1) * kConsumerRows && n_tiles >= consumers;
}
// Row sums on the tensor cores (sm90_attention_traits.hpp, tensor_row_sums_fit): at head dim 64,
// where the softmax's FP32 work is largest per product, every config. The ones follow the V
// stages (kOnesBytes).
ATTN_HOST_DEVICE constexpr bool tensor_row_sums(int head_dim) {
  return sm90_attention::tensor_row_sums_fit(head_dim);
}
// Half key tiles: under a causal mask a warpgroup's last key tile often holds its rows' last
// visible key in its first half (with 128-key tiles, every other 64-row warpgroup's), so every
// row hides the other half. There S, the softmax and P V take the first half only
// (sm90_attention::Consumer's COLS = tile_n / 2). At head dim 64, where the softmax's issue bounds
// a tile, with tiles of whole 32-key halves (wgmma's N and P V's k16 steps), and where no item
// streams into the next (the kernel's STREAM: an item's last P V then goes with the next item's
// first S).
ATTN_HOST_DEVICE constexpr bool halves_last_tile(int head_dim, int tile_n, bool causal) {
  return causal && head_dim == 64 && tile_n % 32 == 0;
}
// The last key tile: a sequence of kv_len keys (at least one) in tiles of tile_n ends on a tile
// of (kv_len - 1) % tile_n + 1 keys. The kernel's LAST_KEYS (without a causal mask) is the most of
// these over the batch's sequences, rounded up to whole k16 steps: S, the softmax and P V of every
// item's last tile take that many keys (sm90_attention::Consumer's COLS); tile_n takes it whole.
// Under a causal mask a warpgroup's last tile follows its rows' diagonal instead
// (halves_last_tile).
ATTN_HOST_DEVICE constexpr int last_tile_keys(int kv_len, int tile_n) {
  return ((kv_len - 1) % tile_n + 16) / 16 * 16;
}
// Where the last tile is narrowed (LAST_KEYS below tile_n): without a causal mask, at head dim
// 128 over tiles wider than 64 keys. Elsewhere ptxas (CUDA 13.0) serialised the wgmmas of some
// programs (C7511, "insufficient register resources for the wgmma pipeline"; FlashFwdSm90Compile,
// a batch of 100, 40 and 1 keys): 12 head dim 64 configs of one to three consumers, c2.tm128.tn64
// at head dim 128 (48 keys) and c2.tm128.tn80 at 256 (48 keys; 64 in the d256 16x1024 preset),
// none at head dim 128 over wider tiles (112 keys of 128 to 192, 64 of 80; and 144, 48 and 16 of
// 176, the 1024-, 4096- and 16384-key presets).
ATTN_HOST_DEVICE constexpr bool narrows_last_tile(int head_dim, int tile_n, bool causal) {
  return !causal && head_dim == 128 && tile_n > 64;
}
ATTN_HOST_DEVICE constexpr int ones_bytes(int head_dim) {
  return tensor_row_sums(head_dim) ? sm90_attention::kOnesBytes : 0;
}
ATTN_HOST_DEVICE constexpr int shared_rows_scratch_bytes(int head_dim, int tile_m) {
  return shares_rows(head_dim, tile_m)
             ? (tile_m / kConsumerRows - 1) *
                   sm90_attention::partial_floats(head_dim, tensor_row_sums(head_dim)) * 128 * 4
             : 0;
}
// The scratch and the ones go in sm90_persistent's `extra` 8-byte words.
ATTN_HOST_DEVICE constexpr int extra_words(int head_dim, int tile_m) {
  return (shared_rows_scratch_bytes(head_dim, tile_m) + ones_bytes(head_dim)) / 8;
}
// The barriers and item slots (without the scratch and the ones).
ATTN_HOST_DEVICE constexpr int barrier_bytes(int stages, int q_buffers) {
  return sm90_persistent::barrier_bytes(stages, q_buffers, 0, 4 * kSlotInts);
}
// v_head_dim: V's width (0: head_dim).
ATTN_HOST_DEVICE constexpr int q_buffers(int head_dim, int tile_m, int tile_n, int stages,
                                         int v_head_dim = 0) {
  return sm90_persistent::q_buffers(head_dim, tile_m, tile_n, stages, extra_words(head_dim, tile_m),
                                    4 * kSlotInts, v_head_dim);
}
ATTN_HOST_DEVICE constexpr int shared_bytes(int head_dim, int tile_m, int tile_n, int stages,
                                            int v_head_dim = 0) {
  return sm90_persistent::shared_bytes(head_dim, tile_m, tile_n, stages,
                                       extra_words(head_dim, tile_m), 4 * kSlotInts, v_head_dim);
}
// setmaxnreg. This kernel's producer walks the items with few live values: with two consumers it
// gives back to 24, as FlashAttention-3's does, so that the consumers take all of 240 (128 x 24 +
// 256 x 240 = 384 x 168). ptxas reports no spill for any config of the space at 24 (the CPU test
// FlashFwdSm90Compile checks each); at 232 (the split of the other persistent kernels,
// sm90_persistent_traits.hpp) 160-key tiles at head_dim 128 spilled 8 bytes. One consumer
// keeps the persistent split. Three consumers (512 threads, 128 registers each at launch) split
// as FlashAttention-3's do: 128 x 32 + 384 x 160.
constexpr int kMaxConsumers = 3;
ATTN_HOST_DEVICE constexpr int producer_registers(int consumers) {
  return consumers == 1   ? sm90_persistent::producer_registers(1)
         : consumers == 2 ? kProducerRegisters
                          : 32;
}
ATTN_HOST_DEVICE constexpr int consumer_registers(int consumers) {
  return consumers == 1   ? sm90_persistent::consumer_registers(1)
         : consumers == 2 ? kConsumerRegisters
                          : 160;
}

// Key tiles of any multiple of 16 keys from 64 to 256 (sm90_attention::tile_n_allowed): the rows of
// a tile are consecutive keys of one sequence, with no page or block structure to follow.
constexpr bool kAnyTileN = true;

// The most registers register_estimate may give a consumer thread's arrays. One consumer keeps 8
// of margin: with 176 keys at head_dim 128 (estimate 236) ptxas spilled 330 bytes there, where two
// consumers compile cleanly. Three consumers, which do not stream from one item into the next,
// take 8 more than setmaxnreg's 160: ptxas compiled 128 keys at head_dim 64
// and 80 at 128 (estimates 168 and 164) without a spill, and spilled 96 bytes at 144 keys (180)
// and 48 at 96 keys, head_dim 128 (176). The estimate leaves out the row sums' registers: at head
// dim 64 (tensor_row_sums) O's 4 more stand in for the softmax's sums, and ptxas compiled every
// config of the space there without a spill (FlashFwdSm90Compile).
ATTN_HOST_DEVICE constexpr int register_limit(int consumers) {
  return consumer_registers(consumers) + (consumers == 1 ? -8 : consumers == 3 ? 8 : 0);
}

// v_head_dim: V's width (0: head_dim; sm90_attention::head_dims_allowed).
ATTN_HOST_DEVICE constexpr int check(int head_dim, int tile_m, int tile_n, int stages,
                                     int consumers, int v_head_dim = 0) {
  const int tiles =
      sm90_attention::check_tiles(head_dim, tile_m, tile_n, stages, consumers,
                                  shared_bytes(head_dim, tile_m, tile_n, stages, v_head_dim),
                                  kAnyTileN, kMaxConsumers, v_head_dim);
  if (tiles != kOk) return tiles;
  if (register_estimate(head_dim, tile_n, v_head_dim) > register_limit(consumers))
    return kRegisters;
  return kOk;
}

}  // namespace flash_fwd::sm90_wgmma
}  // namespace attn
