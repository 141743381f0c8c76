// The host-side kernel inputs the CUDA variants share: log2-domain logit transform, sinks in
// log2, fp8 scales per KV head and the window a kernel must apply.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/launch_inputs.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

Batch small_batch() {
  testing::SpecShape shape;
  shape.q_heads = 4;
  shape.kv_heads = 2;
  return generate_batch(testing::make_decode_spec(shape, {10, 300}));
}

TEST(LaunchInputs, LogitTransformWithAndWithoutSoftCap) {
  Batch batch = small_batch();
  batch.softmax_scale = 0.125f;
  LogitTransform t = log2_logit_transform(batch);
  EXPECT_FLOAT_EQ(t.score_scale, float(0.125 * kLog2e));
  EXPECT_EQ(t.cap_log2, 0.0f);
  batch.logits_soft_cap = 50.0f;
  t = log2_logit_transform(batch);
  EXPECT_FLOAT_EQ(t.score_scale, 0.125f / 50.0f);
  EXPECT_FLOAT_EQ(t.cap_log2, float(50.0 * kLog2e));
  // logit2 = cap_log2 * tanh(score_scale * s) is cap * tanh(scale * s / cap) in log2 units.
  const double s = 37.0;
  EXPECT_NEAR(t.cap_log2 * std::tanh(t.score_scale * s),
              50.0 * std::tanh(0.125 * s / 50.0) * kLog2e, 1e-4);
}

TEST(LaunchInputs, SinksScalesAndWindow) {
  Batch batch = small_batch();
  EXPECT_TRUE(sink_logits_log2(batch).empty());
  batch.sink_logits = {1.0f, -2.0f, 0.0f, 3.5f};
  const std::vector<float> sinks = sink_logits_log2(batch);
  ASSERT_EQ(sinks.size(), 4u);
  EXPECT_FLOAT_EQ(sinks[1], float(-2.0 * kLog2e));

  EXPECT_EQ(scales_per_kv_head({}, 3), (std::vector<float>{1.0f, 1.0f, 1.0f}));
  EXPECT_EQ(scales_per_kv_head({0.5f}, 3), (std::vector<float>{0.5f, 0.5f, 0.5f}));
  EXPECT_EQ(scales_per_kv_head({0.5f, 0.25f, 2.0f}, 3), (std::vector<float>{0.5f, 0.25f, 2.0f}));

  EXPECT_EQ(effective_sliding_window(batch), 0);
  batch.sliding_window = 64;
  EXPECT_EQ(effective_sliding_window(batch), 64);
  batch.sliding_window = batch.max_kv_len();  // hides nothing
  EXPECT_EQ(effective_sliding_window(batch), 0);
}

}  // namespace
}  // namespace attn
