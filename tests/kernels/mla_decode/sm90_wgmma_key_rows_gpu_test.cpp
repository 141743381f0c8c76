// mla_decode.sm90_wgmma_key_rows on the GPU (Hopper): random latent batches (q head counts 1 to
// 128, latent widths the variant takes, pages of whole 8-key multiples from 8 to 256, lengths with
// 0 and 1 keys, 1 to 4 query tokens, causal or not, bf16 or fp16, a 16-bit or (three draws in
// ten) an fp8 e4m3 latent cache) and random accepted configs,
// each verified against the CPU reference (double accumulation) on a NaN-poisoned output by the
// Evaluator before anything is timed, within the output dtype's tolerance; then every split count
// with both tile widths at 16 heads with speculative sequences, over a 16-bit and an fp8 cache.
// Skipped without a Hopper GPU.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "kernels/registry.hpp"
#include "measure/evaluator.hpp"
#include "tests/gpu_case_budget.hpp"
#include "tests/gpu_test_support.hpp"
#include "tests/kernels/mla_decode/latent_batch.hpp"
#include "tests/kernels/mla_decode/latent_gpu_check.hpp"
#include "tests/kernels/mla_decode/random_latent_spec.hpp"
#include "tests/kernels/random_draws.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

using testing::pick;

// A random latent workload the variant takes (16-bit or fp8 caches, rope 64 or 128, pages of a
// multiple of 8 keys), mostly 16 heads or fewer, sized so that the CPU reference stays under a
// second or two of the cores.
nlohmann::json random_key_rows_spec(std::mt19937_64& rng) {
  testing::LatentShape shape;
  shape.q_heads = pick(rng, std::vector<int>{1, 8, 16, 16, 16, 22, 32, 128});
  shape.kv_lora_rank = pick(rng, std::vector<int>{512, 512, 256, 128, 192});
  shape.qk_rope_head_dim = pick(rng, std::vector<int>{64, 64, 128});
  shape.page_size = pick(rng, std::vector<int>{8, 16, 16, 48, 64, 64, 128, 256});
  shape.causal = std::bernoulli_distribution(0.8)(rng);
  shape.allocation = pick(rng, std::vector<std::string>{"shuffled", "sequential", "fragmented"});
  if (std::bernoulli_distribution(0.3)(rng)) shape.kv_dtype = "fp8_e4m3";
  return testing::latent_spec_with_random_lengths(rng, shape, {0, 1, 2, 31, 32, 63, 64, 65});
}

TEST(MlaSm90KeyRowsGpu, RandomBatchesConfigsAndDataMatchTheReference) {
  ATTN_REQUIRE_GPU();
  const Registry registry = make_registry();
  const Variant& variant = *registry.find("mla_decode.sm90_wgmma_key_rows");
  const Target target = Target::cuda(testing::gpu().device());
  if (target.cc_major != 9) GTEST_SKIP() << "mla_decode.sm90_wgmma_key_rows needs an sm_90 GPU";
  testing::expect_random_latent_batches_match(variant, target, random_key_rows_spec);
}

// 16 heads with speculative sequences (2 to 4 query tokens: up to 64 rows, several row tiles),
// every fixed split count (the merge of 2 to 64 partial results, sequences with fewer blocks than
// splits, one block for two warpgroups) and the planner's: 16-row tiles at DeepSeek-V3's widths,
// 32-row tiles at rank 256 (where their registers fit), over a 16-bit and an fp8
// cache (the fp8 scale reaches the partial rows and their merge).
TEST(MlaSm90KeyRowsGpu, EverySplitCountMergesToTheReference) {
  ATTN_REQUIRE_GPU();
  const Registry registry = make_registry();
  const Variant& variant = *registry.find("mla_decode.sm90_wgmma_key_rows");
  const Target target = Target::cuda(testing::gpu().device());
  if (target.cc_major != 9) GTEST_SKIP() << "mla_decode.sm90_wgmma_key_rows needs an sm_90 GPU";
  for (const std::string kv_dtype : {"", "fp8_e4m3"}) {
    for (const int64_t rows : {16, 32}) {
      testing::LatentShape shape;
      shape.q_heads = 16;
      shape.kv_lora_rank = rows == 16 ? 512 : 256;
      shape.qk_rope_head_dim = 64;
      shape.page_size = 64;
      shape.kv_dtype = kv_dtype;
      shape.sequences = {{3000, 1}, {0, 2}, {1, 1}, {700, 3}, {64, 4}, {65, 1}};
      const Batch batch = testing::latent_batch(shape);
      for (const int64_t splits : {0, 1, 2, 4, 8, 16, 32, 64}) {
        KernelConfig config = variant.default_config(batch, target);
        config.set("num_splits", splits);
        config.set("tile_rows", rows);
        const std::string what = (kv_dtype.empty() ? "16-bit " : "fp8 ") + config.key();
        ASSERT_TRUE(variant.check(batch, config, target)) << what;
        const Measurement m = testing::evaluate_latent_once(batch, variant, config);
        EXPECT_EQ(m.disposition, Disposition::passed) << what << ": " << m.reason;
      }
    }
  }
}

}  // namespace
}  // namespace attn
