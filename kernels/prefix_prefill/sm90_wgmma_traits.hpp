// Traits of prefix_prefill.sm90_wgmma: shared-memory layout and validity derived from one config
// (head_dim, tile_m, tile_n, stages, consumers) and, once a batch is known, its page size and GQA
// group. The tile rules, index maps and register split are those of flash_fwd.sm90_wgmma
// (kernels/common/sm90_attention_traits.hpp). Included by the host (to refuse a config, with a
// reason, before compiling it) and by the device template (which static_asserts the same rules).
#pragma once

#include "base/host_device.hpp"
#include "kernels/common/sm90_attention_traits.hpp"

namespace attn {
namespace prefix_sm90 {

using sm90_attn::kOk;

// mbarriers: Q's; full + empty for K and for V in every stage; and `v_zeroed`, which the first
// consumer warpgroup arrives on once it has zeroed the V rows of the last context tile past the
// context's end.
ATTN_HOST_DEVICE constexpr int barrier_bytes(int stages) {
  return (2 + 4 * stages) * 8;
}
ATTN_HOST_DEVICE constexpr int shared_bytes(int head_dim, int tile_m, int tile_n, int stages) {
  return sm90_attn::tile_bytes(head_dim, tile_m, tile_n, stages) + barrier_bytes(stages);
}

// setmaxnreg of the producer warpgroup. With two consumers the register file allows it 24
// (sm90_attn::kProducerRegisters); with one there is room to spare (128 x 56 + 128 x 240 < 65536),
// and the page lookups of the producer warp spill at 24 in some configs.
ATTN_HOST_DEVICE constexpr int producer_registers(int consumers) {
  return consumers == 1 ? 56 : sm90_attn::kProducerRegisters;
}

// Keys one TMA box of the paged context carries: a whole page, or the tile's part of a page larger
// than the tile (paged_decode.sm90_tma's rule).
ATTN_HOST_DEVICE constexpr int box_tokens(int page_size, int tile_n) {
  return page_size < tile_n ? page_size : tile_n;
}

enum Rule : int {
  // sm90_attn::Rule's kOk .. kRegisters, then:
  kPageSize = sm90_attn::kRuleCount,  // a box must hold a multiple of 8 keys, tile the page and
                                      // the key tile
  kGroup,                             // the GQA group must fit in tile_m rows (one token at least)
};

// page_size and group 0: not known yet (the config alone); their rules are checked when they are.
ATTN_HOST_DEVICE constexpr int check(int head_dim, int tile_m, int tile_n, int stages,
                                     int consumers, int page_size = 0, int group = 0) {
  const int tiles = sm90_attn::check_tiles(head_dim, tile_m, tile_n, stages, consumers,
                                           shared_bytes(head_dim, tile_m, tile_n, stages));
  if (tiles != sm90_attn::kOk) return tiles;
  if (page_size != 0) {
    // A box is 8-row aligned in shared memory (the 128-byte swizzle's atom) and never crosses a
    // page: keys of one box are contiguous in the pool.
    const int box = box_tokens(page_size, tile_n);
    if (box % 8 != 0 || tile_n % box != 0 || page_size % box != 0) return kPageSize;
  }
  if (group > tile_m) return kGroup;
  return sm90_attn::kOk;
}

}  // namespace prefix_sm90
}  // namespace attn
