// paged_decode.sm80_mma's split plan on the CPU: every split of every sequence appears once in
// the work list, longest first; auto splits fill the GPU in one wave for a single long sequence
// and leave short sequences whole among long ones; fixed counts are taken as given.
#include <gtest/gtest.h>

#include <set>
#include <utility>

#include "kernels/paged_decode/sm80_mma_split_plan.hpp"
#include "kernels/paged_decode/sm80_mma_traits.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

// The default config on an H100/H200: 132 SMs, 3 CTAs per SM (shared memory and registers).
constexpr int kTile = 64, kResident = 3;

Batch llama_batch(const std::vector<int64_t>& contexts) {
  testing::SpecShape shape;
  shape.q_heads = 32;
  shape.kv_heads = 8;
  shape.head_dim = 128;
  return generate_batch(testing::make_decode_spec(shape, contexts));
}

// Blocks of split k of a sequence with n blocks and s splits (the kernel's rule).
int64_t split_blocks(int64_t n, int64_t s, int64_t k) {
  const int64_t per = (n + s - 1) / s;
  const int64_t begin = std::min(n, k * per);
  return std::min(n, begin + per) - begin;
}

void expect_consistent(const Batch& batch, const Sm80MmaSplitPlan& plan) {
  ASSERT_EQ(plan.seq_splits.size(), size_t(batch.num_seqs));
  std::set<std::pair<int, int>> seen;
  int64_t previous = INT64_MAX, rows = 0;
  for (int s = 0; s < batch.num_seqs; ++s) {
    EXPECT_GE(plan.seq_splits[size_t(s)], 1);
    EXPECT_LE(plan.seq_splits[size_t(s)], paged_decode::sm80_mma::kMaxSplits);
    EXPECT_EQ(plan.seq_partial[size_t(s)], rows);
    if (plan.seq_splits[size_t(s)] > 1) rows += plan.seq_splits[size_t(s)];
  }
  EXPECT_EQ(plan.partial_rows, rows);
  for (int i = 0; i < plan.items(); ++i) {
    const int seq = plan.work[size_t(2 * i)], split = plan.work[size_t(2 * i + 1)];
    ASSERT_GE(seq, 0);
    ASSERT_LT(seq, batch.num_seqs);
    ASSERT_GE(split, 0);
    ASSERT_LT(split, plan.seq_splits[size_t(seq)]);
    EXPECT_TRUE(seen.insert({seq, split}).second) << "duplicate " << seq << "/" << split;
    const int64_t n = (batch.kv_lens[size_t(seq)] + kTile - 1) / kTile;
    const int64_t size = split_blocks(n, plan.seq_splits[size_t(seq)], split);
    EXPECT_LE(size, previous) << "work list not longest first at item " << i;
    previous = size;
  }
  int64_t expected = 0;
  for (int32_t s : plan.seq_splits) expected += s;
  EXPECT_EQ(int64_t(seen.size()), expected);
}

TEST(Sm80MmaSplitPlan, OneLongSequenceFillsOneWave) {
  const Batch batch = llama_batch({32768});
  const Sm80MmaSplitPlan plan = plan_tensorcore_splits(batch, kTile, 0, 132, kResident);
  expect_consistent(batch, plan);
  const int64_t slots = 132 * kResident;
  const int64_t ctas = int64_t(plan.items()) * 8;
  EXPECT_LE(ctas, slots);
  EXPECT_GE(ctas, slots * 9 / 10) << "one wave should be nearly full";
}

TEST(Sm80MmaSplitPlan, ShortSequencesStayWholeAmongLongOnes) {
  std::vector<int64_t> contexts(96, 300);
  contexts[7] = 30000;
  contexts[50] = 12000;
  const Batch batch = llama_batch(contexts);
  const Sm80MmaSplitPlan plan = plan_tensorcore_splits(batch, kTile, 0, 132, kResident);
  expect_consistent(batch, plan);
  EXPECT_EQ(plan.seq_splits[0], 1);
  EXPECT_GT(plan.seq_splits[7], plan.seq_splits[50]);
  EXPECT_GT(plan.seq_splits[50], 1);
  EXPECT_EQ(plan.work[0], 7) << "the longest sequence's splits run first";
}

TEST(Sm80MmaSplitPlan, FixedSplitCountsAreTakenAsGiven) {
  const Batch batch = llama_batch({0, 1, 100, 5000});
  const Sm80MmaSplitPlan plan = plan_tensorcore_splits(batch, kTile, 8, 132, kResident);
  expect_consistent(batch, plan);
  for (int32_t s : plan.seq_splits) EXPECT_EQ(s, 8);
  EXPECT_EQ(plan.items(), 32);
  EXPECT_EQ(plan.partial_rows, 32);
}

TEST(Sm80MmaSplitPlan, ManySequencesGetFourWavesOfSplits) {
  const Batch batch = llama_batch(std::vector<int64_t>(64, 4096));
  const Sm80MmaSplitPlan plan = plan_tensorcore_splits(batch, kTile, 0, 132, kResident);
  expect_consistent(batch, plan);
  // 4097 keys = 65 blocks per sequence: 3 splits of 22 blocks, about four waves of 396 CTAs.
  const int64_t slots = 132 * kResident;
  const int64_t ctas = int64_t(plan.items()) * 8;
  EXPECT_GE(ctas, 3 * slots);
  EXPECT_LE(ctas, 4 * slots);
  for (int32_t s : plan.seq_splits) EXPECT_EQ(s, plan.seq_splits[0]);
}

}  // namespace
}  // namespace attn
