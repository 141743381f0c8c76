// The blocksparse family: varlen attention over a per-q-head CSR block layout (seed 003's
// semantics, docs/masks.md): prefill with or without past context, decode, GQA, bf16/fp16 with
// fp32 accumulation, causal within the diagonal block (bottom-right aligned) or not. Visibility
// is exactly workloads/visibility's key_visible.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/variant.hpp"

namespace attn {

class Registry;

// Registers blocksparse.sm80_mma, blocksparse.sm90_wgmma, blocksparse.sm80_mma_decode (CUDA) and
// blocksparse.cpu_reference.
void add_blocksparse_variants(Registry& registry);

// What the CUDA blocksparse variants implement (blocksparse.sm80_mma_decode: decode batches only):
// any query shape, block-sparse masks causal within the diagonal block or not, shared prefixes, NHD
// and HND pools (gathered into contiguous K/V), bf16/fp16 with K/V of Q's dtype, head dims 64 and
// 128 (the variants add 80, 96, 192 and a narrower V; blocksparse.sm90_wgmma also 256, and 192x128
// as its only narrower V), pages of 1 to 256 tokens. The family does not define explicit masks,
// sliding windows, soft-caps or sinks; fp8 e4m3 caches (per-tensor or per-head scales) are the
// sm80 variants' own (blocksparse.sm80_mma, blocksparse.sm80_mma_decode).
FeatureSet blocksparse_features();
// The note of a dense batch's decline, for every blocksparse variant.
inline constexpr char kBlocksparseNeedsALayout[] =
    "blocksparse needs a block-sparse layout (mask.block_sparse)";

// The batch's layout is there (its mask feature says so) and has one set of rows per q head.
Support blocksparse_supports_layout(const Batch& batch);

// minimum_work over K/V gathered per sequence (no page table, nothing shared): Q and the output
// once; of K and V, per kv head, the keys some q head of its group sees through its own layout
// rows (the union). FLOPs: 4 * head_dim per visible (q head, query, key) triple.
Work blocksparse_work(const Batch& batch);

// blocksparse.sm80_mma's CTA list: (sequence, position tile t) pairs, tile t holding the positions
// from t * tile_m to (t + 1) * tile_m - 1, for every tile with a new token, heaviest first (the key
// tiles the kernel's walk visits, summed over q heads; ties keep sequence order). Flattened [n][2].
std::vector<int32_t> blocksparse_mma_schedule(const Batch& batch, int tile_m, int tile_n);

// blocksparse.sm90_wgmma's work plan for a config of `consumers` warpgroups (tile_m = 64 x
// consumers) and tile_n-key tiles: one item per (position tile with a new token, q head), the
// tiles heaviest first (their entries summed over q heads; ties keep sequence order) and the q
// heads of a tile adjacent in head order. An item's entries are the union of its consumers' walks
// (blocksparse::sm80_mma::tile_walk of each warpgroup's block row, up to its last position) in runs
// of 64 keys, in key order, each tagged with the consumers that keep it, padded to whole key tiles
// of tile_n / 64 entries. Field layout and entry encoding:
// kernels/blocksparse/sm90_wgmma_traits.hpp (kItem*, kEntry*). A consumer whose 64 rows hold no new
// token walks nothing; one's tile count ends at the tile of the last entry it keeps.
struct BlockSparseSm90Plan {
  std::vector<int32_t> items;    // [num_items][blocksparse::sm90_wgmma::kItemInts]
  std::vector<int32_t> entries;  // key0 x kEntryScale + consumer bits
  int64_t num_items() const;
};
BlockSparseSm90Plan blocksparse_sm90_plan(const Batch& batch, int consumers, int tile_n);

// blocksparse.sm80_mma_decode's work: one CTA per (sequence, kv head), heaviest first, each with
// the union of its group's kept blocks in the query's block row cut into tile_n-key tiles (tiles
// past the sequence's end dropped), each tagged with the group's q heads that keep it (bit r: q
// head kv_head * group + r).
struct BlockSparseDecodePlan {
  std::vector<int32_t> ctas;         // [num_ctas][2] (sequence, kv head)
  std::vector<int32_t> entry_begin;  // [num_ctas + 1]
  std::vector<int32_t> entries;      // [num_entries][2] (first key, head bits)
};
BlockSparseDecodePlan blocksparse_decode_plan(const Batch& batch, int tile_n);

}  // namespace attn
