// The random latent workloads of the mla_decode GPU tests (random_latent_spec.hpp) are valid
// workloads that mla_decode.sm80_mma takes with its default config on an H100-like target, small
// enough for the CPU reference: checked here, so a GPU run never spends its time on a bad draw.
#include <gtest/gtest.h>

#include "kernels/registry.hpp"
#include "kernels/target_description.hpp"
#include "tests/kernels/mla_decode/random_latent_spec.hpp"
#include "workloads/workload_spec.hpp"

namespace attn {
namespace {

TEST(RandomLatentSpec, DrawsValidWorkloadsTheMmaVariantTakes) {
  const Registry registry = make_registry();
  const Variant& variant = *registry.find("mla_decode.sm80_mma");
  const Target target = described_cuda_target(TargetDescription{});
  std::mt19937_64 rng(20261129);
  int fp8 = 0;
  for (int i = 0; i < 300; ++i) {
    const nlohmann::json spec = testing::random_latent_spec(rng);
    SCOPED_TRACE(spec.dump());
    const Batch batch = generate_batch(parse_workload(spec.dump(), "latent"));
    fp8 += batch.kv_dtype == DType::fp8_e4m3;
    const KernelConfig config = variant.default_config(batch, target);
    const Support support = variant.check(batch, config, target);
    EXPECT_TRUE(support.ok) << support.reason;
    double work = 0;  // (query, q head, visible key) triples x latent width
    const double width = batch.spec.model.kv_lora_rank + batch.spec.model.qk_rope_head_dim;
    for (int s = 0; s < batch.num_seqs; ++s) {
      work += double(batch.query_lens[size_t(s)]) * batch.kv_lens[size_t(s)] *
              batch.spec.model.num_q_heads * width;
    }
    EXPECT_LT(work, 1.3e8);
  }
  EXPECT_GT(fp8, 50) << "fp8 latent caches are drawn";
  EXPECT_LT(fp8, 150);
}

}  // namespace
}  // namespace attn
