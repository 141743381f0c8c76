#include "kernels/prefix_prefill/sm90_fp8_copies.hpp"

#include <algorithm>

#include "base/errors.hpp"

namespace attn {

namespace copies = prefix_prefill::sm90_fp8_copies;

PrefixPrefillFp8CopiesPlan plan_prefix_prefill_fp8_copies(const std::vector<PrefixPrefillSeq>& seqs,
                                                          int64_t new_rows, int kv_heads,
                                                          const std::vector<int>& items,
                                                          int tile_tokens, int tile_n, bool causal,
                                                          int grid) {
  constexpr int kBlock = copies::kBlockKeys;
  ATTN_ASSERT(tile_n % kBlock == 0 && new_rows % kBlock == 0 && grid > 0 && kv_heads > 0,
              "fp8 copies: whole blocks, a grid");
  const int blocks_per_tile = tile_n / kBlock;
  PrefixPrefillFp8CopiesPlan plan;
  const size_t num_seqs = seqs.size();
  auto context_tiles = [&](size_t s) { return (seqs[s].context_len + tile_n - 1) / tile_n; };
  for (size_t s = 0; s < num_seqs; ++s) plan.max_tiles = std::max(plan.max_tiles, context_tiles(s));
  plan.copy_tiles.assign(num_seqs * size_t(plan.max_tiles), 0);
  for (size_t s = 0; s < num_seqs; ++s) {
    for (int n = 0; n < context_tiles(s); ++n)
      plan.copy_tiles[s * size_t(plan.max_tiles) + size_t(n)] = plan.tiles++;
  }
  plan.context_blocks = plan.tiles * blocks_per_tile;
  plan.new_blocks = int(new_rows / kBlock);

  std::vector<char> planned(size_t(plan.context_blocks + plan.new_blocks) * size_t(kv_heads), 0);
  auto add = [&](bool context, int seq, int first, int head, int block) {
    char& seen =
        planned[size_t(copies::flag_index(context, block, head, kv_heads, plan.context_blocks))];
    if (seen) return;
    seen = 1;
    plan.units.push_back({context ? seq : -1, first, head, block});
  };
  // Tile n of an item: its blocks, context or new rows.
  struct Walk {
    int seq, head, n_ctx, n_tiles, t0;
  };
  auto tile_blocks = [&](const Walk& w, int n) {
    const PrefixPrefillSeq& info = seqs[size_t(w.seq)];
    if (n < w.n_ctx) {
      const int copy = plan.copy_tiles[size_t(w.seq) * size_t(plan.max_tiles) + size_t(n)];
      for (int q = 0; q < blocks_per_tile; ++q) {
        const int first = n * tile_n + q * kBlock;
        if (first < info.context_len) add(true, w.seq, first, w.head, copy * blocks_per_tile + q);
      }
      return;
    }
    const int row = info.new_start + (n - w.n_ctx) * tile_n;
    for (int b = row / kBlock; b < (row + tile_n) / kBlock && b < plan.new_blocks; ++b)
      add(false, -1, b * kBlock, w.head, b);
  };
  const size_t count = items.size() / 3;
  for (size_t wave = 0; wave < count; wave += size_t(grid)) {
    std::vector<Walk> walks;
    int longest = 0;
    for (size_t i = wave; i < std::min(count, wave + size_t(grid)); ++i) {
      Walk w{items[3 * i], items[3 * i + 2], 0, 0, items[3 * i + 1]};
      const PrefixPrefillSeq& info = seqs[size_t(w.seq)];
      const int tokens = std::min(tile_tokens, info.query_len - w.t0);
      const int seen_new = causal ? w.t0 + tokens : info.query_len;
      w.n_ctx = context_tiles(size_t(w.seq));
      w.n_tiles = w.n_ctx + (seen_new + tile_n - 1) / tile_n;
      longest = std::max(longest, w.n_tiles);
      walks.push_back(w);
    }
    for (int n = 0; n < longest; ++n) {
      for (const Walk& w : walks) {
        if (n < w.n_tiles) tile_blocks(w, n);
      }
    }
  }
  return plan;
}

}  // namespace attn
