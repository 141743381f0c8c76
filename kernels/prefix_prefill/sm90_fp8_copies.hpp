// The host's plan for prefix_prefill.sm90_wgmma's in-kernel conversion of an fp8 cache
// (fp8_dequant=1; device code: sm90_fp8_copies.cuh, parameters: sm90_fp8_copies_params.hpp): where
// each sequence's context tiles lie in the 16-bit copies, and the blocks the converting warps take,
// in the order the work items will read them.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/prefix_prefill/sm80_mma_params.hpp"
#include "kernels/prefix_prefill/sm90_fp8_copies_params.hpp"

namespace attn {

struct PrefixPrefillFp8CopiesPlan {
  // [num_seqs][max_tiles]: the copy tile of each sequence's context tile (a sequence's in order,
  // numbered across the sequences), 0 past its context: the kernel's block table over the copies,
  // whose pages are tiles of tile_n keys.
  std::vector<int> copy_tiles;
  int max_tiles = 1;
  int tiles = 0;           // copy tiles in all
  int context_blocks = 0;  // blocks of the copy tiles: tiles x tile_n / kBlockKeys
  int new_blocks = 0;      // blocks of the gathered rows: new_rows / kBlockKeys
  // Every block some item reads, once, per kv head.
  std::vector<prefix_prefill::sm90_fp8_copies::Unit> units;
};

// `items`: the kernel's work items as [items][3] (sequence, first token, kv head), in the order
// the persistent grid of `grid` CTAs takes them. The units follow the items in waves of `grid`: a
// wave's first tiles (of every item in it), then their second ones, and so on, as the CTAs of a
// wave walk their tiles side by side; a block already planned is not planned again. An item reads
// its sequence's context tiles, then the new-token tiles up to its last token (causal) or all of
// them; a new-token tile's rows past the sequence (the next one's, or padding) are read too.
PrefixPrefillFp8CopiesPlan plan_prefix_prefill_fp8_copies(const std::vector<PrefixPrefillSeq>& seqs,
                                                          int64_t new_rows, int kv_heads,
                                                          const std::vector<int>& items,
                                                          int tile_tokens, int tile_n, bool causal,
                                                          int grid);

}  // namespace attn
