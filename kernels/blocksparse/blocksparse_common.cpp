#include <algorithm>
#include <map>

#include "base/errors.hpp"
#include "kernels/blocksparse/blocksparse_variants.hpp"
#include "kernels/blocksparse/sm80_mma_traits.hpp"
#include "kernels/blocksparse/sm90_wgmma_traits.hpp"
#include "kernels/registry.hpp"

namespace attn {

std::unique_ptr<Variant> make_blocksparse_mma();
std::unique_ptr<Variant> make_blocksparse_sm90_wgmma();
std::unique_ptr<Variant> make_blocksparse_decode();
std::unique_ptr<Variant> make_blocksparse_cpu_reference();

void add_blocksparse_variants(Registry& registry) {
  registry.add(make_blocksparse_mma());
  registry.add(make_blocksparse_sm90_wgmma());
  registry.add(make_blocksparse_decode());
  registry.add(make_blocksparse_cpu_reference());
}

FeatureSet blocksparse_features() {
  return FeatureSet()
      .with(feature::kQueries, {"decode", "prefill", "mixed"})
      .with(feature::kMask, {"block_sparse", "block_sparse_non_causal"})
      .note(feature::kMask, "causal", kBlocksparseNeedsALayout)
      .note(feature::kMask, "non_causal", kBlocksparseNeedsALayout)
      .with(feature::kSharedPrefix)
      .with(feature::kKvLayout, {"nhd", "hnd"})
      .with(feature::kDtype, {"bf16", "fp16"})
      .with(feature::kHeadDim, {64, 128})
      .with_range(feature::kPageSize, 1, 256);
}

Support blocksparse_supports_layout(const Batch& batch) {
  if (!batch.block_sparse) {
    return Support::no("blocksparse needs a block-sparse layout (mask.block_sparse)");
  }
  if (batch.block_sparse->num_heads != batch.spec.model.num_q_heads) {
    return Support::no("the layout has " + std::to_string(batch.block_sparse->num_heads) +
                       " heads, the model " + std::to_string(batch.spec.model.num_q_heads) +
                       " q heads");
  }
  return Support::yes();
}

Work blocksparse_work(const Batch& batch) {
  return minimum_work(batch, KvStorage::contiguous);
}

std::vector<int32_t> blocksparse_mma_schedule(const Batch& batch, int tile_m, int tile_n) {
  ATTN_ASSERT(batch.block_sparse.has_value(), "blocksparse schedule without a layout");
  const BlockSparseLayout& layout = *batch.block_sparse;
  struct Tile {
    int32_t seq, t;
    int64_t key_tiles;
  };
  std::vector<Tile> tiles;
  for (int s = 0; s < batch.num_seqs; ++s) {
    const int64_t q_len = batch.query_lens[size_t(s)], kv_len = batch.kv_lens[size_t(s)];
    if (q_len == 0) continue;
    const int64_t context = batch.context_lens[size_t(s)];
    for (int64_t t = context / tile_m; t * tile_m < kv_len; ++t) {
      const int64_t pos0 = t * tile_m;
      const int64_t last = std::min(pos0 + tile_m, kv_len) - 1;
      const int key_limit = int(batch.causal ? last + 1 : kv_len);
      const int q_block = int(pos0 / layout.block_size);
      int64_t work = 0;
      for (int h = 0; h < layout.num_heads; ++h) {
        const int32_t* crow = layout.crow.data() + size_t(h) * size_t(layout.num_blocks + 1);
        const int32_t* cols = layout.col.data() + size_t(h) * size_t(layout.max_nnz);
        work += blocksparse::sm80_mma::tile_walk(crow + q_block, cols, q_block, layout.block_size,
                                                 tile_n, key_limit)
                    .tiles;
      }
      tiles.push_back({int32_t(s), int32_t(t), work});
    }
  }
  std::stable_sort(tiles.begin(), tiles.end(),
                   [](const Tile& a, const Tile& b) { return a.key_tiles > b.key_tiles; });
  std::vector<int32_t> out;
  out.reserve(2 * tiles.size());
  for (const Tile& t : tiles) {
    out.push_back(t.seq);
    out.push_back(t.t);
  }
  return out;
}

int64_t BlockSparseSm90Plan::num_items() const {
  return int64_t(items.size()) / blocksparse::sm90_wgmma::kItemInts;
}

BlockSparseSm90Plan blocksparse_sm90_plan(const Batch& batch, int consumers, int tile_n) {
  using namespace blocksparse::sm90_wgmma;
  ATTN_ASSERT(batch.block_sparse.has_value(), "blocksparse plan without a layout");
  ATTN_ASSERT(consumers == 1 || consumers == 2, "blocksparse.sm90_wgmma: 1 or 2 consumers");
  ATTN_ASSERT(tile_n % kEntryKeys == 0, "blocksparse.sm90_wgmma plan: tile_n in whole entries");
  const BlockSparseLayout& layout = *batch.block_sparse;
  const int rows = tile_m(consumers), per_tile = entries_per_tile(tile_n);
  ATTN_ASSERT(layout.block_size % kRowsPerConsumer == 0 && layout.block_size % kEntryKeys == 0,
              "blocksparse.sm90_wgmma plan: 64 must divide the block size");
  struct Item {
    int32_t q_head, consumer_tiles[2];
    std::vector<int32_t> entries;
  };
  struct Tile {
    int32_t seq, t;
    int64_t entries;  // summed over the q heads
    std::vector<Item> items;
  };
  std::vector<Tile> tiles;
  for (int s = 0; s < batch.num_seqs; ++s) {
    const int64_t q_len = batch.query_lens[size_t(s)], kv_len = batch.kv_lens[size_t(s)];
    if (q_len == 0) continue;
    ATTN_ASSERT(kv_len * kEntryScale < (int64_t(1) << 31),
                "blocksparse.sm90_wgmma plan: a sequence too long for the entry encoding");
    const int64_t context = batch.context_lens[size_t(s)];
    for (int64_t t = context / rows; t * rows < kv_len; ++t) {
      Tile tile{int32_t(s), int32_t(t), 0, {}};
      for (int h = 0; h < layout.num_heads; ++h) {
        const int32_t* crow = layout.crow.data() + size_t(h) * size_t(layout.num_blocks + 1);
        const int32_t* cols = layout.col.data() + size_t(h) * size_t(layout.max_nnz);
        std::map<int32_t, int32_t> kept;  // key0 -> consumer bits
        for (int w = 0; w < consumers; ++w) {
          const int64_t pos0 = t * rows + int64_t(w) * kRowsPerConsumer;
          const int64_t last = std::min(pos0 + kRowsPerConsumer, kv_len) - 1;
          if (last < std::max(pos0, context)) continue;  // no new token in the warpgroup's rows
          const int q_block = int(pos0 / layout.block_size);
          const blocksparse::sm80_mma::TileWalk walk =
              blocksparse::sm80_mma::tile_walk(crow + q_block, cols, q_block, layout.block_size,
                                               kEntryKeys, int(batch.causal ? last + 1 : kv_len));
          for (int n = 0; n < walk.tiles; ++n)
            kept[blocksparse::sm80_mma::tile_key0(walk, n, kEntryKeys)] |= 1 << w;
        }
        Item item{int32_t(h), {0, 0}, {}};
        for (const auto& [key0, bits] : kept) {
          item.entries.push_back(key0 * kEntryScale + bits);
          for (int w = 0; w < consumers; ++w) {
            if (bits & (1 << w))
              item.consumer_tiles[w] = int32_t((item.entries.size() + per_tile - 1) / per_tile);
          }
        }
        // Whole tiles: the last entry's keys again, kept by no consumer.
        while (item.entries.size() % size_t(per_tile) != 0)
          item.entries.push_back(item.entries.back() / kEntryScale * kEntryScale);
        tile.entries += int64_t(item.entries.size());
        tile.items.push_back(std::move(item));
      }
      tiles.push_back(std::move(tile));
    }
  }
  std::stable_sort(tiles.begin(), tiles.end(),
                   [](const Tile& a, const Tile& b) { return a.entries > b.entries; });
  BlockSparseSm90Plan plan;
  for (const Tile& tile : tiles) {
    for (const Item& item : tile.items) {
      const int32_t fields[kItemInts] = {tile.seq,
                                         tile.t,
                                         item.q_head,
                                         int32_t(plan.entries.size()),
                                         int32_t(item.entries.size()) / per_tile,
                                         item.consumer_tiles[0],
                                         item.consumer_tiles[1],
                                         0};
      plan.items.insert(plan.items.end(), fields, fields + kItemInts);
      plan.entries.insert(plan.entries.end(), item.entries.begin(), item.entries.end());
    }
  }
  ATTN_ASSERT(plan.entries.size() < size_t(1) << 31, "blocksparse.sm90_wgmma plan: too many tiles");
  return plan;
}

BlockSparseDecodePlan blocksparse_decode_plan(const Batch& batch, int tile_n) {
  ATTN_ASSERT(batch.block_sparse.has_value(), "blocksparse plan without a layout");
  const BlockSparseLayout& layout = *batch.block_sparse;
  const int kv_heads = batch.spec.model.num_kv_heads, group = batch.spec.group_size();
  ATTN_ASSERT(group <= 31, "decode plan: a group needs one bit per q head");
  struct Cta {
    int32_t seq, kv_head;
    std::vector<int32_t> entries;
  };
  std::vector<Cta> ctas;
  for (int s = 0; s < batch.num_seqs; ++s) {
    const int64_t kv_len = batch.kv_lens[size_t(s)];
    for (int g = 0; g < kv_heads; ++g) {
      Cta cta{int32_t(s), int32_t(g), {}};
      if (batch.query_lens[size_t(s)] > 0 && kv_len > 0) {
        const int q_block = int((kv_len - 1) / layout.block_size);
        std::map<int32_t, int32_t> blocks;  // kept block column -> head bits
        for (int r = 0; r < group; ++r) {
          const BlockSparseLayout::Row row = layout.row(g * group + r, q_block);
          for (const int32_t* j = row.begin; j != row.end; ++j) blocks[*j] |= int32_t(1) << r;
        }
        for (const auto& [block, heads] : blocks) {
          for (int64_t key0 = int64_t(block) * layout.block_size;
               key0 < std::min<int64_t>(kv_len, int64_t(block + 1) * layout.block_size);
               key0 += tile_n) {
            cta.entries.push_back(int32_t(key0));
            cta.entries.push_back(heads);
          }
        }
      }
      ctas.push_back(std::move(cta));
    }
  }
  std::stable_sort(ctas.begin(), ctas.end(),
                   [](const Cta& a, const Cta& b) { return a.entries.size() > b.entries.size(); });
  BlockSparseDecodePlan plan;
  plan.entry_begin.push_back(0);
  for (const Cta& cta : ctas) {
    plan.ctas.push_back(cta.seq);
    plan.ctas.push_back(cta.kv_head);
    plan.entries.insert(plan.entries.end(), cta.entries.begin(), cta.entries.end());
    plan.entry_begin.push_back(int32_t(plan.entries.size() / 2));
  }
  return plan;
}

}  // namespace attn
