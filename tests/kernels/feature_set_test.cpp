// FeatureSet and check_features (kernels/feature_set.hpp): an allow-list. Nothing declared means
// nothing implemented, every feature a batch uses and the set lacks is named in one message, and
// a feature the set never heard of is declined.
#include "kernels/feature_set.hpp"

#include <gtest/gtest.h>

namespace attn {
namespace {

BatchFeatures uses(std::vector<FeatureUse> list) {
  BatchFeatures features;
  features.uses = std::move(list);
  return features;
}

TEST(FeatureSet, AnEmptySetImplementsNothing) {
  const FeatureSet none;
  EXPECT_FALSE(none.implements(FeatureUse::flag(feature::kSlidingWindow, "sliding window")));
  EXPECT_FALSE(none.implements(FeatureUse::choice(feature::kKvLayout, "nhd", "the NHD KV layout")));
  EXPECT_FALSE(none.implements(FeatureUse::integer(feature::kHeadDim, 128, "head dim 128")));
  EXPECT_TRUE(bool(check_features(none, BatchFeatures{})));
}

TEST(FeatureSet, FlagsChoicesAndNumbersMatchWhatIsDeclared) {
  const FeatureSet set = FeatureSet()
                             .with(feature::kSlidingWindow)
                             .with(feature::kKvLayout, {"nhd", "hnd"})
                             .with(feature::kHeadDim, {64, 128})
                             .with_range(feature::kPageSize, 1, 16);
  EXPECT_TRUE(set.implements(FeatureUse::flag(feature::kSlidingWindow, "")));
  EXPECT_FALSE(set.implements(FeatureUse::flag(feature::kLogitsSoftCap, "")));
  EXPECT_TRUE(set.implements(FeatureUse::choice(feature::kKvLayout, "hnd", "")));
  EXPECT_FALSE(set.implements(FeatureUse::choice(feature::kKvLayout, "vllm", "")));
  EXPECT_TRUE(set.implements(FeatureUse::integer(feature::kHeadDim, 64, "")));
  EXPECT_FALSE(set.implements(FeatureUse::integer(feature::kHeadDim, 96, "")));
  EXPECT_TRUE(set.implements(FeatureUse::integer(feature::kPageSize, 1, "")));
  EXPECT_TRUE(set.implements(FeatureUse::integer(feature::kPageSize, 16, "")));
  EXPECT_FALSE(set.implements(FeatureUse::integer(feature::kPageSize, 17, "")));
  // A flag declared is not a choice's value, nor the other way round.
  EXPECT_FALSE(set.implements(FeatureUse::choice(feature::kSlidingWindow, "on", "")));
  EXPECT_FALSE(set.implements(FeatureUse::flag(feature::kKvLayout, "")));
}

TEST(FeatureSet, WithoutDropsAFeatureOrOneValue) {
  FeatureSet set =
      FeatureSet().with(feature::kSlidingWindow).with(feature::kKvLayout, {"nhd", "hnd"});
  set.without(feature::kSlidingWindow).without(feature::kKvLayout, "hnd");
  EXPECT_FALSE(set.implements(FeatureUse::flag(feature::kSlidingWindow, "")));
  EXPECT_TRUE(set.implements(FeatureUse::choice(feature::kKvLayout, "nhd", "")));
  EXPECT_FALSE(set.implements(FeatureUse::choice(feature::kKvLayout, "hnd", "")));
  set.without(feature::kKvLayout, "nhd");
  EXPECT_FALSE(set.has(feature::kKvLayout));
  // with() on a choice replaces its values.
  set.with(feature::kKvLayout, {"vllm"}).with(feature::kKvLayout, {"hnd"});
  EXPECT_FALSE(set.implements(FeatureUse::choice(feature::kKvLayout, "vllm", "")));
  EXPECT_TRUE(set.implements(FeatureUse::choice(feature::kKvLayout, "hnd", "")));
}

TEST(CheckFeatures, NamesEveryMissingFeatureInOneMessage) {
  const FeatureSet set =
      FeatureSet().with(feature::kKvLayout, {"nhd"}).with(feature::kHeadDim, {128});
  const Support s =
      check_features(set, uses({FeatureUse::choice(feature::kKvLayout, "nhd", "the NHD KV layout"),
                                FeatureUse::flag(feature::kSlidingWindow, "sliding window"),
                                FeatureUse::integer(feature::kHeadDim, 128, "head dim 128"),
                                FeatureUse::choice(feature::kKvDtype, "fp8_e4m3.per_head",
                                                   "fp8 KV cache (per-head scales)")}));
  EXPECT_FALSE(s.ok);
  EXPECT_EQ(s.reason, "does not implement: sliding window, fp8 KV cache (per-head scales)");
}

TEST(CheckFeatures, AFeatureNoSetKnowsIsDeclined) {
  const FeatureSet set = FeatureSet().with(feature::kSlidingWindow);
  const Support s = check_features(
      set, uses({FeatureUse::flag(feature::kSlidingWindow, "sliding window"),
                 FeatureUse::flag("a_field_added_tomorrow", "a field added tomorrow")}));
  EXPECT_FALSE(s.ok);
  EXPECT_EQ(s.reason, "does not implement: a field added tomorrow");
}

TEST(CheckFeatures, NotesSayWhereTheBatchRunsInsteadOnce) {
  const FeatureSet set = FeatureSet()
                             .with(feature::kKvLayout, {"nhd"})
                             .note(feature::kKvLayout, "another variant reads other layouts")
                             .note(feature::kMask, "explicit", "a masked variant reads them")
                             .with(feature::kMask, {"causal"});
  const Support s = check_features(
      set, uses({FeatureUse::choice(feature::kKvLayout, "vllm", "the vllm KV layout"),
                 FeatureUse::choice(feature::kMask, "explicit", "explicit masks")}));
  EXPECT_EQ(s.reason,
            "does not implement: the vllm KV layout, explicit masks (another variant reads other "
            "layouts; a masked variant reads them)");
  // A note for one value says nothing of another.
  const Support sparse = check_features(
      set, uses({FeatureUse::choice(feature::kMask, "block_sparse", "block-sparse masks")}));
  EXPECT_EQ(sparse.reason, "does not implement: block-sparse masks");
  // Notes of implemented features never show.
  EXPECT_TRUE(bool(check_features(
      set, uses({FeatureUse::choice(feature::kKvLayout, "nhd", "the NHD KV layout")}))));
}

TEST(FeatureSet, EntriesListWhatIsDeclared) {
  const FeatureSet set = FeatureSet()
                             .with(feature::kSlidingWindow)
                             .with(feature::kKvLayout, {"nhd", "hnd"})
                             .with(feature::kHeadDim, {64})
                             .with_range(feature::kPageSize, 1, 256);
  const std::vector<std::pair<std::string, std::string>> want = {
      {feature::kHeadDim, "64"},      {feature::kKvLayout, "nhd"},   {feature::kKvLayout, "hnd"},
      {feature::kPageSize, "1..256"}, {feature::kSlidingWindow, ""},
  };
  EXPECT_EQ(set.entries(), want);
}

}  // namespace
}  // namespace attn
