// A batch whose V is narrower than Q and K (model.v_head_dim): the GPU references compute it
// (Q and K rows 192 wide, V and the output 128), so the oracle asked for verifies it; multi-head
// latent attention has its own test (latent_reference_choice_test.cpp).
#include <gtest/gtest.h>

#include "kernels/reference/gpu_reference.hpp"
#include "measure/reference_oracle.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

Batch prefill_batch(int v_head_dim) {
  testing::SpecShape shape;  // 8 q heads
  shape.head_dim = 192;
  WorkloadSpec spec = testing::make_spec(shape, {{0, 100}});
  if (v_head_dim != 192) spec.model.v_head_dim = v_head_dim;
  return generate_batch(spec);
}

TEST(NarrowVOracle, TheGpuReferencesComputeIt) {
  EXPECT_TRUE(gpu_reference_supports(prefill_batch(128)).ok);
  EXPECT_TRUE(gpu_reference_supports(prefill_batch(192)).ok);
}

TEST(NarrowVOracle, TheGpuReferenceVerifiesItWhenAsked) {
  for (int v_head_dim : {128, 192}) {
    EXPECT_TRUE(use_gpu_reference(prefill_batch(v_head_dim), ReferenceOracle::gpu, 0.0))
        << v_head_dim;
    EXPECT_FALSE(use_gpu_reference(prefill_batch(v_head_dim), ReferenceOracle::cpu, 0.0))
        << v_head_dim;
  }
  EXPECT_EQ(describe_reference_choice(prefill_batch(128), ReferenceOracle::gpu, 0.0),
            "--reference gpu");
}

// Q.K over 192 dims and P.V over 128: the mean width, 160, per visible pair.
TEST(NarrowVOracle, WorkCountsBothWidths) {
  EXPECT_EQ(reference_work(prefill_batch(128)), 5050.0 * 8 * 160);
  EXPECT_EQ(reference_work(prefill_batch(192)), 5050.0 * 8 * 192);
}

}  // namespace
}  // namespace attn
