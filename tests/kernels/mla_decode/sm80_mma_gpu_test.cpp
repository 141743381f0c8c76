// mla_decode.sm80_mma on the GPU: random latent batches (q head counts 1 to 128, latent widths,
// page sizes 1 to 256, lengths with 0 and 1 keys, 1 to 4 query tokens, causal or not, bf16 or
// fp16, a 16-bit or an fp8 e4m3 latent cache) and random valid configs, each verified against the
// CPU reference (double accumulation) on a NaN-poisoned output by the Evaluator before anything is
// timed, within the output dtype's tolerance as every family's fp8 K/V is; then the split merge
// on its own, with every fixed split count on one batch, over a 16-bit and an fp8 cache.
#include <gtest/gtest.h>

#include <random>
#include <sstream>

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

TEST(MlaSm80MmaGpu, RandomBatchesConfigsAndDataMatchTheReference) {
  ATTN_REQUIRE_GPU();
  const Registry registry = make_registry();
  const Variant& variant = *registry.find("mla_decode.sm80_mma");
  const Target target = Target::cuda(testing::gpu().device());
  testing::expect_random_latent_batches_match(
      variant, target, [](std::mt19937_64& rng) { return testing::random_latent_spec(rng); });
}

// DeepSeek-V3's widths with 16 heads and speculative decode: every fixed split count (the merge
// of 2 to 64 partial results, sequences with fewer blocks than splits) and the planner's, with
// Q K^T split by keys and by width, over a bf16 and an fp8 latent cache (the fp8 scale reaches the
// partial rows and their merge).
TEST(MlaSm80MmaGpu, EverySplitCountMergesToTheReference) {
  ATTN_REQUIRE_GPU();
  const Registry registry = make_registry();
  const Variant& variant = *registry.find("mla_decode.sm80_mma");
  const Target target = Target::cuda(testing::gpu().device());
  for (const std::string kv_dtype : {"", "fp8_e4m3"}) {
    testing::LatentShape shape;
    shape.q_heads = 16;
    shape.kv_lora_rank = 512;
    shape.qk_rope_head_dim = 64;
    shape.page_size = 64;
    shape.kv_dtype = kv_dtype;
    shape.sequences = {{3000, 1}, {0, 2}, {1, 1}, {700, 3}, {64, 4}};
    const Batch batch =
        generate_batch(parse_workload(testing::latent_workload_json(shape).dump(), "latent"));
    for (const int64_t splits : {0, 1, 2, 4, 8, 16, 32, 64}) {
      for (const int64_t by_dims : {0, 1}) {
        KernelConfig config = variant.default_config(batch, target);
        config.set("num_splits", splits);
        config.set("qk_by_dims", by_dims);
        if (by_dims) config.set("m_tiles", 1);
        const std::string what = (kv_dtype.empty() ? "bf16 " : "fp8 ") + config.key();
        ASSERT_TRUE(variant.check(batch, config, target)) << what;
        const Measurement m = testing::evaluate_latent_once(batch, variant, config);
        EXPECT_EQ(m.disposition, Disposition::passed) << what << ": " << m.reason;
      }
    }
  }
}

// Every config the variant accepts for an fp8 latent cache on this GPU, each on the same batch
// (16 heads, speculative decode, DeepSeek-V3's widths).
TEST(MlaSm80MmaGpu, EveryAcceptedFp8ConfigMatchesTheReference) {
  ATTN_REQUIRE_GPU();
  const Registry registry = make_registry();
  const Variant& variant = *registry.find("mla_decode.sm80_mma");
  const Target target = Target::cuda(testing::gpu().device());
  testing::LatentShape shape;
  shape.q_heads = 16;
  shape.kv_lora_rank = 512;
  shape.qk_rope_head_dim = 64;
  shape.page_size = 16;
  shape.kv_dtype = "fp8_e4m3";
  shape.sequences = {{1500, 1}, {0, 1}, {200, 4}, {33, 2}};
  const Batch batch = testing::latent_batch(shape);
  int accepted = 0;
  const std::vector<KernelConfig> configs =
      testing::space_configs(variant, batch, target, {{"num_splits", 0}});
  for (const KernelConfig& config : configs) {
    if (!variant.check(batch, config, target)) continue;
    ++accepted;
    const Measurement m = testing::evaluate_latent_once(batch, variant, config);
    EXPECT_EQ(m.disposition, Disposition::passed) << config.key() << ": " << m.reason;
  }
  EXPECT_GE(accepted, 10);
}

}  // namespace
}  // namespace attn
