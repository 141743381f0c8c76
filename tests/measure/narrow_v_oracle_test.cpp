// A batch whose V is narrower than Q and K (model.v_head_dim): the GPU references decline it in
// host code, so the CPU reference verifies it whatever oracle was asked for, and the run's header
// says why.
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

TEST(NarrowVOracle, TheGpuReferencesDeclineIt) {
  const Support narrow = gpu_reference_supports(prefill_batch(128));
  EXPECT_FALSE(narrow.ok);
  EXPECT_EQ(narrow.reason,
            "unsupported: V head dim 128 differs from the Q/K head dim 192 (the GPU references "
            "read V and write the output head_dim wide)");
  EXPECT_TRUE(gpu_reference_supports(prefill_batch(192)).ok);
}

TEST(NarrowVOracle, TheCpuReferenceVerifiesItWhateverWasAsked) {
  const Batch narrow = prefill_batch(128);
  for (ReferenceOracle oracle : {ReferenceOracle::gpu, ReferenceOracle::automatic}) {
    EXPECT_FALSE(use_gpu_reference(narrow, oracle, 0.0)) << to_string(oracle);
    EXPECT_EQ(describe_reference_choice(narrow, oracle, 0.0),
              "--reference " + to_string(oracle) +
                  ", the CPU reference: the GPU reference declines (unsupported: V head dim 128 "
                  "differs from the Q/K head dim 192 (the GPU references read V and write the "
                  "output head_dim wide))");
  }
  EXPECT_TRUE(use_gpu_reference(prefill_batch(192), ReferenceOracle::gpu, 0.0));
}

// Q.K over 192 dims and P.V over 128: the mean width, 160, per visible pair.
TEST(NarrowVOracle, WorkCountsBothWidths) {
  EXPECT_EQ(reference_work(prefill_batch(128)), 5050.0 * 8 * 160);
  EXPECT_EQ(reference_work(prefill_batch(192)), 5050.0 * 8 * 192);
}

}  // namespace
}  // namespace attn
