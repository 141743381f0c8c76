// flash_fwd_work_order: the order in which sm90_wgmma's persistent CTAs draw their work items.
// Head-major where nothing is known of the L2 or nothing pays; with a causal mask, the items of
// the last (q head, sequence) pairs heaviest first over all of them where a simulation of the
// greedy draw says it ends sooner, within the L2 budget; shared-rows items weighed by each
// warpgroup's share and, where asked, drawn in the longest tail rated alike; stacked tiles once
// per stack of q heads; every item exactly once either way.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <tuple>

#include "kernels/flash_fwd/work_order.hpp"

namespace attn {
namespace {

// One head's query tiles, heaviest first as flash_fwd_query_tiles lists them: `seqs` sequences of
// `tiles` query tiles each, tile m seeing tiles - m key tiles (causal) or all of them.
std::vector<QueryTile> query_tiles(int seqs, int tiles, bool causal) {
  std::vector<QueryTile> out;
  for (int m = 0; m < tiles; ++m) {
    for (int s = 0; s < seqs; ++s) out.push_back({s, m, causal ? tiles - m : tiles});
  }
  return out;
}

struct Entry {
  int seq, tile, head;
  bool operator<(const Entry& o) const {
    return std::tie(seq, tile, head) < std::tie(o.seq, o.tile, o.head);
  }
  bool operator==(const Entry& o) const {
    return std::tie(seq, tile, head) == std::tie(o.seq, o.tile, o.head);
  }
};
std::vector<Entry> entries(const std::vector<int32_t>& work) {
  std::vector<Entry> out;
  for (size_t i = 0; i + 2 < work.size(); i += 3)
    out.push_back({work[i], work[i + 1], work[i + 2]});
  return out;
}

// Costs the order's items by the model the order is chosen with.
double makespan_of(const std::vector<int32_t>& work, const std::vector<QueryTile>& tiles,
                   int ctas) {
  std::vector<double> costs;
  for (const Entry& e : entries(work)) {
    const auto t = std::find_if(tiles.begin(), tiles.end(), [&](const QueryTile& q) {
      return q.seq == e.seq && q.m_block == e.tile;
    });
    costs.push_back(double(t->key_tiles) + 1.0);
  }
  return greedy_makespan(costs, ctas);
}

TEST(FlashFwdWorkOrder, GreedyMakespanIsWhenTheLastCtaFinishes) {
  // Two CTAs: 3 and 3 at 0, then 2 at 3 (to 5), 2 at 3 (to 5), 2 at 5 (to 7).
  EXPECT_DOUBLE_EQ(greedy_makespan({3, 3, 2, 2, 2}, 2), 7.0);
  // The light items first leave the heavy one alone at the end: 1, 1 then 1 at 1, 4 at 1.
  EXPECT_DOUBLE_EQ(greedy_makespan({1, 1, 1, 4}, 2), 5.0);
  EXPECT_DOUBLE_EQ(greedy_makespan({4, 1, 1, 1}, 2), 4.0);
  EXPECT_DOUBLE_EQ(greedy_makespan({}, 4), 0.0);
}

// Each of `seqs` sequences' K and V of one kv head: `bytes`.
WorkOrderShape shape_of(int heads, int group, int seqs, int64_t bytes, int64_t l2) {
  WorkOrderShape shape;
  shape.num_q_heads = heads;
  shape.group = group;
  shape.ctas = 132;
  shape.kv_seq_bytes.assign(size_t(seqs), bytes);
  shape.l2_bytes = l2;
  return shape;
}

// Without the L2's size (or without a causal mask, where every item costs the same) the items are
// head-major: item i is tile i % T of the heaviest-first list for head i / T, the order in which
// the hardware handed out the CTAs of the earlier grid (tiles along x, heads along y).
TEST(FlashFwdWorkOrder, HeadMajorWithoutAnL2SizeOrUnequalItems) {
  for (const bool causal : {true, false}) {
    const std::vector<QueryTile> tiles = query_tiles(16, 8, causal);
    const WorkOrderShape shape =
        shape_of(16, 1, 16, int64_t(512) << 10, causal ? 0 : int64_t(60) << 20);
    int64_t tail = -1;
    const std::vector<Entry> work = entries(flash_fwd_work_order(tiles, shape, &tail));
    EXPECT_EQ(tail, 0) << causal;
    ASSERT_EQ(work.size(), tiles.size() * 16);
    for (size_t i = 0; i < work.size(); ++i) {
      const QueryTile& t = tiles[i % tiles.size()];
      ASSERT_EQ(work[i].seq, t.seq) << i;
      ASSERT_EQ(work[i].tile, t.m_block) << i;
      ASSERT_EQ(work[i].head, int(i / tiles.size())) << i;
    }
  }
}

// 16 causal sequences of 8 query tiles, 16 heads (or 8 kv heads of two), 512 KiB of K and V per
// kv head and sequence, 132 CTAs, a 60 MiB L2: head-major, the last head's eight-tile items are
// drawn with only that head's work left. The order takes a tail of (q head, sequence) pairs
// within the budget (a kv head's sequence counted once for its group), every item once, the
// other items head-major, the tail's after them heaviest first, and under the model it ends
// sooner than head-major.
TEST(FlashFwdWorkOrder, CausalTailHeaviestFirstWithinTheL2Budget) {
  const std::vector<QueryTile> tiles = query_tiles(16, 8, true);
  for (const int group : {1, 2}) {
    const WorkOrderShape shape = shape_of(16, group, 16, int64_t(512) << 10, int64_t(60) << 20);
    int64_t tail = 0;
    const std::vector<int32_t> order = flash_fwd_work_order(tiles, shape, &tail);
    const std::vector<Entry> work = entries(order);
    EXPECT_GT(tail, 0) << group;
    // The tail's K and V: each (kv head, sequence) of its pairs once.
    std::set<std::pair<int, int>> kv;
    for (int64_t pair = 16 * 16 - tail; pair < 16 * 16; ++pair)
      kv.insert({int(pair / 16) / group, int(pair % 16)});
    EXPECT_LE(double(kv.size()) * (512 << 10), kTailL2Share * double(shape.l2_bytes));
    // Every (sequence, tile, head) once.
    ASSERT_EQ(work.size(), tiles.size() * 16);
    EXPECT_EQ(std::set<Entry>(work.begin(), work.end()).size(), work.size());
    // Pair (head, sequence) is number head * 16 + sequence; the last `tail` are the tail's.
    auto in_tail = [&](const Entry& e) { return e.head * 16 + e.seq >= 16 * 16 - tail; };
    const size_t lead = work.size() - size_t(tail) * 8;
    for (size_t i = 0; i < lead; ++i) {
      ASSERT_FALSE(in_tail(work[i])) << i;
      if (i > 0) ASSERT_GE(work[i].head, work[i - 1].head) << i;  // head-major
    }
    for (size_t i = lead; i < work.size(); ++i) {
      ASSERT_TRUE(in_tail(work[i])) << i;
      if (i > lead) ASSERT_GE(work[i].tile, work[i - 1].tile) << i;  // tile m sees 8 - m
    }
    const WorkOrderShape head_major = shape_of(16, group, 16, int64_t(512) << 10, 0);
    EXPECT_LT(makespan_of(order, tiles, 132),
              makespan_of(flash_fwd_work_order(tiles, head_major), tiles, 132));
  }
}

// A shape that names no sequences' K and V (nothing to budget) keeps the order head-major.
TEST(FlashFwdWorkOrder, HeadMajorWithoutSequenceSizes) {
  WorkOrderShape shape;
  shape.num_q_heads = 4;
  shape.ctas = 132;
  shape.l2_bytes = int64_t(60) << 20;
  const std::vector<QueryTile> tiles = query_tiles(2, 8, true);
  const std::vector<Entry> work = entries(flash_fwd_work_order(tiles, shape));
  ASSERT_EQ(work.size(), tiles.size() * 4);
  for (size_t i = 0; i < work.size(); ++i) {
    ASSERT_EQ(work[i].head, int(i / tiles.size())) << i;
    ASSERT_EQ(work[i].tile, tiles[i % tiles.size()].m_block) << i;
  }
}

// A sequence whose K and V alone take more than the budget keeps the order head-major.
TEST(FlashFwdWorkOrder, NoTailWhereOneSequenceExceedsTheBudget) {
  const WorkOrderShape shape = shape_of(8, 1, 1, int64_t(50) << 20, int64_t(60) << 20);
  int64_t tail = -1;
  flash_fwd_work_order(query_tiles(1, 64, true), shape, &tail);
  EXPECT_EQ(tail, 0);
}

// Without a causal mask, 1024 query rows in tiles of 192 from the end leave a top tile of 64 rows:
// sm90_wgmma's three consumer warpgroups share its eight key tiles, so it weighs three, and each
// head lists its five full tiles per sequence first. A sequence of 1088 rows (top tile of 128)
// or one whose top tile sees fewer key tiles than there are warpgroups keeps its weight.
TEST(FlashFwdWorkOrder, SharedRowsItemsWeighTheirWarpgroupsShare) {
  std::vector<QueryTile> tiles;
  const std::vector<int64_t> lens = {1024, 1024, 1088, 256};
  const std::vector<int64_t> key_tiles = {8, 8, 9, 2};
  for (int s = 0; s < 4; ++s) {
    for (int m = 0; m < int((lens[size_t(s)] + 191) / 192); ++m)
      tiles.push_back({s, m, key_tiles[size_t(s)]});
  }
  const std::vector<QueryTile> weighed = weigh_shared_rows(tiles, lens, 192, 3);
  ASSERT_EQ(weighed.size(), tiles.size());
  auto weight = [&](int seq, int m) {
    for (const QueryTile& t : weighed) {
      if (t.seq == seq && t.m_block == m) return t.key_tiles;
    }
    return int64_t(-1);
  };
  EXPECT_EQ(weight(0, 5), 3);
  EXPECT_EQ(weight(1, 5), 3);
  EXPECT_EQ(weight(0, 4), 8);
  EXPECT_EQ(weight(2, 5), 9);  // 1088 = 5 x 192 + 128: two warpgroups' rows, not shared
  EXPECT_EQ(weight(3, 1), 2);  // 256 = 192 + 64, but 2 key tiles: fewer than the warpgroups
  for (size_t i = 1; i < weighed.size(); ++i)
    EXPECT_GE(weighed[i - 1].key_tiles, weighed[i].key_tiles) << i;
  // 16 such sequences, 32 heads, 256 KiB of K and V per head and sequence, a 60 MiB L2: each
  // head's shared items come after its full ones, so even head-major ends on the last head's.
  // Preferring the longest of the tails the simulation rates alike, the tail is all 240 pairs the
  // L2 holds (kLongTailL2Share) and ends on their 240 shared items, and under the model it ends no
  // later than with them weighed as full items (every sixth item).
  std::vector<QueryTile> even;
  for (int s = 0; s < 16; ++s) {
    for (int m = 0; m < 6; ++m) even.push_back({s, m, 8});
  }
  const std::vector<QueryTile> light =
      weigh_shared_rows(even, std::vector<int64_t>(16, 1024), 192, 3);
  WorkOrderShape shape = shape_of(32, 1, 16, int64_t(256) << 10, int64_t(60) << 20);
  int64_t tail = -1;
  const std::vector<Entry> head_major = entries(flash_fwd_work_order(light, shape, &tail));
  EXPECT_EQ(tail, 0);
  ASSERT_EQ(head_major.size(), size_t(16 * 6 * 32));
  for (size_t i = 0; i < head_major.size(); ++i)
    EXPECT_EQ(head_major[i].tile == 5, i % 96 >= 80) << i;
  shape.prefer_long_tail = true;
  const std::vector<int32_t> order = flash_fwd_work_order(light, shape, &tail);
  EXPECT_EQ(tail, 240);
  const std::vector<Entry> work = entries(order);
  ASSERT_EQ(work.size(), head_major.size());
  EXPECT_EQ(std::set<Entry>(work.begin(), work.end()).size(), work.size());
  const size_t lead = work.size() - 240 * 6;  // the first 272 pairs' items, head-major
  for (size_t i = 0; i < lead; ++i) EXPECT_LT(work[i].head * 16 + work[i].seq, 272) << i;
  for (size_t i = lead; i < work.size(); ++i) EXPECT_EQ(work[i].tile == 5, i >= lead + 1200) << i;
  EXPECT_LE(makespan_of(order, light, 132),
            makespan_of(flash_fwd_work_order(even, shape), light, 132));
}

// With a causal mask, 1024 query rows in tiles of 192 from the end leave a top tile of 64 rows, the
// last of three warpgroups': sm90_wgmma stacks it for three consecutive q heads. A sequence of
// 1088 rows (top tile of 128) is not stacked with three warpgroups, but is with two (1088 = 8 x
// 128 + 64).
TEST(FlashFwdWorkOrder, StackedTilesAreTheTopTilesOfTheLastWarpgroup) {
  const std::vector<int64_t> lens = {1024, 1088, 256, 64};
  auto tiles_of = [&](int tile_m) {
    std::vector<QueryTile> tiles;
    for (int s = 0; s < 4; ++s) {
      for (int m = 0; m < int((lens[size_t(s)] + tile_m - 1) / tile_m); ++m)
        tiles.push_back({s, m, 8});
    }
    return tiles;
  };
  auto stacked_of = [&](int tile_m, int warpgroups) {
    const std::vector<QueryTile> tiles = tiles_of(tile_m);
    const std::vector<bool> stacked = stacked_tiles(tiles, lens, tile_m, warpgroups);
    EXPECT_EQ(stacked.size(), tiles.size());
    std::set<std::pair<int, int>> out;
    for (size_t i = 0; i < tiles.size(); ++i) {
      if (stacked[i]) out.insert({tiles[i].seq, tiles[i].m_block});
    }
    return out;
  };
  EXPECT_EQ(stacked_of(192, 3), (std::set<std::pair<int, int>>{{0, 5}, {2, 1}, {3, 0}}));
  EXPECT_EQ(stacked_of(128, 2), (std::set<std::pair<int, int>>{{1, 8}, {3, 0}}));  // 256 = 2 x 128
}

// A stacked tile is one item per stack of consecutive q heads (8 heads in stacks of three: heads
// 0, 3 and 6), placed where its first head's item would be; every other tile is one item per
// head. Head-major or with a causal tail, every item is listed exactly once.
TEST(FlashFwdWorkOrder, StackedTilesAreListedOncePerStack) {
  for (bool causal : {false, true}) {
    std::vector<QueryTile> tiles;
    for (int m = 0; m < 6; ++m) {
      for (int s = 0; s < 16; ++s) tiles.push_back({s, m, causal ? 8 - m : 8});
    }
    WorkOrderShape shape = shape_of(8, 2, 16, int64_t(256) << 10, int64_t(60) << 20);
    shape.stack_heads = 3;
    for (const QueryTile& t : tiles) shape.stacked.push_back(t.m_block == 5);
    int64_t tail = -1;
    const std::vector<Entry> work = entries(flash_fwd_work_order(tiles, shape, &tail));
    std::set<Entry> expected;
    for (int h = 0; h < 8; ++h) {
      for (const QueryTile& t : tiles) {
        if (t.m_block != 5 || h % 3 == 0) expected.insert({t.seq, t.m_block, h});
      }
    }
    ASSERT_EQ(work.size(), size_t(16 * 5 * 8 + 16 * 3)) << causal;
    EXPECT_EQ(std::set<Entry>(work.begin(), work.end()), expected) << causal;
    if (!causal) {
      // Head-major: head h's items (16 x 5, and its 16 stacked ones where h is a stack's first)
      // before head h + 1's.
      EXPECT_EQ(tail, 0);
      for (size_t i = 1; i < work.size(); ++i) EXPECT_LE(work[i - 1].head, work[i].head) << i;
      EXPECT_EQ(std::count_if(work.begin(), work.end(), [](const Entry& e) { return e.head == 3; }),
                16 * 6);
      EXPECT_EQ(std::count_if(work.begin(), work.end(), [](const Entry& e) { return e.head == 4; }),
                16 * 5);
    }
  }
}

}  // namespace
}  // namespace attn
