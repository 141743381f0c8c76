// The decode work planner on the CPU (kernels/paged_decode/decode_work_plan.hpp): every block of
// every sequence is in exactly one segment, each segment in one CTA, the chunk numbering and
// partial rows agree; the balanced schedule fills one wave with equal shares, the per-sequence one
// keeps one chunk per CTA longest first and never loses to a plain wave count, the automatic one
// keeps whole chunks only where they fit one wave and stream, fixed counts are taken as given, and
// no sequence gets more chunks than the merge holds.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <set>

#include "kernels/paged_decode/decode_work_plan.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

// The default config on an H100/H200: 132 SMs, 3 CTAs per SM (shared memory and registers).
constexpr int kTile = 64, kSms = 132, kResident = 3;

Batch plan_batch(const std::vector<int64_t>& contexts, int kv_heads = 8, int group = 4) {
  testing::SpecShape shape;
  shape.q_heads = kv_heads * group;
  shape.kv_heads = kv_heads;
  shape.head_dim = 128;
  return generate_batch(testing::make_decode_spec(shape, contexts));
}

DecodeWorkInputs plan_inputs(int fixed_splits = 0, bool aligned = false) {
  DecodeWorkInputs in;
  in.block_tokens = kTile;
  in.aligned_blocks = aligned;
  in.fixed_splits = fixed_splits;
  in.sm_count = kSms;
  in.resident_per_sm = kResident;
  return in;
}

int64_t plan_cta_blocks(const DecodeWorkPlan& plan, int cta) {
  int64_t n = 0;
  for (int w = plan.cta_work[size_t(cta)]; w < plan.cta_work[size_t(cta) + 1]; ++w) {
    n += plan.work[size_t(4 * w + 3)] - plan.work[size_t(4 * w + 2)];
  }
  return n;
}

// The invariants every plan keeps, whatever the schedule.
void expect_plan_consistent(const Batch& batch, const DecodeWorkPlan& plan,
                            const DecodeWorkInputs& in) {
  const std::vector<int64_t> blocks =
      decode_visible_blocks(batch, in.block_tokens, in.aligned_blocks);
  ASSERT_EQ(plan.seq_splits.size(), size_t(batch.num_seqs));
  ASSERT_EQ(plan.seq_partial.size(), size_t(batch.num_seqs));
  ASSERT_GE(plan.cta_work.size(), 2u);
  EXPECT_EQ(plan.cta_work.front(), 0);
  EXPECT_EQ(plan.cta_work.back(), plan.segments());
  for (size_t c = 0; c + 1 < plan.cta_work.size(); ++c) {
    EXPECT_LE(plan.cta_work[c], plan.cta_work[c + 1]) << "CTA " << c;
  }
  int64_t rows = 0;
  for (int s = 0; s < batch.num_seqs; ++s) {
    EXPECT_GE(plan.seq_splits[size_t(s)], 1);
    EXPECT_LE(plan.seq_splits[size_t(s)], in.max_splits);
    EXPECT_EQ(plan.seq_partial[size_t(s)], rows);
    if (plan.seq_splits[size_t(s)] > 1) rows += plan.seq_splits[size_t(s)];
  }
  EXPECT_EQ(plan.partial_rows, rows);
  // Each sequence's chunks 0..splits-1 appear once and tile its blocks [0, n) exactly (fixed
  // splits may leave empty chunks at the end).
  std::vector<std::vector<std::pair<int, int>>> ranges(size_t(batch.num_seqs));
  std::set<std::pair<int, int>> chunks;
  for (int w = 0; w < plan.segments(); ++w) {
    const int seq = plan.work[size_t(4 * w)], chunk = plan.work[size_t(4 * w + 1)];
    ASSERT_GE(seq, 0);
    ASSERT_LT(seq, batch.num_seqs);
    ASSERT_GE(chunk, 0);
    ASSERT_LT(chunk, plan.seq_splits[size_t(seq)]);
    EXPECT_TRUE(chunks.insert({seq, chunk}).second) << "duplicate chunk " << seq << "/" << chunk;
    ranges[size_t(seq)].push_back({plan.work[size_t(4 * w + 2)], plan.work[size_t(4 * w + 3)]});
  }
  int64_t expected_chunks = 0;
  for (int32_t s : plan.seq_splits) expected_chunks += s;
  EXPECT_EQ(int64_t(chunks.size()), expected_chunks);
  for (int s = 0; s < batch.num_seqs; ++s) {
    auto r = ranges[size_t(s)];
    std::sort(r.begin(), r.end());
    int64_t at = 0;
    for (const auto& [begin, end] : r) {
      EXPECT_LE(begin, end);
      if (begin == end) continue;
      EXPECT_EQ(begin, at) << "sequence " << s << ": a gap or an overlap";
      at = end;
    }
    EXPECT_EQ(at, blocks[size_t(s)]) << "sequence " << s << ": blocks left out";
  }
}

