// Traits of prefix_prefill.sm90_wgmma: shared-memory layout and validity derived from one config
// (head_dim, tile_m, tile_n, stages, consumers) and, once a batch is known, its page size and GQA
// group. The tile rules, index maps and register split are those of flash_fwd.sm90_wgmma
// (kernels/common/sm90_attention_traits.hpp). Included by the host (to refuse a config, with a
// reason, before compiling it) and by the device template (which static_asserts the same rules).
#pragma once

#include "base/host_device.hpp"
#include "kernels/common/sm90_attention_traits.hpp"
#include "kernels/common/sm90_persistent_traits.hpp"

namespace attn {
namespace prefix_prefill::sm90_wgmma {

using sm90_attention::kOk;

// The grid is persistent (kernels/common/sm90_persistent_traits.hpp): Q's full and empty barriers
// per buffer, full + empty for K and for V in every stage, `v_zeroed` (which the first consumer
// warpgroup arrives on once it has zeroed the V rows of the last context tile past the context's
// end), and the item slots; two Q buffers wherever they fit in shared memory, else one.
constexpr int kOwnBarriers = 1;  // v_zeroed
// An fp8 cache's tiles come through a staging buffer: the producer warpgroup copies the fp8 codes
// of a key tile's K or V (tile_n x head_dim bytes for the wider K) there with cp.async, then
// converts them into the stage's 16-bit tile: as many slots of that size as fit beside two Q
// buffers, from 2 to kMaxFp8StagingSlots (2 where two Q buffers do not fit at all), counted with
// the kernel's own 8-byte words. A slot holds one part, or two of a 128-key tile's halves
// (fp8_part_keys); all parts but one are in flight while one is converted.
constexpr int kMinFp8StagingSlots = 2;
constexpr int kMaxFp8StagingSlots = 4;
// The named barrier (bar.sync id) of the producer warpgroup's page-table entries; the consumers'
// issue turns take ids 1 to 3.
constexpr int kFp8PagesBarrier = 8;
ATTN_HOST_DEVICE constexpr int fp8_part_bytes(int head_dim, int tile_n) {
  return tile_n * head_dim;
}
// Beside the slots, the page-table entries of the context tile the producer copies (tile_n + 1 at
// most), rounded up to 8-byte words.
ATTN_HOST_DEVICE constexpr int fp8_page_entry_bytes(int tile_n) {
  return ((tile_n + 1) * 4 + 7) / 8 * 8;
}
ATTN_HOST_DEVICE constexpr int fp8_staging_slots(int head_dim, int tile_m, int tile_n, int stages,
                                                 int v_head_dim = 0) {
  int slots = kMaxFp8StagingSlots;
  while (slots > kMinFp8StagingSlots &&
         sm90_persistent::q_buffers(
             head_dim, tile_m, tile_n, stages,
             kOwnBarriers +
                 (slots * fp8_part_bytes(head_dim, tile_n) + fp8_page_entry_bytes(tile_n)) / 8,
             sm90_persistent::kSlotBytes, v_head_dim) < 2) {
    --slots;
  }
  return slots;
}
ATTN_HOST_DEVICE constexpr int fp8_staging_bytes(int head_dim, int tile_m, int tile_n, int stages,
                                                 int v_head_dim = 0) {
  return fp8_staging_slots(head_dim, tile_m, tile_n, stages, v_head_dim) *
             fp8_part_bytes(head_dim, tile_n) +
         fp8_page_entry_bytes(tile_n);
}
// An fp8 cache's producer copies and converts a key tile's K (then V) in parts of
// fp8_part_keys keys: a 128-key tile in two halves, so that twice as many parts fly while one is
// converted, in the same staging bytes (fp8_staging_slots slots of a whole tile's part, each
// holding two halves).
ATTN_HOST_DEVICE constexpr int fp8_part_keys(int tile_n) {
  return tile_n >= 128 ? tile_n / 2 : tile_n;
}
ATTN_HOST_DEVICE constexpr int own_words(int head_dim, int tile_m, int tile_n, int stages,
                                         int v_head_dim, bool kv_fp8) {
  return kOwnBarriers +
         (kv_fp8 ? fp8_staging_bytes(head_dim, tile_m, tile_n, stages, v_head_dim) / 8 : 0);
}
ATTN_HOST_DEVICE constexpr int barrier_bytes(int stages, int q_buffers) {
  return sm90_persistent::barrier_bytes(stages, q_buffers, kOwnBarriers);
}
// v_head_dim (here and below): V's width, 0 for head_dim; kv_fp8: an fp8 cache (its staging
// buffer).
ATTN_HOST_DEVICE constexpr int q_buffers(int head_dim, int tile_m, int tile_n, int stages,
                                         int v_head_dim = 0, bool kv_fp8 = false) {
  return sm90_persistent::q_buffers(head_dim, tile_m, tile_n, stages,
                                    own_words(head_dim, tile_m, tile_n, stages, v_head_dim, kv_fp8),
                                    sm90_persistent::kSlotBytes, v_head_dim);
}
ATTN_HOST_DEVICE constexpr int shared_bytes(int head_dim, int tile_m, int tile_n, int stages,
                                            int v_head_dim = 0, bool kv_fp8 = false) {
  return sm90_persistent::shared_bytes(
      head_dim, tile_m, tile_n, stages,
      own_words(head_dim, tile_m, tile_n, stages, v_head_dim, kv_fp8), sm90_persistent::kSlotBytes,
      v_head_dim);
}

// K and V tiles are interleaved (sm90_attention::interleaved_offset: one TMA box brings every
// column block of a page) where both rows are whole 64-dim column blocks (64, 128, 192, 256, and
// 192 with a V of 128). At head dims 80 and 96 they are column-block-major ([column blocks][tile_n]
// [64]) instead: a page box is one column block (the pool map's row innermost, so the second
// block is zero-filled past the row without a read; launch_inputs.hpp, paged_pool_tensor_map),
// as an interleaved box cannot stop at the row's end inside a block. An fp8 cache's tiles are
// converted into the same layout.
ATTN_HOST_DEVICE constexpr bool interleaves(int head_dim, int v_head_dim = 0) {
  return head_dim % sm90_attention::kBlockColumns == 0 &&
         sm90_attention::value_dim(head_dim, v_head_dim) % sm90_attention::kBlockColumns == 0;
}

// setmaxnreg of the producer and consumer warpgroups: the persistent split
// (sm90_persistent::producer_registers), and with two consumers the cp.async copy of small pages
// needs 8 more in the producer (at 40 it spilled 8 bytes): 128 x 48 + 256 x 224. ptxas reports
// no spill.
// An fp8 cache's producer copies and converts whole tiles: with two consumers it takes 72
// registers where the consumers' arrays leave them 216 (register_estimate at most
// kFp8WideProducerEstimate, 16 of margin: 128 x 72 + 256 x 216 = 384 x 168), else 56 beside 224;
// with one consumer 96 (at 48 and 56 ptxas spilled 16 to 56 bytes in it). At 56 its unrolled
// conversion spilled 8 to 116 bytes (head dim 128, 128-key tiles); at 216 the consumers of head
// dim 256 over 64-key tiles (estimate 216) spilled 20.
constexpr int kFp8WideProducerEstimate = 200;
ATTN_HOST_DEVICE constexpr bool fp8_wide_producer(int consumers, bool kv_fp8, int estimate) {
  return kv_fp8 && consumers == 2 && estimate <= kFp8WideProducerEstimate;
}
// estimate: sm90_attention::register_estimate of the config (only an fp8 cache's split reads it).
ATTN_HOST_DEVICE constexpr int producer_registers(int consumers, bool copies = false,
                                                  bool kv_fp8 = false, int estimate = 0) {
  if (kv_fp8 && consumers == 1) return 96;
  if (kv_fp8) return fp8_wide_producer(consumers, kv_fp8, estimate) ? 72 : 56;
  return sm90_persistent::producer_registers(consumers) + (consumers == 2 && copies ? 8 : 0);
}
ATTN_HOST_DEVICE constexpr int consumer_registers(int consumers, bool copies = false,
                                                  bool kv_fp8 = false, int estimate = 0) {
  return sm90_persistent::consumer_registers(consumers) - (consumers == 2 && copies ? 8 : 0) -
         (fp8_wide_producer(consumers, kv_fp8, estimate) ? 8 : 0);
}
// The most registers sm90_attention::register_estimate may give a consumer thread's arrays. One
// consumer keeps a margin of 16 below setmaxnreg's 240: at head_dim 192 over 128 keys (estimate
// 232) ptxas spilled 60 bytes there.
ATTN_HOST_DEVICE constexpr int register_limit(int consumers) {
  return consumer_registers(consumers) - (consumers == 1 ? 16 : 0);
}

// Keys one TMA box of the paged context carries: a whole page, or the tile's part of a page larger
// than the tile (paged_decode.sm90_tma's rule).
ATTN_HOST_DEVICE constexpr int box_tokens(int page_size, int tile_n) {
  return page_size < tile_n ? page_size : tile_n;
}

// How the producer loads a context tile: as TMA boxes (one per page, or per the tile's part of a
// larger page) wherever a box can tile the page and the key tile (a multiple of 8 keys that divides
// the tile), else, for pages of fewer than kCopiedPageTokens keys that a box cannot tile (1, 2, 4,
// 5, 24, 31, 48, 63 ...), copied by the whole producer warpgroup with cp.async (16 bytes a thread
// at a time, the page looked up per key). Measured on an H200 (issue-6 case, 8 x (2048 + 512),
// d128, NHD, tile_n 128, commit 01f6be1, when a box carried one 64-dim block): TMA boxes took
// 356 us with 16-key pages, 317 / 316 us with 64 / 128, the cp.async path 713 us at page 16. So
// cp.async only serves the page sizes TMA cannot. (Boxes now carry every column block of a page:
// 316 us at page 16 with st3, 314 at page 64, 9ed89cf.)
constexpr int kCopiedPageTokens = 64;
ATTN_HOST_DEVICE constexpr bool tma_tiles_page(int box_tokens, int tile_n) {
  return box_tokens % 8 == 0 && tile_n % box_tokens == 0;
}
ATTN_HOST_DEVICE constexpr bool copies_context(int box_tokens, int tile_n) {
  return box_tokens < kCopiedPageTokens && !tma_tiles_page(box_tokens, tile_n);
}

// Where cp.async writes the 16-byte chunk `chunk` (0..7) of row `row` of a [rows][64] column block
// (rows of 128 bytes, the block 1024-byte aligned): the bytes TMA writes with
// CU_TENSOR_MAP_SWIZZLE_128B, whose address bits 4..6 are XORed with bits 7..9, i.e. the row within
// the 8-row, 1024-byte period. Checked against that bit formula in
// tests/kernels/prefix_prefill/sm90_wgmma_test.cpp.
ATTN_HOST_DEVICE constexpr int swizzled_chunk_offset(int row, int chunk) {
  return row * sm90_attention::kBlockRowBytes + ((chunk ^ (row % 8)) << 4);
}
// The same for chunk `chunk` (0 .. head_dim / 8 - 1) of key `row` of an interleaved K or V tile
// (sm90_attention::interleaved_offset): its 8-key group, its column block's atom, then the swizzle.
ATTN_HOST_DEVICE constexpr int interleaved_chunk_offset(int row, int chunk, int head_dim) {
  return (row / 8) * sm90_attention::interleaved_group_bytes(head_dim) +
         (chunk / 8) * sm90_attention::kSwizzleAtomBytes +
         swizzled_chunk_offset(row % 8, chunk % 8);
}
// The same in a K or V tile of tile_n keys and rows of `dims`, interleaved or column-block-major
// (interleaves).
ATTN_HOST_DEVICE constexpr int tile_chunk_offset(int row, int chunk, int dims, int tile_n,
                                                 bool interleaved) {
  return interleaved ? interleaved_chunk_offset(row, chunk, dims)
                     : (chunk / 8) * tile_n * sm90_attention::kBlockRowBytes +
                           swizzled_chunk_offset(row, chunk % 8);
}

enum Rule : int {
  // sm90_attention::Rule's kOk .. kRegisters, then:
  kPageSize = sm90_attention::kRuleCount,  // a TMA box (pages of 64 keys or more) must hold a
                                           // multiple of 8 keys, tile the page and the key tile
  kGroup,  // the GQA group must fit in tile_m rows (one token at least)
};

// Registers a consumer of 16-bit tiles that applies an fp8 cache's scales (fp8_dequant=1) keeps in
// hand beyond the estimate: V's scale multiplies the output where every accumulator is live, and
// at head dim 256 with two consumers and 64-key tiles (estimate 216 of 232) ptxas spilled 4 bytes
// there (with 16-key pages, whose copying producer leaves the consumers 224), none at 192 (184).
constexpr int kScaleRegisters = 17;

// page_size and group 0: not known yet (the config alone); their rules are checked when they are.
// kv_fp8: the producer converts an fp8 cache's tiles; kv_scales: the consumers apply its scales
// (also with 16-bit tiles: the copies the kernel converts with fp8_dequant=1).
ATTN_HOST_DEVICE constexpr int check(int head_dim, int tile_m, int tile_n, int stages,
                                     int consumers, int page_size = 0, int group = 0,
                                     int v_head_dim = 0, bool kv_fp8 = false,
                                     bool kv_scales = false) {
  const int tiles = sm90_attention::check_tiles(
      head_dim, tile_m, tile_n, stages, consumers,
      shared_bytes(head_dim, tile_m, tile_n, stages, v_head_dim, kv_fp8), false, 2, v_head_dim);
  if (tiles != sm90_attention::kOk) return tiles;
  const int estimate = sm90_attention::register_estimate(head_dim, tile_n, v_head_dim);
  if (estimate > register_limit(consumers)) return sm90_attention::kRegisters;
  if (kv_scales && !kv_fp8 && estimate + kScaleRegisters > consumer_registers(consumers))
    return sm90_attention::kRegisters;
  if (page_size != 0 && !kv_fp8) {
    // (An fp8 cache's tiles are copied key by key: any page size.) A TMA box is 8-row aligned in
    // shared memory (the 128-byte swizzle's atom) and never crosses a page: keys of one box are
    // contiguous in the pool. Copied pages (fewer keys than kCopiedPageTokens that no box tiles)
    // are looked up key by key: any size.
    const int box = box_tokens(page_size, tile_n);
    if (!copies_context(box, tile_n) && (!tma_tiles_page(box, tile_n) || page_size % box != 0))
      return kPageSize;
  }
  if (group > tile_m) return kGroup;
  return sm90_attention::kOk;
}

}  // namespace prefix_prefill::sm90_wgmma
}  // namespace attn
