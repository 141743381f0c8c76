// The rotation of configs over batches of the "every accepted config" GPU tests
// (tests/kernels/every_config_cases.hpp), on real variants and an H100/H200-like target: every
// accepted config runs, on as many distinct batches as asked that accept it, and the batches share
// the configs evenly.
#include "tests/kernels/every_config_cases.hpp"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "kernels/registry.hpp"
#include "tests/target_fixtures.hpp"
#include "tests/test_support.hpp"

namespace attn::testing {
namespace {

Batch prefill(int head_dim, DType dtype, bool causal) {
  SpecShape shape;
  shape.q_heads = 6;
  shape.kv_heads = 2;
  shape.head_dim = head_dim;
  shape.dtype = dtype;
  WorkloadSpec spec = make_spec(shape, {{0, 300}, {45, 1}, {3, 129}});
  spec.mask.causal = causal;
  return generate_batch(spec);
}

// Every accepted (batch, config) pair of the cross product, by config key.
std::map<std::string, std::set<size_t>> accepted_pairs(const Variant& variant,
                                                       const std::vector<Batch>& batches,
                                                       const Target& target) {
  std::map<std::string, std::set<size_t>> out;
  for (const KernelConfig& config : configs_any_accepts(variant, batches, target)) {
    for (size_t b = 0; b < batches.size(); ++b) {
      if (variant.check(batches[b], config, target)) out[config.key()].insert(b);
    }
  }
  return out;
}

void expect_rotation(const Variant& variant, const std::vector<Batch>& batches, size_t per_config,
                     const std::string& what) {
  const Target target = hopper_target();
  const auto accepted = accepted_pairs(variant, batches, target);
  ASSERT_FALSE(accepted.empty()) << what;
  const auto cases = rotated_config_cases(variant, batches, target, per_config);
  std::map<std::string, std::set<size_t>> ran;
  std::vector<size_t> per_batch(batches.size(), 0);
  for (const auto& [b, config] : cases) {
    ASSERT_LT(b, batches.size()) << what;
    EXPECT_TRUE(variant.check(batches[b], config, target)) << what << " " << config.key();
    EXPECT_TRUE(ran[config.key()].insert(b).second) << what << ": " << config.key() << " twice";
    ++per_batch[b];
  }
  EXPECT_EQ(ran.size(), accepted.size()) << what << ": every accepted config runs";
  for (const auto& [key, batches_of] : accepted) {
    EXPECT_EQ(ran[key].size(), std::min(per_config, batches_of.size())) << what << " " << key;
  }
  EXPECT_LT(cases.size(), accepted.size() * batches.size()) << what << ": fewer than all pairs";
  for (size_t b = 0; b < batches.size(); ++b) {
    EXPECT_GE(per_batch[b] * batches.size(), cases.size() / 2) << what << " batch " << b;
  }
}

// flash_fwd.sm90_wgmma's sweep: per head dim, (bf16, causal), (fp16, not), (fp16, causal), (bf16,
// not); two of them per config, so each config runs causal and not.
TEST(EveryConfigCases, EachSm90FlashConfigRunsCausalAndNot) {
  const Registry registry = make_registry();
  const Variant& variant = *registry.find("flash_fwd.sm90_wgmma");
  for (int head_dim : {64, 128, 256}) {
    const std::vector<Batch> batches = {
        prefill(head_dim, DType::bf16, true), prefill(head_dim, DType::fp16, false),
        prefill(head_dim, DType::fp16, true), prefill(head_dim, DType::bf16, false)};
    expect_rotation(variant, batches, 2, "d" + std::to_string(head_dim));
    std::map<std::string, std::set<bool>> causal;
    for (const auto& [b, config] : rotated_config_cases(variant, batches, hopper_target(), 2))
      causal[config.key()].insert(batches[b].causal);
    for (const auto& [key, modes] : causal) EXPECT_EQ(modes.size(), 2u) << key;
  }
}

TEST(EveryConfigCases, OneBatchPerConfigRotatesOverAll) {
  const Registry registry = make_registry();
  const Variant& variant = *registry.find("flash_fwd.sm80_mma");
  const std::vector<Batch> batches = {prefill(128, DType::bf16, true),
                                      prefill(128, DType::fp16, false)};
  expect_rotation(variant, batches, 1, "sm80 d128");
  const auto cases = rotated_config_cases(variant, batches, hopper_target(), 1);
  EXPECT_EQ(cases.size(), configs_any_accepts(variant, batches, hopper_target()).size());
}

// A batch the variant declines (sm80_mma and a GQA group of 32, more than one mma tile of
// heads) passes its configs to the one it accepts; a filter keeps part of the space.
TEST(EveryConfigCases, DeclinedBatchesPassTheirConfigsOnAndFiltersApply) {
  const Registry registry = make_registry();
  const Variant& variant = *registry.find("paged_decode.sm80_mma");
  SpecShape shape;
  shape.head_dim = 128;
  SpecShape wide = shape;
  wide.q_heads = 32;
  wide.kv_heads = 1;
  const std::vector<Batch> batches = {generate_batch(make_decode_spec(shape, {1, 100, 1100})),
                                      generate_batch(make_decode_spec(wide, {1, 100, 1100}))};
  const Target target = hopper_target();
  const ConfigFilter no_splits = [](const KernelConfig& c) { return c.get("num_splits") == 0; };
  const auto cases = rotated_config_cases(variant, batches, target, 1, no_splits);
  ASSERT_FALSE(cases.empty());
  for (const auto& [b, config] : cases) {
    EXPECT_EQ(b, 0u) << config.key();
    EXPECT_EQ(config.get("num_splits"), 0) << config.key();
  }
  EXPECT_EQ(cases.size(), configs_any_accepts(variant, batches, target, no_splits).size());
  EXPECT_LT(cases.size(), configs_any_accepts(variant, batches, target).size());
}

}  // namespace
}  // namespace attn::testing