TEST(DecodeWorkPlan, BalancedFillsOneWaveWithEqualShares) {
  const Batch batch = plan_batch(std::vector<int64_t>(64, 4096), 4, 7);
  const DecodeWorkInputs in = plan_inputs();
  const DecodeWorkPlan plan = plan_decode_work(batch, DecodeSchedule::balanced, in);
  expect_plan_consistent(batch, plan, in);
  // 4 KV heads leave 99 CTAs of the 396 slots; 64 x 65 blocks in 99 shares of 43.
  EXPECT_EQ(plan.ctas(), 97);
  EXPECT_LE(int64_t(plan.ctas()) * 4, int64_t(kSms) * kResident);
  const int64_t share = plan_cta_blocks(plan, 0);
  EXPECT_EQ(share, 43);
  for (int c = 0; c + 1 < plan.ctas(); ++c)
    EXPECT_EQ(plan_cta_blocks(plan, c), share) << "CTA " << c;
  EXPECT_LE(plan_cta_blocks(plan, plan.ctas() - 1), share);
  EXPECT_NE(plan.description.find("balanced: 97 CTAs per KV head"), std::string::npos)
      << plan.description;
}

TEST(DecodeWorkPlan, BalancedCutsOneLongSequenceWithinTheMergeLimit) {
  // MQA: one KV head, so 396 CTAs would each take 5 of 2048 blocks; the merge holds 128 chunks.
  const Batch batch = plan_batch({131072}, 1, 16);
  const DecodeWorkInputs in = plan_inputs();
  const DecodeWorkPlan plan = plan_decode_work(batch, DecodeSchedule::balanced, in);
  expect_plan_consistent(batch, plan, in);
  EXPECT_LE(plan.seq_splits[0], in.max_splits);
  EXPECT_GT(plan.seq_splits[0], 64);
}

TEST(DecodeWorkPlan, BalancedKeepsEmptySequencesAsEmptySegments) {
  const Batch batch = plan_batch({0, 1, 5000, 0, 64});
  const DecodeWorkInputs in = plan_inputs();
  const DecodeWorkPlan plan = plan_decode_work(batch, DecodeSchedule::balanced, in);
  expect_plan_consistent(batch, plan, in);
  EXPECT_EQ(plan.seq_splits[0], 1);
  EXPECT_EQ(plan.seq_splits[3], 1);
}

TEST(DecodeWorkPlan, PerSequenceKeepsOneChunkPerCtaLongestFirst) {
  std::vector<int64_t> contexts(96, 300);
  contexts[7] = 30000;
  contexts[50] = 12000;
  const Batch batch = plan_batch(contexts);
  const DecodeWorkInputs in = plan_inputs(0, /*aligned=*/true);
  const DecodeWorkPlan plan = plan_decode_work(batch, DecodeSchedule::per_sequence, in);
  expect_plan_consistent(batch, plan, in);
  EXPECT_EQ(plan.ctas(), plan.segments());
  int64_t previous = INT64_MAX;
  for (int c = 0; c < plan.ctas(); ++c) {
    EXPECT_LE(plan_cta_blocks(plan, c), previous) << "not longest first at CTA " << c;
    previous = plan_cta_blocks(plan, c);
  }
  EXPECT_EQ(plan.seq_splits[0], 1);
  EXPECT_GT(plan.seq_splits[7], plan.seq_splits[50]);
  EXPECT_EQ(plan.work[0], 7) << "the longest sequence's chunks run first";
}

