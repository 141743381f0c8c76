// prefix_prefill_cta_schedule on the CPU (prefix_prefill.sm90_wgmma's launch order): every (q tile,
// kv head) appears exactly once, kv head by kv head, each head's tiles heaviest first; with
// thin_rows, the (sequence, kv head) units of thin sequences (the decodes of a mixed batch) are
// taken apart, heaviest first over all heads, and interleaved with the others in proportion to
// their cost, so that the last head's long decodes do not start last. And
// prefix_prefill_tile_schedule, prefix_prefill.sm80_mma's flat order.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <set>
#include <utility>
#include <vector>

#include "kernels/prefix_prefill/prefix_prefill_variants.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

// 8 q heads over 2 kv heads (group 4), 128-key tiles, 32 new tokens per q tile (128 rows).
constexpr int kTileTokens = 32, kBlockN = 128;

Batch mixed_batch() {
  testing::SpecShape shape;
  shape.q_heads = 8;
  shape.kv_heads = 2;
  shape.head_dim = 128;
  // Decode sequences of 8192, 4096, 1024 and 256 cached tokens; prefill chunks of 96 new tokens
  // (three q tiles each) after 2048 and 0 cached tokens.
  return generate_batch(
      testing::make_spec(shape, {{8192, 1}, {2048, 96}, {4096, 1}, {1024, 1}, {0, 96}, {256, 1}}));
}

using Cta = std::array<int, 3>;  // sequence, first new token, kv head

std::vector<Cta> ctas_of(const std::vector<int>& table) {
  std::vector<Cta> ctas;
  for (size_t i = 0; i + 2 < table.size(); i += 3)
    ctas.push_back({table[i], table[i + 1], table[i + 2]});
  return ctas;
}

void expect_each_once(const std::vector<Cta>& ctas) {
  const std::set<Cta> unique(ctas.begin(), ctas.end());
  EXPECT_EQ(ctas.size(), 20u);  // (four decodes + two chunks of three q tiles) x two kv heads
  EXPECT_EQ(unique.size(), ctas.size());
}

// Costs in 128-key tiles (causal: a decode token sees its own key too): decode 8192 -> 65,
// 4096 -> 33, 1024 -> 9, 256 -> 3; the chunk after 2048 cached tokens 16 + 1 per q tile (51 in
// all), the chunk after none 1 per q tile (3). Ties keep the sequences' order, then the tokens'.
TEST(PrefixPrefillTileSchedule, CostClassesHeaviestFirst) {
  const auto ctas = ctas_of(prefix_prefill_cta_schedule(mixed_batch(), kTileTokens, kBlockN, 0));
  expect_each_once(ctas);
  // Classes 64..127 (decode 0), 32..63 (decode 2), 16..31 (chunk 1), 8..15 (decode 3), 2..3
  // (decode 5), 1 (chunk 4); each class kv head by kv head.
  const std::vector<Cta> expected = {{0, 0, 0},  {0, 0, 1},  {2, 0, 0}, {2, 0, 1},  {1, 0, 0},
                                     {1, 32, 0}, {1, 64, 0}, {1, 0, 1}, {1, 32, 1}, {1, 64, 1},
                                     {3, 0, 0},  {3, 0, 1},  {5, 0, 0}, {5, 0, 1},  {4, 0, 0},
                                     {4, 32, 0}, {4, 64, 0}, {4, 0, 1}, {4, 32, 1}, {4, 64, 1}};
  EXPECT_EQ(ctas, expected);
}

TEST(PrefixPrefillTileSchedule, ThinUnitsInterleavedByCost) {
  // Decode sequences hold 1 token x 4 q heads = 4 rows; the chunks 96 x 4.
  const auto ctas = ctas_of(prefix_prefill_cta_schedule(mixed_batch(), kTileTokens, kBlockN, 64));
  expect_each_once(ctas);
  // Thin units heaviest first over both heads (65, 65, 33, 33, 9, 9, 3, 3: total 220) and the
  // full tiles by cost class, then head by head (17 x 6, then 1 x 6: total 108), merged by the
  // fraction of its own total each list has handed out, ties to the thin list: decode 0 h0
  // (65/220); chunk 1's tiles 0 and 32 under h0 (34/108 >= 65/220 only after the second); decode
  // 0 h1 (130/220); and so on.
  const std::vector<Cta> expected = {{0, 0, 0}, {1, 0, 0}, {1, 32, 0}, {0, 0, 1},  {1, 64, 0},
                                     {1, 0, 1}, {2, 0, 0}, {1, 32, 1}, {2, 0, 1},  {1, 64, 1},
                                     {3, 0, 0}, {3, 0, 1}, {4, 0, 0},  {4, 32, 0}, {4, 64, 0},
                                     {4, 0, 1}, {5, 0, 0}, {4, 32, 1}, {5, 0, 1},  {4, 64, 1}};
  EXPECT_EQ(ctas, expected);
  // The heaviest decode under the last head starts within the first quarter.
  const auto last_head_decode = std::find(ctas.begin(), ctas.end(), Cta{0, 0, 1});
  EXPECT_LT(last_head_decode - ctas.begin(), 5);
}

TEST(PrefixPrefillTileSchedule, ThresholdBelowEverySequenceKeepsThePlainOrder) {
  const Batch batch = mixed_batch();
  EXPECT_EQ(prefix_prefill_cta_schedule(batch, kTileTokens, kBlockN, 3),
            prefix_prefill_cta_schedule(batch, kTileTokens, kBlockN, 0));
}

// prefix_prefill.sm80_mma's table: (sequence, first new token) pairs over all sequences, heaviest
// first, ties in the sequences' order; the kernel runs each for every kv head.
TEST(PrefixPrefillTileSchedule, MmaTilesHeaviestFirstOverAllSequences) {
  const std::vector<int> table =
      prefix_prefill_tile_schedule(mixed_batch(), kTileTokens, kBlockN, false);
  const std::vector<int> expected = {0, 0, 2, 0, 1, 0, 1, 32, 1, 64,
                                     3, 0, 5, 0, 4, 0, 4, 32, 4, 64};
  EXPECT_EQ(table, expected);
}

TEST(PrefixPrefillTileSchedule, WithinAClassHeadByHead) {
  testing::SpecShape shape;
  shape.q_heads = 8;
  shape.kv_heads = 2;
  shape.head_dim = 64;
  // 300 new tokens after 100 cached, 64-token q tiles and 64-key tiles, causal: the tiles from t0
  // 256, 192, 128, 64 and 0 walk 7, 6, 5, 4 and 3 KV tiles: class 4..7 under head 0, then under
  // head 1, then class 2..3.
  const auto ctas = ctas_of(prefix_prefill_cta_schedule(
      generate_batch(testing::make_spec(shape, {{100, 300}})), 64, 64, 0));
  const std::vector<Cta> expected = {{0, 256, 0}, {0, 192, 0}, {0, 128, 0}, {0, 64, 0}, {0, 256, 1},
                                     {0, 192, 1}, {0, 128, 1}, {0, 64, 1},  {0, 0, 0},  {0, 0, 1}};
  EXPECT_EQ(ctas, expected);
}

}  // namespace
}  // namespace attn
