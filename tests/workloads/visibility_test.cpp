#include "workloads/visibility.hpp"

#include <chrono>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "mask_test_batch.hpp"
#include "workloads/block_sparse_layout.hpp"
#include "workloads/explicit_mask.hpp"

namespace attn {
namespace {

using test::hand_batch;
using test::SeqShape;

// The rules as docs/masks.md states them, one condition each, for a dense reference.
struct Rules {
  bool causal = true;
  int64_t window = 0;  // 0: none
  std::optional<BlockSparseSpec> block_sparse;
};

bool reference_visible(const Rules& rules, int64_t context_len, int64_t kv_len, int q_head,
                       int64_t q_index, int64_t key) {
  const int64_t position = context_len + q_index;
  if (key < 0 || key >= kv_len) return false;
  if (rules.causal && key > position) return false;
  if (rules.window > 0 && position - key >= rules.window) return false;
  if (rules.block_sparse) {
    const BlockSparseSpec& p = *rules.block_sparse;
    const int64_t i = position / p.block_size;
    const int64_t j = key / p.block_size;
    const int64_t h = p.homo_head ? 0 : q_head;
    const bool kept = j <= i && (i - j < p.local_blocks ||
                                 (j + h * p.head_sliding_step + 1) % p.vertical_stride == 0);
    if (!kept) return false;
  }
  return true;
}

Batch batch_for(const std::vector<SeqShape>& shapes, const Rules& rules, int q_heads,
                int kv_heads) {
  Batch batch = hand_batch(shapes, q_heads, kv_heads, rules.causal, rules.window);
  if (rules.block_sparse) {
    batch.spec.mask.block_sparse = rules.block_sparse;
    batch.block_sparse = build_block_sparse_layout(batch.spec, batch.max_kv_len());
  }
  return batch;
}

// key_visible, visible_key_count and visible_pairs against the dense reference, pair by pair.
void expect_matches_reference(const Batch& batch, const Rules& rules) {
  int64_t pairs = 0;
  for (int s = 0; s < batch.num_seqs; ++s) {
    const int64_t context = batch.context_lens[size_t(s)];
    const int64_t kv_len = batch.kv_lens[size_t(s)];
    for (int h = 0; h < batch.spec.model.num_q_heads; ++h) {
      for (int64_t i = 0; i < batch.query_lens[size_t(s)]; ++i) {
        int64_t row = 0;
        for (int64_t k = -1; k <= kv_len; ++k) {  // one key either side of the sequence too
          const bool expected = reference_visible(rules, context, kv_len, h, i, k);
          ASSERT_EQ(key_visible(batch, s, h, i, k), expected)
              << "sequence " << s << " (context " << context << ", kv " << kv_len << ") head " << h
              << " query " << i << " key " << k;
          row += expected;
        }
        ASSERT_EQ(visible_key_count(batch, s, h, i), row)
            << "sequence " << s << " head " << h << " query " << i;
        pairs += row;
      }
    }
  }
  EXPECT_EQ(visible_pairs(batch), pairs);
}

BlockSparseSpec bs_params(std::mt19937& rng) {
  BlockSparseSpec p;
  p.block_size = std::uniform_int_distribution<int>(1, 9)(rng);
  p.local_blocks = std::uniform_int_distribution<int>(0, 4)(rng);
  p.vertical_stride = std::uniform_int_distribution<int>(1, 6)(rng);
  p.head_sliding_step = std::uniform_int_distribution<int>(-2, 3)(rng);
  p.homo_head = std::uniform_int_distribution<int>(0, 3)(rng) == 0;
  return p;
}

TEST(Visibility, MatchesTheDenseReferenceOverRandomShapesAndRules) {
  std::mt19937 rng(2024);
  for (int round = 0; round < 300; ++round) {
    Rules rules;
    rules.causal = round % 5 != 4;  // mostly causal, as serving is
    if (round % 3 != 0) rules.window = std::uniform_int_distribution<int64_t>(1, 40)(rng);
    if (round % 2 == 1) rules.block_sparse = bs_params(rng);
    const int kv_heads = std::uniform_int_distribution<int>(1, 2)(rng);
    const int q_heads = kv_heads * std::uniform_int_distribution<int>(1, 3)(rng);
    const std::vector<SeqShape> shapes = test::random_shapes(rng);
    SCOPED_TRACE("round " + std::to_string(round) + (rules.causal ? " causal" : " non-causal") +
                 " window " + std::to_string(rules.window) +
                 (rules.block_sparse
                      ? " block " + std::to_string(rules.block_sparse->block_size) + " local " +
                            std::to_string(rules.block_sparse->local_blocks) + " stride " +
                            std::to_string(rules.block_sparse->vertical_stride) + " step " +
                            std::to_string(rules.block_sparse->head_sliding_step)
                      : ""));
    expect_matches_reference(batch_for(shapes, rules, q_heads, kv_heads), rules);
  }
}

TEST(Visibility, BlockSparseFollowsTheQHeadNotTheKvHead) {
  // 8 q heads share 2 kv heads; with a sliding step every q head of a group has its own verticals.
  Rules rules;
  BlockSparseSpec p;
  p.block_size = 4;
  p.local_blocks = 1;
  p.vertical_stride = 4;
  p.head_sliding_step = 1;
  rules.block_sparse = p;
  const Batch batch = batch_for({{0, 64}}, rules, 8, 2);
  expect_matches_reference(batch, rules);
  // Query 63 (block 15), key 0 (block 0): kept by the verticals of head h iff (h + 1) % 4 == 0.
  for (int h = 0; h < 8; ++h) {
    EXPECT_EQ(key_visible(batch, 0, h, 63, 0), (h + 1) % 4 == 0) << "head " << h;
  }
}

TEST(Visibility, WithinTheDiagonalBlockCausalityIsPerToken) {
  // The seed kernel keeps whole blocks and masks the diagonal one token by token; so must we.
  Rules rules;
  BlockSparseSpec p;
  p.block_size = 16;
  p.local_blocks = 1;
  p.vertical_stride = 1000;
  rules.block_sparse = p;
  const Batch batch = batch_for({{0, 40}}, rules, 1, 1);
  EXPECT_TRUE(key_visible(batch, 0, 0, 20, 16));
  EXPECT_TRUE(key_visible(batch, 0, 0, 20, 20));
  EXPECT_FALSE(key_visible(batch, 0, 0, 20, 21));
  EXPECT_FALSE(key_visible(batch, 0, 0, 20, 15));  // previous block: not local, no vertical
  EXPECT_EQ(visible_key_count(batch, 0, 0, 20), 5);
}

TEST(Visibility, AnExplicitMaskAloneDecides) {
  // Causal, a window of 1 and a block-sparse layout are all set, and all ignored: the explicit
  // mask shows a future key and hides the query's own.
  Batch batch = hand_batch({{2, 2}, {0, 1}}, 4, 2, true, 1);
  BlockSparseSpec p;
  p.block_size = 1;
  p.local_blocks = 1;
  p.vertical_stride = 1000;
  batch.spec.mask.block_sparse = p;
  batch.block_sparse = build_block_sparse_layout(batch.spec, batch.max_kv_len());
  ExplicitMask mask;
  mask.offsets = {0, 8, 9};
  mask.bits = {1, 0, 0, 1,  // sequence 0, query 0: key 0 and the future key 3
               1, 1, 1, 0,  // query 1: keys 0..2, not itself
               0};          // sequence 1: nothing
  batch.explicit_mask = mask;
  const std::vector<std::vector<std::string>> rows = {{"1001", "1110"}, {"0"}};
  int64_t pairs = 0;
  for (int s = 0; s < 2; ++s) {
    for (int h = 0; h < 4; ++h) {
      for (int64_t i = 0; i < batch.query_lens[size_t(s)]; ++i) {
        int64_t row = 0;
        for (int64_t k = 0; k < batch.kv_lens[size_t(s)]; ++k) {
          const bool expected = rows[size_t(s)][size_t(i)][size_t(k)] == '1';
          EXPECT_EQ(key_visible(batch, s, h, i, k), expected);
          row += expected;
        }
        EXPECT_EQ(visible_key_count(batch, s, h, i), row);
        pairs += row;
      }
    }
  }
  EXPECT_EQ(visible_pairs(batch), pairs);
  EXPECT_EQ(pairs, 4 * 5);
}

TEST(Visibility, ClosedFormsOfSimpleCases) {
  // Causal prefill of n tokens: n (n + 1) / 2 per head. Decode over c keys: c + 1. A window of w
  // over a prefill of n >= w: w (w + 1) / 2 + (n - w) w.
  EXPECT_EQ(visible_pairs(hand_batch({{0, 1000}}, 3, 1)), 3 * 1000 * 1001 / 2);
  EXPECT_EQ(visible_pairs(hand_batch({{4095, 1}}, 2, 1)), 2 * 4096);
  EXPECT_EQ(visible_pairs(hand_batch({{0, 1000}}, 1, 1, true, 100)), 100 * 101 / 2 + 900 * 100);
  EXPECT_EQ(visible_pairs(hand_batch({{0, 10}}, 1, 1, false)), 100);
  EXPECT_EQ(visible_pairs(hand_batch({{7, 0}}, 1, 1)), 0);
}

int64_t elapsed_ms(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               start)
      .count();
}

TEST(Visibility, CountsA128kPrefillFast) {
  const int64_t n = int64_t(1) << 17;
  // Causal and a window: closed forms.
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(visible_pairs(hand_batch({{0, n}}, 32, 8)), 32 * n * (n + 1) / 2);
  EXPECT_EQ(visible_pairs(hand_batch({{0, n}}, 32, 8, true, 4096)),
            32 * (4096 * 4097 / 2 + (n - 4096) * 4096));
  EXPECT_LT(elapsed_ms(start), 1000);

  // Block-sparse at seed 003's configuration (block 64, local 16, stride 8), 32 q heads, with
  // and without a window: layout and count together well under a second.
  for (int64_t window : {int64_t(0), int64_t(3000)}) {
    Rules rules;
    rules.window = window;
    BlockSparseSpec p;
    p.block_size = 64;
    p.local_blocks = 16;
    p.vertical_stride = 8;
    rules.block_sparse = p;
    start = std::chrono::steady_clock::now();
    const Batch batch = batch_for({{0, n}}, rules, 32, 8);
    const int64_t pairs = visible_pairs(batch);
    EXPECT_LT(elapsed_ms(start), 1000) << "window " << window;
    // Between the local band alone and full causal attention.
    EXPECT_GT(pairs, 32 * n * 64 * 15);
    EXPECT_LT(pairs, 32 * n * (n + 1) / 2);
  }
}

TEST(Visibility, BlockSparsePairsEqualTheSumOfPerQueryCountsOnALongerSequence) {
  // Beyond what the pair-by-pair reference can walk: the per-block count of visible_pairs
  // against per-query counts (themselves checked against the reference above).
  Rules rules;
  rules.window = 700;
  BlockSparseSpec p;
  p.block_size = 32;
  p.local_blocks = 4;
  p.vertical_stride = 5;
  p.head_sliding_step = 2;
  rules.block_sparse = p;
  const Batch batch = batch_for({{1000, 3001}, {3999, 1}, {0, 2500}}, rules, 4, 2);
  int64_t pairs = 0;
  for (int s = 0; s < batch.num_seqs; ++s) {
    for (int h = 0; h < 4; ++h) {
      for (int64_t i = 0; i < batch.query_lens[size_t(s)]; ++i) {
        pairs += visible_key_count(batch, s, h, i);
      }
    }
  }
  EXPECT_EQ(visible_pairs(batch), pairs);
}

}  // namespace
}  // namespace attn
