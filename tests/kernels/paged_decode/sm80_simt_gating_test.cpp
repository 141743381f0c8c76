// paged_decode.sm80_simt declines every batch feature its kernel does not implement, with a reason
// naming the feature, so that no GPU run silently computes plain attention instead; the CPU
// reference accepts them all.
#include <gtest/gtest.h>

#include <functional>

#include "kernels/device/device_info.hpp"
#include "kernels/paged_decode/sm80_simt_traits.hpp"
#include "kernels/registry.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

struct Feature {
  std::string name;
  std::string reason_mentions;
  std::function<void(Batch&)> apply;
};

TEST(Sm80SimtGating, UnimplementedFeaturesAreUnsupportedWithAReason) {
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
  const Variant& sm80_simt = *registry.find("paged_decode.sm80_simt");
  const Variant& cpu = *registry.find("paged_decode.cpu_reference");
  const KernelConfig config = sm80_simt.default_config(plain, gpu);
  ASSERT_TRUE(sm80_simt.check(plain, config, gpu)) << sm80_simt.check(plain, config, gpu).reason;

  const std::vector<Feature> features = {
      {"vllm layout", "vllm", [](Batch& b) { b.spec.kv_cache.layout = KvLayout::vllm; }},
      {"block-sparse", "block-sparse", [](Batch& b) { b.block_sparse = BlockSparseLayout{}; }},
      {"explicit mask", "explicit", [](Batch& b) { b.explicit_mask = ExplicitMask{}; }},
      {"fp16 KV under bf16 Q", "fp16 K/V under bf16 queries",
       [](Batch& b) { b.kv_dtype = DType::fp16; }},
  };
  for (const Feature& feature : features) {
    Batch batch = plain;
    feature.apply(batch);
    const Support s = sm80_simt.check(batch, config, gpu);
    EXPECT_FALSE(s.ok) << feature.name << " was accepted";
    EXPECT_NE(s.reason.find(feature.reason_mentions), std::string::npos)
        << feature.name << ": " << s.reason;
    const Support reference = cpu.check(batch, {}, Target::cpu());
    EXPECT_TRUE(reference.ok) << feature.name << ": " << reference.reason;
  }
}

// The features the kernel implements are accepted (the GPU tests check the results).
TEST(Sm80SimtGating, ImplementedFeaturesAreSupported) {
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
  const Variant& sm80_simt = *registry.find("paged_decode.sm80_simt");
  const std::vector<Feature> features = {
      {"fp8 KV per tensor", "",
       [](Batch& b) {
         b.kv_dtype = DType::fp8_e4m3;
         b.k_scales = {0.01f};
         b.v_scales = {0.02f};
       }},
      {"fp8 KV per head", "",
       [](Batch& b) {
         b.kv_dtype = DType::fp8_e4m3;
         b.k_scales = {0.01f, 0.03f};
         b.v_scales = {0.02f, 0.04f};
       }},
      {"soft-cap", "", [](Batch& b) { b.logits_soft_cap = 30.0f; }},
      {"sliding window", "", [](Batch& b) { b.sliding_window = 16; }},
      {"sinks", "", [](Batch& b) { b.sink_logits.assign(8, 1.0f); }},
      {"hnd layout", "", [](Batch& b) { b.spec.kv_cache.layout = KvLayout::hnd; }},
  };
  for (const Feature& feature : features) {
    Batch batch = plain;
    feature.apply(batch);
    const KernelConfig config = sm80_simt.default_config(batch, gpu);
    const Support s = sm80_simt.check(batch, config, gpu);
    EXPECT_TRUE(s.ok) << feature.name << ": " << s.reason;
  }
}

// Every head dim the family declares runs under the default config, in bf16 and fp8 K/V, on sm_80
// and sm_90; a head dim outside them is refused with a reason naming it.
TEST(Sm80SimtGating, DefaultConfigRunsEveryDeclaredHeadDim) {
  const Registry registry = make_registry();
  const Variant& sm80_simt = *registry.find("paged_decode.sm80_simt");
  for (int cc : {8, 9}) {
    DeviceInfo device;
    device.cc_major = cc;
    device.sm_count = 108;
    const Target gpu = Target::cuda(device);
    for (int head_dim : {64, 80, 96, 128, 192, 256}) {
      for (bool fp8 : {false, true}) {
        testing::SpecShape shape;
        shape.q_heads = 32;
        shape.kv_heads = 8;
        shape.head_dim = head_dim;
        Batch batch = generate_batch(testing::make_decode_spec(shape, {5, 40, 300}));
        if (fp8) {
          batch.kv_dtype = DType::fp8_e4m3;
          batch.k_scales = batch.v_scales = {1.0f};
        }
        const KernelConfig config = sm80_simt.default_config(batch, gpu);
        const Support s = sm80_simt.check(batch, config, gpu);
        EXPECT_TRUE(s.ok) << head_dim << (fp8 ? " fp8 " : " ") << config.key() << ": " << s.reason;
      }
    }
  }
  DeviceInfo device;
  device.cc_major = 9;
  device.sm_count = 132;
  const Target gpu = Target::cuda(device);
  testing::SpecShape shape;
  shape.q_heads = 8;
  shape.kv_heads = 2;
  shape.head_dim = 128;
  Batch batch = generate_batch(testing::make_decode_spec(shape, {5, 40}));
  const KernelConfig config = sm80_simt.default_config(batch, gpu);
  batch.spec.model.head_dim = 72;
  const Support s = sm80_simt.check(batch, config, gpu);
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.reason.find("72"), std::string::npos) << s.reason;
}

