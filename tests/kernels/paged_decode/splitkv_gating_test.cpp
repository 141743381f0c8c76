// paged_decode.splitkv declines every batch feature its kernel does not implement, with a reason
// naming the feature, so that no GPU run silently computes plain attention instead; the CPU
// reference accepts them all.
#include <gtest/gtest.h>

#include <functional>

#include "kernels/device/device_info.hpp"
#include "kernels/registry.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

struct Feature {
  std::string name;
  std::string reason_mentions;
  std::function<void(Batch&)> apply;
};

TEST(SplitKvGating, UnimplementedFeaturesAreUnsupportedWithAReason) {
  testing::SpecShape shape;
  shape.q_heads = 8;
  shape.kv_heads = 2;
  shape.head_dim = 128;
  const Batch plain = generate_batch(testing::make_decode_spec(shape, {5, 40, 300}));
  DeviceInfo device;
  device.cc_major = 9;
  device.sm_count = 132;
  const Target gpu = Target::cuda(device);
  const Registry registry = make_registry();
  const Variant& splitkv = *registry.find("paged_decode.splitkv");
  const Variant& cpu = *registry.find("paged_decode.cpu_reference");
  const KernelConfig config = splitkv.default_config(plain, gpu);
  ASSERT_TRUE(splitkv.supports(plain, config, gpu)) << splitkv.supports(plain, config, gpu).reason;

  const std::vector<Feature> features = {
      {"fp8 KV", "fp8_e4m3",
       [](Batch& b) {
         b.kv_dtype = DType::fp8_e4m3;
         b.k_scales = {0.01f};
         b.v_scales = {0.02f};
       }},
      {"vllm layout", "vllm", [](Batch& b) { b.spec.kv_cache.layout = KvLayout::vllm; }},
      {"soft-cap", "soft-cap", [](Batch& b) { b.logits_soft_cap = 30.0f; }},
      {"sliding window", "sliding window", [](Batch& b) { b.sliding_window = 16; }},
      {"sinks", "sinks", [](Batch& b) { b.sink_logits.assign(8, 1.0f); }},
      {"block-sparse", "block-sparse", [](Batch& b) { b.block_sparse = BlockSparseLayout{}; }},
      {"explicit mask", "explicit", [](Batch& b) { b.explicit_mask = ExplicitMask{}; }},
  };
  for (const Feature& feature : features) {
    Batch batch = plain;
    feature.apply(batch);
    const Support s = splitkv.supports(batch, config, gpu);
    EXPECT_FALSE(s.ok) << feature.name << " was accepted";
    EXPECT_NE(s.reason.find(feature.reason_mentions), std::string::npos)
        << feature.name << ": " << s.reason;
    const Support reference = cpu.supports(batch, {}, Target::cpu());
    EXPECT_TRUE(reference.ok) << feature.name << ": " << reference.reason;
  }
}

// One decode token is the last position of its sequence, so causal and non-causal attention are
// the same computation and splitkv runs both.
TEST(SplitKvGating, NonCausalDecodeIsSupported) {
  testing::SpecShape shape;
  Batch batch = generate_batch(testing::make_decode_spec(shape, {7, 70}));
  batch.causal = false;
  DeviceInfo device;
  device.cc_major = 8;
  device.sm_count = 108;
  const Target gpu = Target::cuda(device);
  const Registry registry = make_registry();
  const Variant& splitkv = *registry.find("paged_decode.splitkv");
  EXPECT_TRUE(splitkv.supports(batch, splitkv.default_config(batch, gpu), gpu).ok);
}

}  // namespace
}  // namespace attn
