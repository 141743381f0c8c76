// How mla_decode's GPU variants deal keys to CTAs (kernels/mla_decode/mla_split_plan.hpp): every
// key of every sequence in exactly one split, splits of whole blocks, a wave of CTAs filled in
// equal shares, and the partial slots of split sequences laid end to end.
#include <gtest/gtest.h>

#include <numeric>

#include "kernels/mla_decode/mla_split_plan.hpp"
#include "kernels/mla_decode/sm80_mma_traits.hpp"

namespace attn {
namespace {

struct Row {
  int seq, split, splits, begin, end;
};
std::vector<Row> rows_of(const MlaSplitPlan& plan) {
  std::vector<Row> rows;
  for (int c = 0; c < plan.ctas(); ++c) {
    const int32_t* w = plan.work.data() + 5 * c;
    rows.push_back({w[0], w[1], w[2], w[3], w[4]});
  }
  return rows;
}

// Each sequence's splits cover [0, kv_len) in order, without gaps, each starting on a block.
void expect_covers(const MlaSplitPlan& plan, const std::vector<int64_t>& kv_lens, int block) {
  std::vector<int64_t> next(kv_lens.size(), 0);
  std::vector<int> seen(kv_lens.size(), 0);
  for (const Row& r : rows_of(plan)) {
    ASSERT_LT(size_t(r.seq), kv_lens.size());
    EXPECT_EQ(r.split, seen[size_t(r.seq)]++);
    EXPECT_EQ(r.begin, next[size_t(r.seq)]) << "sequence " << r.seq;
    EXPECT_EQ(r.begin % block, 0);
    EXPECT_LE(r.begin, r.end);
    next[size_t(r.seq)] = r.end;
  }
  for (size_t s = 0; s < kv_lens.size(); ++s) {
    EXPECT_EQ(next[s], kv_lens[s]) << "sequence " << s;
    EXPECT_GE(seen[s], 1) << "every sequence has a CTA, even without keys";
  }
}

TEST(MlaSplitPlan, FewSequencesAreSplitToFillOneWave) {
  const std::vector<int64_t> kv_lens(16, 4096);
  MlaSplitInputs in;
  in.block_tokens = 32;
  in.sm_count = 132;
  in.resident_per_sm = 2;
  const MlaSplitPlan plan = plan_mla_splits(kv_lens, std::vector<int>(16, 1), in);
  expect_covers(plan, kv_lens, 32);
  // 16 x 128 blocks over 264 CTAs: chunks of 8 blocks, 16 splits each.
  EXPECT_EQ(plan.ctas(), 256);
  EXPECT_EQ(plan.max_splits_used, 16);
  EXPECT_EQ(plan.partial_slots, 256);
  EXPECT_EQ(plan.seq_partial[3], 48);
}

// 64 sequences of 4097 keys (65 blocks of 64) on 132 slots: chunks of ceil(4160 / 132) = 32 blocks
// would give each 3 splits, 192 CTAs, and a second wave 45% full; the chunk grows to 33 blocks and
// 2 splits each, 128 CTAs in one wave.
TEST(MlaSplitPlan, RoundingUpNeverOvershootsTheWave) {
  const std::vector<int64_t> kv_lens(64, 4097);
  MlaSplitInputs in;
  in.block_tokens = 64;
  in.sm_count = 132;
  in.resident_per_sm = 1;
  const MlaSplitPlan plan = plan_mla_splits(kv_lens, std::vector<int>(64, 1), in);
  expect_covers(plan, kv_lens, 64);
  EXPECT_EQ(plan.ctas(), 128);
  EXPECT_EQ(plan.max_splits_used, 2);
  // With two row tiles per sequence the 128 (sequence, row tile) pairs nearly fill the wave
  // alone: no split (two each would make 256 CTAs).
  EXPECT_EQ(plan_mla_splits(kv_lens, std::vector<int>(64, 2), in).ctas(), 64);
  // Every length from 1 to 80 blocks with 1 to 3 row tiles: at most one wave, or one CTA per
  // (sequence, row tile) where those alone fill it.
  for (int64_t len = 1; len <= 80 * 64; len += 193) {
    for (int tiles = 1; tiles <= 3; ++tiles) {
      const std::vector<int64_t> lens(50, len);
      const MlaSplitPlan p = plan_mla_splits(lens, std::vector<int>(50, tiles), in);
      EXPECT_LE(int64_t(p.ctas()) * tiles, std::max<int64_t>(132, 50 * tiles))
          << len << " " << tiles;
      expect_covers(p, lens, 64);
    }
  }
}

TEST(MlaSplitPlan, SkewedLengthsGetSplitsInProportion) {
  const std::vector<int64_t> kv_lens = {32768, 100, 0, 1, 4000};
  MlaSplitInputs in;
  in.block_tokens = 64;
  in.sm_count = 132;
  const MlaSplitPlan plan = plan_mla_splits(kv_lens, std::vector<int>(5, 2), in);
  expect_covers(plan, kv_lens, 64);
  std::vector<int> splits(kv_lens.size());
  for (const Row& r : rows_of(plan)) splits[size_t(r.seq)] = r.splits;
  EXPECT_GT(splits[0], 8 * splits[4] / 2);
  EXPECT_EQ(splits[1], 1);
  EXPECT_EQ(splits[2], 1);
  EXPECT_EQ(splits[3], 1);
  EXPECT_LE(splits[0], in.max_splits);
  EXPECT_EQ(plan.seq_partial[4], splits[0]) << "slots of split sequences lie end to end";
}

TEST(MlaSplitPlan, ManyRowTilesNeedNoSplit) {
  const std::vector<int64_t> kv_lens(128, 4096);
  MlaSplitInputs in;
  in.block_tokens = 32;
  const MlaSplitPlan plan = plan_mla_splits(kv_lens, std::vector<int>(128, 4), in);
  EXPECT_EQ(plan.ctas(), 128);
  EXPECT_EQ(plan.partial_slots, 0);
  expect_covers(plan, kv_lens, 32);
}

TEST(MlaSplitPlan, FixedSplitsStopAtTheSequencesBlocks) {
  const std::vector<int64_t> kv_lens = {1000, 40, 0};
  MlaSplitInputs in;
  in.block_tokens = 32;
  in.fixed_splits = 8;
  const MlaSplitPlan plan = plan_mla_splits(kv_lens, {1, 1, 1}, in);
  expect_covers(plan, kv_lens, 32);
  std::vector<int> splits(3);
  for (const Row& r : rows_of(plan)) splits[size_t(r.seq)] = r.splits;
  EXPECT_EQ(splits, (std::vector<int>{8, 2, 1}));
  EXPECT_EQ(plan.partial_slots, 10);
  EXPECT_NE(plan.description.find("fixed"), std::string::npos);
}

TEST(MlaSm80Traits, RulesRefuseWhatTheKernelCannotTile) {
  namespace t = mla_decode::sm80_mma;
  EXPECT_EQ(t::check(512, 64, 1, 32, 4, 2), t::kOk);
  EXPECT_EQ(t::check(512, 64, 2, 64, 8, 2), t::kOk);
  EXPECT_EQ(t::check(512, 48, 1, 32, 4, 2), t::kRope);
  EXPECT_EQ(t::check(64, 64, 1, 64, 8, 2), t::kRank);          // 8 output columns per warp
  EXPECT_EQ(t::check(512, 64, 1, 32, 8, 2), t::kBlockTokens);  // 4 keys per warp
  EXPECT_EQ(t::check(512, 64, 3, 32, 4, 2), t::kMTiles);
  EXPECT_EQ(t::check(512, 64, 4, 128, 8, 3), t::kSharedMemory);
  EXPECT_EQ(t::check(512, 64, 4, 32, 4, 2), t::kRegisters);  // 64 rows x 128 columns per warp
  // Q K^T by width: 16 or 32 rows; at 8 warps over a 64-wide rope, warps 0 to 3 take one rotary
  // step each besides their 4 latent steps.
  EXPECT_EQ(t::check(512, 64, 1, 32, 4, 2, true), t::kOk);
  EXPECT_EQ(t::check(512, 64, 1, 64, 8, 2, true), t::kOk);
  EXPECT_EQ(t::check(512, 64, 1, 32, 8, 2, true), t::kOk);  // two scores per lane
  EXPECT_EQ(t::latent_steps(512, 8), 4);
  EXPECT_EQ(t::rotary_steps(64, 8, 3), 1);
  EXPECT_EQ(t::rotary_steps(64, 8, 4), 0);
  EXPECT_EQ(t::rotary_steps(128, 4, 1), 2);
  EXPECT_EQ(t::max_slice_steps(512, 64, 8), 5);
  EXPECT_EQ(t::check(512, 64, 4, 64, 8, 2, true), t::kDimsSplit);
  EXPECT_EQ(t::check(512, 64, 2, 32, 4, 2, true), t::kRegisters);
  // 16-key blocks: by width (two scores per lane in the softmax), not by keys (4 keys per warp).
  EXPECT_EQ(t::check(512, 64, 1, 16, 4, 4, true), t::kOk);
  EXPECT_EQ(t::check(512, 64, 1, 16, 4, 2), t::kBlockTokens);
  EXPECT_EQ(t::check(512, 128, 1, 16, 8, 2, true), t::kDimsSplit);  // one score per lane
  EXPECT_EQ(t::check(512, 64, 1, 32, 4, 5, true), t::kStages);
  // By width: the partial scores, and Q in the last stage's bytes.
  EXPECT_EQ(t::shared_bytes(512, 64, 1, 32, 4, 2, true) - t::shared_bytes(512, 64, 1, 32, 4, 2),
            4 * 16 * 40 * 4 - 16 * 1152);
  EXPECT_EQ(t::shared_bytes(512, 64, 1, 32, 4, 2),
            16 * 1152 + 2 * 32 * 1152 + 16 * 40 * 2 + 2 * 4 * 16 * 4 + 16 * 4);
}

}  // namespace
}  // namespace attn
