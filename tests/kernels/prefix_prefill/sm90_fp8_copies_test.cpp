// The plan of prefix_prefill.sm90_wgmma's in-kernel fp8 conversion (fp8_dequant=1) on the CPU:
// the copy tiles are numbered sequence by sequence; every block some work item reads (its context
// tiles' blocks inside the context, its new-token tiles' rows below new_rows, another sequence's
// included) is planned exactly once per kv head and nothing else is; the units follow the items'
// waves, so the first wave's first tiles come first; a real batch's schedule plans as many units
// as a brute-force walk of its items finds blocks.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <tuple>
#include <vector>

#include "kernels/prefix_prefill/prefix_prefill_variants.hpp"
#include "kernels/prefix_prefill/sm90_fp8_copies.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

namespace copies = prefix_prefill::sm90_fp8_copies;

// (context?, sequence or -1, first key or row, head, block) of every unit.
using Key = std::tuple<bool, int, int, int, int>;

// What a brute-force walk of every item reads: each key of each tile, as its block.
std::set<Key> blocks_read(const std::vector<PrefixPrefillSeq>& seqs, int64_t new_rows,
                          const std::vector<int>& items, int tile_tokens, int tile_n, bool causal,
                          const PrefixPrefillFp8CopiesPlan& plan) {
  std::set<Key> read;
  for (size_t i = 0; i + 2 < items.size(); i += 3) {
    const int s = items[i], t0 = items[i + 1], head = items[i + 2];
    const PrefixPrefillSeq& info = seqs[size_t(s)];
    for (int key = 0; key < info.context_len; ++key) {
      const int tile = key / tile_n;
      const int copy = plan.copy_tiles[size_t(s) * size_t(plan.max_tiles) + size_t(tile)];
      const int block = copy * (tile_n / copies::kBlockKeys) + key % tile_n / copies::kBlockKeys;
      read.insert({true, s, key / copies::kBlockKeys * copies::kBlockKeys, head, block});
    }
    const int tokens = std::min(tile_tokens, info.query_len - t0);
    const int seen = causal ? t0 + tokens : info.query_len;
    const int new_tiles = (seen + tile_n - 1) / tile_n;
    for (int r = 0; r < new_tiles * tile_n; ++r) {
      const int row = info.new_start + r;
      if (row >= new_rows) break;
      const int block = row / copies::kBlockKeys;
      read.insert({false, -1, block * copies::kBlockKeys, head, block});
    }
  }
  return read;
}

std::vector<Key> keys_of(const PrefixPrefillFp8CopiesPlan& plan) {
  std::vector<Key> keys;
  for (const copies::Unit& u : plan.units)
    keys.push_back({u.seq >= 0, u.seq, u.first, u.head, u.block});
  return keys;
}

TEST(PrefixPrefillFp8Copies, CopyTilesAreNumberedSequenceBySequence) {
  // Contexts of 300, 0 and 128 keys over 128-key tiles: 3, 0 and 1 tiles.
  const std::vector<PrefixPrefillSeq> seqs = {{300, 5, 0, 0}, {0, 20, 5, 16}, {128, 1, 25, 48}};
  const std::vector<int> items = {0, 0, 0, 1, 0, 1, 2, 0, 1};
  const PrefixPrefillFp8CopiesPlan plan =
      plan_prefix_prefill_fp8_copies(seqs, 64, 2, items, 32, 128, true, 2);
  EXPECT_EQ(plan.max_tiles, 3);
  EXPECT_EQ(plan.tiles, 4);
  EXPECT_EQ(plan.copy_tiles, (std::vector<int>{0, 1, 2, 0, 0, 0, 3, 0, 0}));
  EXPECT_EQ(plan.context_blocks, 4 * 8);
  EXPECT_EQ(plan.new_blocks, 4);
}

