#include "kernels/registry.hpp"

#include <gtest/gtest.h>

#include "kernels/device/device_info.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

TEST(Glob, MatchesLikeAShell) {
  EXPECT_TRUE(glob_match("paged_decode.*", "paged_decode.sm80_simt"));
  EXPECT_TRUE(glob_match("*sm80_simt", "paged_decode.sm80_simt"));
  EXPECT_TRUE(glob_match("paged_?ecode.s*t", "paged_decode.sm80_simt"));
  EXPECT_TRUE(glob_match("*", ""));
  EXPECT_FALSE(glob_match("flash_fwd.*", "paged_decode.sm80_simt"));
  EXPECT_FALSE(glob_match("paged_decode", "paged_decode.sm80_simt"));
  EXPECT_TRUE(glob_match("*a*b*c", "xxaxxbxxc"));
  EXPECT_FALSE(glob_match("*a*b*c", "xxaxxcxxb"));
}

TEST(Registry, HoldsThePagedDecodeVariants) {
  const Registry registry = make_registry();
  ASSERT_NE(registry.find("paged_decode.sm80_simt"), nullptr);
  ASSERT_NE(registry.find("paged_decode.sm80_mma"), nullptr);
  ASSERT_NE(registry.find("paged_decode.sm90_tma"), nullptr);
  ASSERT_NE(registry.find("paged_decode.cpu_reference"), nullptr);
  EXPECT_EQ(registry.find("paged_decode.sm80_simt")->backend(), Backend::cuda);
  EXPECT_EQ(registry.find("paged_decode.sm80_mma")->backend(), Backend::cuda);
  EXPECT_EQ(registry.find("paged_decode.sm90_tma")->backend(), Backend::cuda);
  EXPECT_EQ(registry.find("paged_decode.cpu_reference")->backend(), Backend::cpu);
  EXPECT_EQ(registry.matching("paged_decode.*").size(), 4u);
  EXPECT_EQ(registry.matching("*cpu*").size(), 5u);  // one per family
  // sm80_mma, sm90_wgmma, sm90_wgmma_key_rows and the CPU reference
  EXPECT_EQ(registry.matching("mla_decode.*").size(), 4u);
  // mma, sm90_wgmma, decode, cpu_reference
  EXPECT_EQ(registry.matching("blocksparse.*").size(), 4u);
  EXPECT_TRUE(registry.matching("nothing.*").empty());
  for (const auto& v : registry.variants()) {
    EXPECT_EQ(v->name().rfind(to_string(v->family()) + ".", 0), 0u) << v->name();
  }
}

TEST(Registry, HoldsThePrefixPrefillVariants) {
  const Registry registry = make_registry();
  ASSERT_NE(registry.find("prefix_prefill.sm80_mma"), nullptr);
  ASSERT_NE(registry.find("prefix_prefill.sm80_mma_masked"), nullptr);
  ASSERT_NE(registry.find("prefix_prefill.sm90_wgmma"), nullptr);
  ASSERT_NE(registry.find("prefix_prefill.cpu_reference"), nullptr);
  EXPECT_EQ(registry.find("prefix_prefill.sm80_mma")->backend(), Backend::cuda);
  EXPECT_EQ(registry.find("prefix_prefill.sm80_mma_masked")->backend(), Backend::cuda);
  EXPECT_EQ(registry.find("prefix_prefill.sm90_wgmma")->backend(), Backend::cuda);
  EXPECT_EQ(registry.find("prefix_prefill.cpu_reference")->backend(), Backend::cpu);
  EXPECT_EQ(registry.matching("prefix_prefill.*").size(), 4u);
  // The CPU oracle runs prefill batches; decode-only ones are paged_decode.cpu_reference's.
  testing::SpecShape shape;
  const Variant* cpu = registry.find("prefix_prefill.cpu_reference");
  const Batch prefill = generate_batch(testing::make_spec(shape, {{10, 4}, {0, 1}}));
  EXPECT_TRUE(cpu->check(prefill, {}, Target::cpu()).ok);
  const Batch decode = generate_batch(testing::make_decode_spec(shape, {10}));
  const Support s = cpu->check(decode, {}, Target::cpu());
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.reason.find("paged_decode.cpu_reference"), std::string::npos) << s.reason;
}

TEST(Registry, DefaultConfigsAreSupportedWhereTheBatchIs) {
  const Registry registry = make_registry();
  const Variant* sm80_simt = registry.find("paged_decode.sm80_simt");
  DeviceInfo hopper;
  hopper.cc_major = 9;
  hopper.sm_count = 132;
  const Target target = Target::cuda(hopper);
  EXPECT_EQ(target.arch, "sm_90a");
  for (int head_dim : {64, 128, 256}) {
    for (int group : {1, 3, 4, 7, 8, 16}) {
      testing::SpecShape shape;
      shape.head_dim = head_dim;
      shape.kv_heads = 2;
      shape.q_heads = 2 * group;
      const Batch batch = generate_batch(testing::make_decode_spec(shape, {5, 100}));
      const KernelConfig config = sm80_simt->default_config(batch, target);
      const Support s = sm80_simt->check(batch, config, target);
      EXPECT_TRUE(s.ok) << "d" << head_dim << " g" << group << ": " << s.reason;
    }
  }
}

TEST(Registry, Sm80SimtDeclinesWithReasons) {
  const Registry registry = make_registry();
  const Variant* sm80_simt = registry.find("paged_decode.sm80_simt");
  DeviceInfo ampere;
  ampere.cc_major = 8;
  const Target gpu = Target::cuda(ampere);
  testing::SpecShape shape;
  const Batch decode = generate_batch(testing::make_decode_spec(shape, {10}));
  const KernelConfig config = sm80_simt->default_config(decode, gpu);

  EXPECT_FALSE(sm80_simt->check(decode, config, Target::cpu()).ok);
  const Batch prefill = generate_batch(testing::make_spec(shape, {{10, 4}}));
  Support s = sm80_simt->check(prefill, config, gpu);
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.reason.find("one query token"), std::string::npos) << s.reason;

  // Head dim 96 runs (a padded lane group); one the family does not declare is declined by name.
  shape.head_dim = 96;
  Batch d96 = generate_batch(testing::make_decode_spec(shape, {10}));
  s = sm80_simt->check(d96, sm80_simt->default_config(d96, gpu), gpu);
  EXPECT_TRUE(s.ok) << s.reason;
  d96.spec.model.head_dim = 72;
  s = sm80_simt->check(d96, config, gpu);
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.reason.find("head dim 72"), std::string::npos) << s.reason;

  KernelConfig odd_tile = config;
  odd_tile.set("tile_tokens", 24);
  s = sm80_simt->check(decode, odd_tile, gpu);
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.reason.find("tile_tokens"), std::string::npos) << s.reason;

  KernelConfig greedy = config;
  greedy.set("heads_per_cta", 8).set("tile_tokens", 256).set("warps", 1);
  s = sm80_simt->check(decode, greedy, gpu);
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.reason.find("registers"), std::string::npos) << s.reason;
}

}  // namespace
}  // namespace attn