TEST(DecodeWorkPlan, PerSequenceAvoidsASecondWaveThatWouldRunHalfEmpty) {
  // 256 (sequence, head) pairs of 65 blocks on 396 slots: two splits each would be 512 CTAs,
  // a second wave a third full; one wave of whole sequences finishes first.
  const Batch batch = plan_batch(std::vector<int64_t>(64, 4096), 4, 7);
  const DecodeWorkInputs in = plan_inputs(0, true);
  const DecodeWorkPlan plan = plan_decode_work(batch, DecodeSchedule::per_sequence, in);
  expect_plan_consistent(batch, plan, in);
  EXPECT_NE(plan.ctas(), 128) << plan.description;
  for (int32_t s : plan.seq_splits) EXPECT_NE(s, 2) << plan.description;
}

TEST(DecodeWorkPlan, PerSequenceHalvesSequencesOneBlockLongerThanTwoWaveFillingShares) {
  // MQA: 64 sequences of 65 blocks, one CTA per SM. The share that fills one wave (32 blocks)
  // cuts each in three (192 CTAs, a second wave half full), the ones for more waves in five or
  // six; halves (33 blocks, 128 CTAs) finish first: measured on an H200, 82.5 us against 115.4
  // for sixths.
  const Batch batch = plan_batch(std::vector<int64_t>(64, 4096), 1, 8);
  DecodeWorkInputs in = plan_inputs(0, true);
  in.resident_per_sm = 1;
  const DecodeWorkPlan plan = plan_decode_work(batch, DecodeSchedule::per_sequence, in);
  expect_plan_consistent(batch, plan, in);
  EXPECT_EQ(plan.ctas(), 128) << plan.description;
  for (int32_t s : plan.seq_splits) EXPECT_EQ(s, 2) << plan.description;
}

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.rfind(prefix, 0) == 0;
}

TEST(DecodeWorkPlan, AutomaticKeepsChunksWholeWhereTheyFitOneWaveElseBalances) {
  const DecodeWorkInputs in = plan_inputs();
  // 128 sequences x 2 KV heads = 256 CTAs of whole sequences on 396 slots: one segment per CTA
  // beats balanced shares, which would cut most sequences in two.
  const Batch fits = plan_batch(std::vector<int64_t>(128, 4096), 2, 16);
  const DecodeWorkPlan whole = plan_decode_work(fits, DecodeSchedule::automatic, in);
  expect_plan_consistent(fits, whole, in);
  EXPECT_TRUE(starts_with(whole.description, "automatic, per sequence:")) << whole.description;
  EXPECT_EQ(whole.ctas(), whole.segments());
  EXPECT_LE(int64_t(whole.ctas()) * 2, int64_t(kSms) * kResident);
  // 64 x 8 = 512 units on 396 slots: no per-sequence plan fits one wave; balanced.
  const Batch over = plan_batch(std::vector<int64_t>(64, 4096), 8, 4);
  const DecodeWorkPlan shares = plan_decode_work(over, DecodeSchedule::automatic, in);
  expect_plan_consistent(over, shares, in);
  EXPECT_TRUE(starts_with(shares.description, "automatic, balanced:")) << shares.description;
  EXPECT_LE(int64_t(shares.ctas()) * 8, int64_t(kSms) * kResident);
  // One more resident CTA per SM (528 slots) and the same 512 units fit whole.
  DecodeWorkInputs roomier = in;
  roomier.resident_per_sm = 4;
  const DecodeWorkPlan roomy = plan_decode_work(over, DecodeSchedule::automatic, roomier);
  EXPECT_TRUE(starts_with(roomy.description, "automatic, per sequence:")) << roomy.description;
  EXPECT_EQ(roomy.ctas(), 64);
}