// Every config the traits accept has a consistent shape: the declared shared memory holds the
// pipeline and the row merge, and the key rows divide the block.
// A 16-bit NHD cache at head dims 80 and 96 (rows that are not whole 128-byte lines) defaults to
// two stages of 64-key tiles; HND, fp8 and head dim 128 keep six stages of 16 keys.
TEST(Sm80SimtGating, DefaultTilesFollowTheRowsLines) {
  const Registry registry = make_registry();
  const Variant& sm80_simt = *registry.find("paged_decode.sm80_simt");
  DeviceInfo device;
  device.cc_major = 9;
  device.sm_count = 132;
  const Target gpu = Target::cuda(device);
  for (int head_dim : {80, 96, 128}) {
    for (KvLayout layout : {KvLayout::nhd, KvLayout::hnd}) {
      for (bool fp8 : {false, true}) {
        testing::SpecShape shape;
        shape.q_heads = 32;
        shape.kv_heads = 32;
        shape.head_dim = head_dim;
        shape.layout = layout;
        Batch batch = generate_batch(testing::make_decode_spec(shape, {5, 40, 300}));
        if (fp8) {
          batch.kv_dtype = DType::fp8_e4m3;
          batch.k_scales = batch.v_scales = {1.0f};
        }
        const KernelConfig config = sm80_simt.default_config(batch, gpu);
        const bool split_lines = head_dim != 128 && layout == KvLayout::nhd && !fp8;
        EXPECT_EQ(config.get("tile_tokens"), split_lines ? 64 : 16) << head_dim << config.key();
        EXPECT_EQ(config.get("stages"), split_lines ? 2 : 6) << head_dim << config.key();
        EXPECT_TRUE(sm80_simt.check(batch, config, gpu).ok) << head_dim << config.key();
      }
    }
  }
}

TEST(Sm80SimtGating, TraitsAreConsistent) {
  // A row's lanes: head_dim / 8 of them active, in a power-of-two group within a warp.
  for (int head_dim : {64, 80, 96, 128, 192, 256}) {
    const int lanes = paged_decode::sm80_simt::lanes_per_token(head_dim);
    EXPECT_EQ(paged_decode::sm80_simt::active_lanes(head_dim) * 8, head_dim);
    EXPECT_TRUE(paged_decode::sm80_simt::power_of_two(lanes)) << head_dim;
    EXPECT_GE(lanes, paged_decode::sm80_simt::active_lanes(head_dim)) << head_dim;
    EXPECT_LT(lanes, 2 * paged_decode::sm80_simt::active_lanes(head_dim)) << head_dim;
    EXPECT_LE(lanes, 32) << head_dim;
  }
  EXPECT_EQ(paged_decode::sm80_simt::lanes_per_token(96), 16);
  EXPECT_EQ(paged_decode::sm80_simt::lanes_per_token(192), 32);
  EXPECT_EQ(paged_decode::sm80_simt::check(72, 2, 1, 4, 16, 2), paged_decode::sm80_simt::kHeadDim);
  for (int head_dim : {64, 80, 96, 128, 192, 256}) {
    for (int kv_bytes : {1, 2}) {
      for (int warps : {1, 2, 4, 8}) {
        for (int tile : {16, 32, 64, 128}) {
          for (int stages : {2, 3, 4, 6}) {
            for (int heads : {1, 2, 4, 8, 16}) {
              if (paged_decode::sm80_simt::check(head_dim, kv_bytes, heads, warps, tile, stages) !=
                  paged_decode::sm80_simt::kOk)
                continue;
              const int rows = paged_decode::sm80_simt::token_rows(head_dim, warps);
              EXPECT_EQ(tile % rows, 0);
              EXPECT_GE(paged_decode::sm80_simt::shared_bytes(head_dim, kv_bytes, heads, warps,
                                                              tile, stages),
                        stages * paged_decode::sm80_simt::stage_bytes(head_dim, kv_bytes, tile));
              EXPECT_EQ(paged_decode::sm80_simt::row_bytes(head_dim, kv_bytes) % 16, 0);
            }
          }
        }
      }
    }
  }
  // Splits cover every visible key exactly once.
  for (int visible : {0, 1, 15, 16, 17, 1000, 32768}) {
    for (int split_tokens : {0, 64, 500, 4096}) {
      const int n = paged_decode::sm80_simt::splits_of(visible, split_tokens, 8);
      const int size = paged_decode::sm80_simt::split_size(visible, n, 16);
      EXPECT_GE(n * size, visible);
      EXPECT_EQ(size % 16, 0);
      EXPECT_GE(n, 1);
      EXPECT_LE(n, 8);
    }
  }
}

// One decode token is the last position of its sequence, so causal and non-causal attention are
// the same computation and sm80_simt runs both.
TEST(Sm80SimtGating, NonCausalDecodeIsSupported) {
  testing::SpecShape shape;
  Batch batch = generate_batch(testing::make_decode_spec(shape, {7, 70}));
  batch.causal = false;
  DeviceInfo device;
  device.cc_major = 8;
  device.sm_count = 108;
  const Target gpu = Target::cuda(device);
  const Registry registry = make_registry();
  const Variant& sm80_simt = *registry.find("paged_decode.sm80_simt");
  EXPECT_TRUE(sm80_simt.check(batch, sm80_simt.default_config(batch, gpu), gpu).ok);
}

}  // namespace
}  // namespace attn