TEST(PrefixPrefillFp8Copies, EveryBlockReadIsPlannedOnceAndNothingElse) {
  // Contexts not a multiple of a block or a tile, an empty one, new tokens of several tiles.
  const std::vector<PrefixPrefillSeq> seqs = {
      {300, 70, 0, 0}, {0, 20, 70, 80}, {17, 1, 90, 96}, {1000, 200, 91, 112}};
  const int64_t new_rows = 112 + 208;
  for (bool causal : {true, false}) {
    for (int tile_n : {64, 128}) {
      for (int grid : {1, 3, 132}) {
        std::vector<int> items;
        for (int head = 0; head < 2; ++head) {
          for (int s = 0; s < 4; ++s) {
            for (int t0 = 0; t0 < seqs[size_t(s)].query_len; t0 += 32)
              items.insert(items.end(), {s, t0, head});
          }
        }
        const PrefixPrefillFp8CopiesPlan plan =
            plan_prefix_prefill_fp8_copies(seqs, new_rows, 2, items, 32, tile_n, causal, grid);
        const std::vector<Key> planned = keys_of(plan);
        const std::set<Key> unique(planned.begin(), planned.end());
        EXPECT_EQ(unique.size(), planned.size()) << "a block planned twice";
        EXPECT_EQ(unique, blocks_read(seqs, new_rows, items, 32, tile_n, causal, plan))
            << "causal " << causal << " tile_n " << tile_n << " grid " << grid;
        std::set<long long> flags;
        for (const copies::Unit& u : plan.units) {
          const long long flag =
              copies::flag_index(u.seq >= 0, u.block, u.head, 2, plan.context_blocks);
          EXPECT_GE(flag, 0);
          EXPECT_LT(flag, (long long)(plan.context_blocks + plan.new_blocks) * 2);
          flags.insert(flag);
        }
        EXPECT_EQ(flags.size(), planned.size()) << "two units share a flag";
      }
    }
  }
}

TEST(PrefixPrefillFp8Copies, UnitsFollowTheWavesTileByTile) {
  // Two sequences of 256 cached keys, one q tile each, on one kv head: a wave of both items takes
  // both first tiles (8 blocks each at 128-key tiles and 16-key blocks) before any second tile.
  const std::vector<PrefixPrefillSeq> seqs = {{256, 1, 0, 0}, {256, 1, 1, 16}};
  const std::vector<int> items = {0, 0, 0, 1, 0, 0};
  const PrefixPrefillFp8CopiesPlan both =
      plan_prefix_prefill_fp8_copies(seqs, 32, 1, items, 32, 128, true, 2);
  ASSERT_EQ(both.units.size(), 16u * 2 + 2);
  for (size_t i = 0; i < 16; ++i) {
    EXPECT_LT(both.units[i].first, 128) << i;  // first tiles of both sequences
    EXPECT_EQ(both.units[i].seq, int(i / 8)) << i;
  }
  for (size_t i = 16; i < 32; ++i) EXPECT_GE(both.units[i].first, 128) << i;
  // One CTA: the first item's every tile, then the second's.
  const PrefixPrefillFp8CopiesPlan one =
      plan_prefix_prefill_fp8_copies(seqs, 32, 1, items, 32, 128, true, 1);
  for (size_t i = 0; i < 16; ++i) EXPECT_EQ(one.units[i].seq, 0) << i;
}

TEST(PrefixPrefillFp8Copies, ARealScheduleIsPlannedWhole) {
  testing::SpecShape shape;
  shape.q_heads = 8;
  shape.kv_heads = 2;
  shape.head_dim = 128;
  const Batch batch =
      generate_batch(testing::make_spec(shape, {{2048, 96}, {0, 33}, {4096, 1}, {100, 300}}));
  const std::vector<PrefixPrefillSeq> seqs = prefix_prefill_seq_table(batch);
  const int64_t new_rows = prefix_prefill_new_rows(seqs);
  EXPECT_EQ(new_rows, 96 + 48 + 16 + 304);  // each sequence's new tokens rounded up to 16
  const std::vector<int> items = prefix_prefill_cta_schedule(batch, 32, 128, 64);
  const PrefixPrefillFp8CopiesPlan plan =
      plan_prefix_prefill_fp8_copies(seqs, new_rows, 2, items, 32, 128, batch.causal, 132);
  const std::vector<Key> planned = keys_of(plan);
  EXPECT_EQ(std::set<Key>(planned.begin(), planned.end()),
            blocks_read(seqs, new_rows, items, 32, 128, batch.causal, plan));
  EXPECT_EQ(plan.tiles, 16 + 0 + 32 + 1);
}

}  // namespace
}  // namespace attn
