// mla_decode.sm90_wgmma on the GPU (Hopper): random latent batches (q head counts 1 to 128,
// latent widths the variant takes, page sizes of whole 8-key multiples from 8 to 256, lengths with
// 0 and 1 keys, 1 to 4 query tokens, causal or not, bf16 or fp16) and random accepted configs,
// each verified against the CPU reference (double accumulation) on a NaN-poisoned output by the
// Evaluator before anything is timed, within the output dtype's tolerance; then every split count
// on one batch, and every accepted config at 16 and 128 q heads (the default at 64). Skipped
// without a GPU, and without a Hopper GPU (the variant declines other targets).
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "kernels/registry.hpp"
#include "measure/evaluator.hpp"
#include "tests/gpu_case_budget.hpp"
#include "tests/gpu_test_support.hpp"
#include "tests/kernels/every_config_cases.hpp"
#include "tests/kernels/mla_decode/latent_batch.hpp"
#include "tests/kernels/mla_decode/latent_gpu_check.hpp"
#include "tests/kernels/mla_decode/random_latent_spec.hpp"
#include "tests/kernels/paged_decode/random_decode_batch.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

using testing::pick;

// A random latent workload the variant takes (16-bit caches, rope 64 or 128, pages of a multiple
// of 8 keys), sized so that the CPU reference stays under a second or two of the cores.
nlohmann::json random_sm90_latent_spec(std::mt19937_64& rng) {
  testing::LatentShape shape;
  shape.q_heads = pick(rng, std::vector<int>{1, 8, 16, 16, 22, 64, 128});
  shape.kv_lora_rank = pick(rng, std::vector<int>{512, 512, 256, 128});
  shape.qk_rope_head_dim = pick(rng, std::vector<int>{64, 64, 128});
  shape.page_size = pick(rng, std::vector<int>{8, 16, 16, 48, 64, 64, 128, 256});
  shape.causal = std::bernoulli_distribution(0.8)(rng);
  shape.allocation = pick(rng, std::vector<std::string>{"shuffled", "sequential", "fragmented"});
  return testing::latent_spec_with_random_lengths(rng, shape, {0, 1, 2, 31, 32, 63, 64, 65});
}

TEST(MlaSm90WgmmaGpu, RandomBatchesConfigsAndDataMatchTheReference) {
  ATTN_REQUIRE_GPU();
  const Registry registry = make_registry();
  const Variant& variant = *registry.find("mla_decode.sm90_wgmma");
  const Target target = Target::cuda(testing::gpu().device());
  if (target.cc_major != 9) GTEST_SKIP() << "mla_decode.sm90_wgmma needs an sm_90 GPU";
  testing::expect_random_latent_batches_match(variant, target, random_sm90_latent_spec);
}

// DeepSeek-V3's widths with 16 heads and speculative decode: every fixed split count (the merge
// of 2 to 64 partial results, sequences with fewer blocks than splits) and the planner's, with
// 32- and 64-key blocks, Q K^T whole in each warpgroup or split between them.
TEST(MlaSm90WgmmaGpu, EverySplitCountMergesToTheReference) {
  ATTN_REQUIRE_GPU();
  const Registry registry = make_registry();
  const Variant& variant = *registry.find("mla_decode.sm90_wgmma");
  const Target target = Target::cuda(testing::gpu().device());
  if (target.cc_major != 9) GTEST_SKIP() << "mla_decode.sm90_wgmma needs an sm_90 GPU";
  testing::LatentShape shape;
  shape.q_heads = 16;
  shape.kv_lora_rank = 512;
  shape.qk_rope_head_dim = 64;
  shape.page_size = 64;
  shape.sequences = {{3000, 1}, {0, 2}, {1, 1}, {700, 3}, {64, 4}};
  const Batch batch = testing::latent_batch(shape);
  for (const int64_t qk_split : {1, 0}) {
    for (const int64_t block : {64, 32}) {
      // Every count with the default qk_split; with the other, the planner's and the extremes.
      for (const int64_t splits : qk_split == 1 ? std::vector<int64_t>{0, 1, 2, 4, 8, 16, 32, 64}
                                                : std::vector<int64_t>{0, 1, 2, 64}) {
        KernelConfig config = variant.default_config(batch, target);
        config.set("num_splits", splits);
        config.set("block_tokens", block);
        config.set("qk_split", qk_split);
        ASSERT_TRUE(variant.check(batch, config, target)) << config.key();
        const Measurement m = testing::evaluate_latent_once(batch, variant, config);
        EXPECT_EQ(m.disposition, Disposition::passed) << config.key() << ": " << m.reason;
      }
    }
  }
}

// Every config the variant accepts on this GPU at DeepSeek-V3's widths, with 16 and 128 q heads
// (one and two row tiles per query token; 64 heads with the default config), pages of 16 keys
// (four boxes per 64-key block) and speculative decode.
TEST(MlaSm90WgmmaGpu, EveryAcceptedConfigMatchesTheReference) {
  ATTN_REQUIRE_GPU();
  const Registry registry = make_registry();
  const Variant& variant = *registry.find("mla_decode.sm90_wgmma");
  const Target target = Target::cuda(testing::gpu().device());
  if (target.cc_major != 9) GTEST_SKIP() << "mla_decode.sm90_wgmma needs an sm_90 GPU";
  for (const int heads : {16, 64, 128}) {
    testing::LatentShape shape;
    shape.q_heads = heads;
    shape.kv_lora_rank = 512;
    shape.qk_rope_head_dim = 64;
    shape.page_size = 16;
    shape.sequences = {{heads == 128 ? 500 : 1500, 1}, {0, 1}, {200, 4}, {33, 2}};
    const Batch batch = testing::latent_batch(shape);
    int accepted = 0;
    std::vector<KernelConfig> configs = {variant.default_config(batch, target)};
    if (heads != 64) configs = testing::space_configs(variant, batch, target, {{"num_splits", 0}});
    for (const KernelConfig& config : configs) {
      if (!variant.check(batch, config, target)) continue;
      ++accepted;
      const Measurement m = testing::evaluate_latent_once(batch, variant, config);
      EXPECT_EQ(m.disposition, Disposition::passed)
          << heads << " heads " << config.key() << ": " << m.reason;
    }
    EXPECT_GE(accepted, heads == 64 ? 1 : 8) << heads;
  }
}

}  // namespace
}  // namespace attn
