// Traits shared by the FlashAttention-3 style Hopper kernels (flash_fwd.sm90_wgmma and
// prefix_prefill.sm90_wgmma; device side: kernels/common/sm90_attention.cuh): the tile shapes of
// a consumer warpgroup, the index maps of wgmma's accumulators and descriptors over TMA's 128-byte
// swizzle, the setmaxnreg register split, and the tile rules both kernels obey. Included by the
// host (to refuse a config, with a reason, before compiling it) and by the device templates.
#pragma once

#include "base/host_device.hpp"

namespace attn {
namespace sm90_attention {

// Rows of one wgmma m64 tile: each consumer warpgroup owns 64 query rows of the CTA's tile_m.
constexpr int kConsumerRows = 64;
// 16-bit elements of one 128-byte swizzle row: a TMA box is 64 columns wide, so Q, K and V tiles
// // are stored as column_blocks(head_dim) column blocks of [rows][64]. At head dims that are not a
// multiple of 64 (80, 96) the last block is partly past the row: TMA fills it
// with zeros (the tensor maps' innermost extent is the row, so no memory is read there), and no
// wgmma reads it (Q K^T steps over the real dims, P V's N is V's real width).
constexpr int kBlockColumns = 64;
constexpr int kBlockRowBytes = kBlockColumns * 2;

ATTN_HOST_DEVICE constexpr int threads(int consumers) {
  return 128 * (consumers + 1);  // one producer warpgroup + the consumers
}
ATTN_HOST_DEVICE constexpr int column_blocks(int head_dim) {
  return (head_dim + kBlockColumns - 1) / kBlockColumns;
}
// V's and the output's width: v_head_dim where the model sets one (narrower than Q and K's), else
// head_dim (0 stands for "as wide as Q and K" in the functions below).
ATTN_HOST_DEVICE constexpr int value_dim(int head_dim, int v_head_dim) {
  return v_head_dim > 0 ? v_head_dim : head_dim;
}
// The head dims the consumer runs: 64, 80, 96, 128, 192 and 256 with V as wide, and 192 with a V
// of 128 (DeepSeek's MLA prefill without the latent projection). Q K^T's k16 steps cover the real
// dims (80: 5 steps), P V's N is V's width (80 and 96: a multiple of 16, the second column
// block's partial swizzle atom addressed through the descriptor's LBO as the ones at head dim
// 64 are, m64n72).
ATTN_HOST_DEVICE constexpr bool head_dims_allowed(int head_dim, int v_head_dim) {
  const bool dim = head_dim == 64 || head_dim == 80 || head_dim == 96 || head_dim == 128 ||
                   head_dim == 192 || head_dim == 256;
  const int v = value_dim(head_dim, v_head_dim);
  return dim && (v == head_dim || (head_dim == 192 && v == 128));
}
ATTN_HOST_DEVICE constexpr int q_bytes(int head_dim, int tile_m) {
  return tile_m * column_blocks(head_dim) * kBlockRowBytes;
}
// One K or one V buffer (one pipeline stage of one of them): whole 64-column blocks.
ATTN_HOST_DEVICE constexpr int kv_tile_bytes(int head_dim, int tile_n) {
  return tile_n * column_blocks(head_dim) * kBlockRowBytes;
}
// 1 KiB of slack to align the tiles to the 1024-byte period of the 128-byte swizzle, Q, and
// STAGES K and STAGES V buffers (V's v_head_dim wide); the kernels' barriers follow.
ATTN_HOST_DEVICE constexpr int tile_bytes(int head_dim, int tile_m, int tile_n, int stages,
                                          int v_head_dim = 0) {
  return 1024 + q_bytes(head_dim, tile_m) +
         stages * (kv_tile_bytes(head_dim, tile_n) +
                   kv_tile_bytes(value_dim(head_dim, v_head_dim), tile_n));
}

// --- Index maps the kernels use, checked against the PTX ISA's layouts on the CPU
// (tests/kernels/flash_fwd/sm90_wgmma_test.cpp) ---

// Accumulator register i of a 64 x N wgmma tile held by thread `tid` (0..127) of the warpgroup:
// warp w = tid / 32 holds rows 16w .. 16w + 15; lane l holds row l / 4 and l / 4 + 8 of them.
ATTN_HOST_DEVICE constexpr int accumulator_row(int tid, int i) {
  return (tid / 32) * 16 + (tid % 32) / 4 + 8 * ((i / 2) % 2);
}
ATTN_HOST_DEVICE constexpr int accumulator_column(int tid, int i) {
  return 8 * (i / 4) + 2 * (tid % 4) + i % 2;
}
// Register x (0..3) of a register-sourced A fragment of k16 step kk packs accumulator registers
// 8 kk + 2x (low half) and 8 kk + 2x + 1 (high half) of the score tile.
ATTN_HOST_DEVICE constexpr int a_fragment_accumulator(int kk, int x, int half) {
  return 8 * kk + 2 * x + half;
}

// Byte offsets of the wgmma operands of k16 step kk, from the start of the tile (the Q tile of
// the warpgroup's rows, or one K or V stage); column blocks are [rows][64] (128-byte rows).
// Q and K are K-major: step kk reads 16 dims, column block kk / 4 at byte (kk % 4) x 32.
ATTN_HOST_DEVICE constexpr int k_major_step_offset(int kk, int block_rows) {
  return (kk / 4) * block_rows * kBlockRowBytes + (kk % 4) * 32;
}
// V is MN-major (dims contiguous): step kk reads keys 16 kk .. 16 kk + 15 of every column block.
ATTN_HOST_DEVICE constexpr int mn_major_step_offset(int kk) {
  return kk * 16 * kBlockRowBytes;
}
// Descriptor strides: SBO, the distance between 8-row (K-major) or 8-key (MN-major) groups; LBO
// (MN-major only), the distance between 64-dim column blocks of a V tile of tile_n keys.
constexpr int kSwizzleAtomBytes = 8 * kBlockRowBytes;  // 1024
ATTN_HOST_DEVICE constexpr int v_leading_bytes(int tile_n) {
  return tile_n * kBlockRowBytes;
}

// K and V tiles may also be stored interleaved: [tile_n / 8][head_dim / 64][8][64], each 8-key
// group's column blocks side by side (one 1024-byte swizzle atom each). A TMA box of a page lands
// so with every column block in one box (prefix_prefill's paged context: one box per page, where
// the column-block-major layout needs one per page and column block). Both operands then step
// over 8-key groups by interleaved_group_bytes (SBO); K's k16 step kk reads column block kk / 4,
// one atom per block further; V's step kk reads groups 2 kk and 2 kk + 1, its column blocks one
// atom apart (LBO).
ATTN_HOST_DEVICE constexpr int interleaved_group_bytes(int head_dim) {
  return column_blocks(head_dim) * kSwizzleAtomBytes;
}
ATTN_HOST_DEVICE constexpr int interleaved_k_step_offset(int kk) {
  return (kk / 4) * kSwizzleAtomBytes + (kk % 4) * 32;
}
ATTN_HOST_DEVICE constexpr int interleaved_v_step_offset(int kk, int head_dim) {
  return 2 * kk * interleaved_group_bytes(head_dim);
}
// Where key `key`, dim `dim` of an interleaved tile lies, before the swizzle.
ATTN_HOST_DEVICE constexpr int interleaved_offset(int key, int dim, int head_dim) {
  return (key / 8) * interleaved_group_bytes(head_dim) + (dim / kBlockColumns) * kSwizzleAtomBytes +
         (key % 8) * kBlockRowBytes + (dim % kBlockColumns) * 2;
}

// setmaxnreg budgets: with 2 consumers the CTA has 384 threads and 168 registers each at launch
// (65536 / 384, rounded down to a multiple of 8); the producer gives back to 24 so the consumers
// can take 240 (128 x 24 + 256 x 240 = 384 x 168). With one consumer the same 24 / 240 split
// fits with room to spare.
constexpr int kProducerRegisters = 24;
constexpr int kConsumerRegisters = 240;

// Per-thread registers a consumer's live arrays need: the output accumulator (64 rows x head_dim
// fp32 over 128 threads), the scores of the tile being softmaxed (64 x tile_n fp32) and the
// previous tile's probabilities as packed 16-bit A fragments (64 x tile_n / 2 registers), which
// wgmma still reads while the next softmax runs; plus an allowance for addresses, row statistics
// and loop state.
// The accumulator is V's width (v_head_dim, else head_dim).
constexpr int kRegisterOverhead = 40;
ATTN_HOST_DEVICE constexpr int register_estimate(int head_dim, int tile_n, int v_head_dim = 0) {
  return value_dim(head_dim, v_head_dim) / 2 + tile_n / 2 + tile_n / 4 + kRegisterOverhead;
}

// Row sums on the tensor cores (Consumer's TENSOR_ROW_SUMS): P V multiplies P by V and by 8
// columns of ones beside it (wgmma m64n72k16 at head dim 64), so the output accumulator's 8 extra
// columns hold each row's sum of P, rescaled with O, and the softmax adds no sums of its own:
// one FADD per score fewer on the FP32 pipes, 12.5% more P V work for the tensor cores. Only at
// head dim 64: there V is one 64-column block and the ones can be a second block anywhere in
// shared memory (the descriptor's LBO points at it); wider V tiles would need the ones beside
// every stage. The ones are 16 keys of 128-byte rows, which every k16 step reads.
constexpr int kOnesBytes = 16 * kBlockRowBytes;
ATTN_HOST_DEVICE constexpr bool tensor_row_sums_fit(int head_dim) {
  return head_dim == 64;
}
// fp32 registers per consumer thread of the output accumulator (64 rows x its columns over 128
// threads): head_dim / 2, and 4 more for the ones' columns.
ATTN_HOST_DEVICE constexpr int output_registers(int head_dim, bool tensor_row_sums = false) {
  return head_dim / 2 + (tensor_row_sums ? 4 : 0);
}

// Floats per consumer thread of a partial result (Consumer::save_partial): its share of O (with
// the ones' columns, which hold the rows' sums) and its two rows' reference, and sum where the
// softmax keeps them.
ATTN_HOST_DEVICE constexpr int partial_floats(int head_dim, bool tensor_row_sums = false) {
  return output_registers(head_dim, tensor_row_sums) + (tensor_row_sums ? 2 : 4);
}

// Hopper's opt-in limit per block (227 KiB); the host also checks the device's own limit.
constexpr int kMaxSharedBytes = 227 * 1024;

enum Rule : int {
  kOk = 0,
  kHeadDim,    // head_dims_allowed: 64, 80, 96, 128, 192, 256 (V as wide), or 192 with V 128
  kConsumers,  // consumers must be 1 or 2 (1 to 3 where the kernel allows)
  kTileM,      // tile_m must be 64 x consumers
  kTileN,      // tile_n must be 64 or 128 (or, where the kernel allows, a multiple of 16 up to 256)
  kStages,     // stages must be 2, 3 or 4
  kSharedMemory,  // more than kMaxSharedBytes of shared memory
  kRegisters,     // more registers per consumer thread than setmaxnreg gives (would spill)
  kRuleCount,     // kernels number their own rules from here
};

// Key tile widths. The consumer's math takes any multiple of 16 keys up to 256 (S is one wgmma
// m64nTILE_Nk16, P V steps over TILE_N / 16 keys, each K or V column block stays a whole number of
// 1024-byte swizzle atoms); flash_fwd.sm90_wgmma uses that (FlashAttention-3's 176 or 192 keys
// beside small head dims), the kernels whose tiles are built of pages or sparse blocks keep 64
// or 128 (`any_width` false).
ATTN_HOST_DEVICE constexpr bool tile_n_allowed(int tile_n, bool any_width) {
  return any_width ? tile_n % 16 == 0 && tile_n >= 64 && tile_n <= 256
                   : tile_n == 64 || tile_n == 128;
}

// The rules of the tiles alone; `shared_bytes` is the kernel's whole footprint for this config,
// `max_consumers` the most consumer warpgroups the kernel takes (flash_fwd.sm90_wgmma: 3),
// `v_head_dim` V's width (0: head_dim).
ATTN_HOST_DEVICE constexpr int check_tiles(int head_dim, int tile_m, int tile_n, int stages,
                                           int consumers, int shared_bytes, bool any_tile_n = false,
                                           int max_consumers = 2, int v_head_dim = 0) {
  if (!head_dims_allowed(head_dim, v_head_dim)) return kHeadDim;
  if (consumers < 1 || consumers > max_consumers) return kConsumers;
  if (tile_m != kConsumerRows * consumers) return kTileM;
  if (!tile_n_allowed(tile_n, any_tile_n)) return kTileN;
  if (stages < 2 || stages > 4) return kStages;
  if (shared_bytes > kMaxSharedBytes) return kSharedMemory;
  if (register_estimate(head_dim, tile_n, v_head_dim) > kConsumerRegisters) return kRegisters;
  return kOk;
}

}  // namespace sm90_attention
}  // namespace attn