TEST(DecodeWorkPlan, AutomaticBalancesWhereChunksLeaveTooFewCtasPerSmToStream) {
  // The 256 whole sequences leave two CTAs on most SMs; with three needed to stream (CTAs of 2
  // warps) they run at two thirds of the rate, and balanced shares (three per SM) win. On an H200
  // GQA 4 at d256 (t32.w2): 330 us whole, 282 balanced.
  const Batch batch = plan_batch(std::vector<int64_t>(128, 4096), 2, 16);
  DecodeWorkInputs in = plan_inputs();
  in.saturating_per_sm = 3;
  const DecodeWorkPlan plan = plan_decode_work(batch, DecodeSchedule::automatic, in);
  expect_plan_consistent(batch, plan, in);
  EXPECT_TRUE(starts_with(plan.description, "automatic, balanced:")) << plan.description;
}

TEST(DecodeWorkPlan, CtasToFillAnSmFollowTheirStagesAndWarps) {
  EXPECT_EQ(ctas_to_fill_sm(73984, 4, 3), 2);   // 64 keys x d128 bf16, 2 stages
  EXPECT_EQ(ctas_to_fill_sm(41216, 4, 4), 4);   // the same in fp8: half the bytes in flight
  EXPECT_EQ(ctas_to_fill_sm(76032, 2, 3), 3);   // 2 warps: four would be needed, three fit
  EXPECT_EQ(ctas_to_fill_sm(143616, 4, 1), 1);  // never more than the SM holds
  EXPECT_EQ(ctas_to_fill_sm(200000, 8, 2), 1);
}

TEST(DecodeWorkPlan, FixedSplitCountsAreTakenAsGiven) {
  const Batch batch = plan_batch({0, 1, 100, 5000});
  for (DecodeSchedule schedule :
       {DecodeSchedule::balanced, DecodeSchedule::per_sequence, DecodeSchedule::automatic}) {
    const DecodeWorkInputs in = plan_inputs(8);
    const DecodeWorkPlan plan = plan_decode_work(batch, schedule, in);
    expect_plan_consistent(batch, plan, in);
    for (int32_t s : plan.seq_splits) EXPECT_EQ(s, 8);
    EXPECT_EQ(plan.ctas(), 32);
    EXPECT_EQ(plan.partial_rows, 32);
  }
}

TEST(DecodeWorkPlan, RandomBatchesKeepEveryInvariant) {
  std::mt19937_64 rng(20261129);
  for (int trial = 0; trial < 60; ++trial) {
    const int seqs = 1 + int(rng() % 80);
    std::vector<int64_t> contexts(static_cast<size_t>(seqs), 0);
    for (auto& c : contexts) {
      const int kind = int(rng() % 4);
      c = kind == 0   ? int64_t(rng() % 3)
          : kind == 1 ? int64_t(rng() % 40000)
                      : int64_t(rng() % 3000);
    }
    const int kv_heads = 1 << int(rng() % 4), group = 1 + int(rng() % 8);
    const Batch batch = plan_batch(contexts, kv_heads, group);
    DecodeWorkInputs in = plan_inputs(rng() % 5 == 0 ? 1 + int(rng() % 16) : 0, rng() % 2 == 0);
    in.block_tokens = 16 << int(rng() % 4);
    in.resident_per_sm = 1 + int(rng() % 4);
    in.sm_count = 1 + int(rng() % 160);
    for (DecodeSchedule schedule :
         {DecodeSchedule::balanced, DecodeSchedule::per_sequence, DecodeSchedule::automatic}) {
      SCOPED_TRACE("trial " + std::to_string(trial));
      const DecodeWorkPlan plan = plan_decode_work(batch, schedule, in);
      expect_plan_consistent(batch, plan, in);
      if (schedule == DecodeSchedule::balanced && in.fixed_splits == 0) {
        EXPECT_LE(plan.ctas(), std::max(1, in.sm_count * in.resident_per_sm / kv_heads));
      }
    }
  }
}

}  // namespace
}  // namespace attn
