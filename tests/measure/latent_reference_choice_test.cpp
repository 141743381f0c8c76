// The oracle for a multi-head latent attention batch: the naive GPU reference computes latent rows
// (the tiled one declines them), so `auto` sends a large latent batch to the GPU on the same work
// threshold as standard attention and keeps small ones on the CPU reference; `cpu` and `gpu` force
// their oracle.
#include <gtest/gtest.h>

#include "kernels/reference/gpu_reference.hpp"
#include "kernels/reference/gpu_tiled_reference.hpp"
#include "measure/reference_oracle.hpp"
#include "tests/kernels/mla_decode/latent_batch.hpp"

namespace attn {
namespace {

// DeepSeek-V3's latent row (512 + 64) under `q_heads` heads, `seqs` decode sequences of `keys`
// keys each.
Batch deepseek_decode(int q_heads, int seqs, int64_t keys, const std::string& kv_dtype = "") {
  testing::LatentShape shape;
  shape.q_heads = q_heads;
  shape.kv_lora_rank = 512;
  shape.qk_rope_head_dim = 64;
  shape.page_size = 64;
  shape.kv_dtype = kv_dtype;
  shape.sequences.assign(size_t(seqs), {keys - 1, 1});
  return testing::latent_batch(shape);
}

TEST(LatentReferenceChoice, WorkIsVisiblePairsTimesTheMeanOfTheLatentAndRankWidths) {
  const Batch batch = deepseek_decode(16, 2, 100);
  EXPECT_EQ(reference_work(batch), 2.0 * 100 * 16 * (576 + 512) / 2);
}

TEST(LatentReferenceChoice, AutoSendsLargeLatentBatchesToTheNaiveGpuReference) {
  for (const std::string kv_dtype : {"", "fp8_e4m3"}) {
    const Batch large = deepseek_decode(128, 64, 4096, kv_dtype);  // 1.8e10
    ASSERT_GE(reference_work(large), kDefaultGpuReferenceMinWork);
    EXPECT_TRUE(gpu_reference_supports(large).ok) << gpu_reference_supports(large).reason;
    EXPECT_TRUE(use_gpu_reference(large, ReferenceOracle::automatic, kDefaultGpuReferenceMinWork))
        << kv_dtype;
    EXPECT_EQ(std::string(gpu_reference_name_for(large)), kGpuReferenceName);
    EXPECT_EQ(
        describe_reference_choice(large, ReferenceOracle::automatic, kDefaultGpuReferenceMinWork),
        "auto: visible pairs x head_dim 1.8e+10 >= 3.2e+09");
    EXPECT_FALSE(use_gpu_reference(large, ReferenceOracle::cpu, kDefaultGpuReferenceMinWork));
  }
}

TEST(LatentReferenceChoice, AutoKeepsSmallLatentBatchesOnTheCpuReferenceAndGpuForcesIt) {
  const Batch small = deepseek_decode(16, 4, 1000);  // 3.5e7
  ASSERT_LT(reference_work(small), kDefaultGpuReferenceMinWork);
  EXPECT_FALSE(use_gpu_reference(small, ReferenceOracle::automatic, kDefaultGpuReferenceMinWork));
  EXPECT_TRUE(use_gpu_reference(small, ReferenceOracle::gpu, kDefaultGpuReferenceMinWork));
  EXPECT_EQ(describe_reference_choice(small, ReferenceOracle::gpu, 0), "--reference gpu");
}

// Standard attention keeps the tiled GPU reference; only latent batches take the naive one.
TEST(LatentReferenceChoice, TheTiledReferenceDeclinesLatentRowsAndKeepsStandardAttention) {
  const Support tiled = gpu_tiled_reference_supports(deepseek_decode(16, 1, 10));
  EXPECT_FALSE(tiled.ok);
  EXPECT_NE(tiled.reason.find("multi-head latent attention"), std::string::npos) << tiled.reason;
  EXPECT_NE(tiled.reason.find("naive GPU reference"), std::string::npos) << tiled.reason;
  testing::LatentShape shape;  // the tests' small latent shape: 64 + 16
  EXPECT_EQ(std::string(gpu_reference_name_for(testing::latent_batch(shape))), kGpuReferenceName);
}

}  // namespace
}  // namespace attn
