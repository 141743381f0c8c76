// The bytes every flash_fwd variant reports for an fp8 cache are those its kernels read: the
// gather keeps the codes, so K and V cost one byte an element (half of the same batch over a bf16
// cache), plus the 4-byte scales, and no page table (the kernels read the gathered rows).
#include <gtest/gtest.h>

#include "kernels/flash_fwd/flash_fwd_variants.hpp"
#include "kernels/registry.hpp"
#include "tests/test_support.hpp"
#include "workloads/traffic.hpp"

namespace attn {
namespace {

Batch dense_prefill(bool fp8, KvScaleGranularity scale) {
  testing::SpecShape shape;
  shape.q_heads = 8;
  shape.kv_heads = 2;
  shape.head_dim = 128;
  shape.page_size = 16;
  WorkloadSpec spec = testing::make_spec(shape, {{0, 300}, {0, 77}, {5, 40}}, "fp8-work");
  spec.mask.causal = true;
  if (fp8) {
    spec.model.kv_dtype = DType::fp8_e4m3;
    spec.model.kv_scale = scale;
  }
  return generate_batch(spec);
}

TEST(FlashFwdFp8Work, BytesAreTheFp8RowsAndTheScales) {
  const Registry registry = make_registry();
  for (KvScaleGranularity scale : {KvScaleGranularity::per_tensor, KvScaleGranularity::per_head}) {
    const Batch bf16 = dense_prefill(false, scale), fp8 = dense_prefill(true, scale);
    const MinimumTraffic rows = minimum_traffic(bf16, KvStorage::contiguous);
    ASSERT_GT(rows.kv_bytes, 0.0);
    const double scales = 4.0 * double(fp8.k_scales.size() + fp8.v_scales.size());
    EXPECT_EQ(scales, scale == KvScaleGranularity::per_head ? 4.0 * 2 * 2 : 4.0 * 2);
    for (const char* name :
         {"flash_fwd.sm80_mma", "flash_fwd.sm90_wgmma", "flash_fwd.cpu_reference"}) {
      const Variant* variant = registry.find(name);
      ASSERT_NE(variant, nullptr) << name;
      const Work sixteen = variant->work(bf16), eight = variant->work(fp8);
      EXPECT_DOUBLE_EQ(eight.bytes, sixteen.bytes - rows.kv_bytes / 2 + scales) << name;
      EXPECT_DOUBLE_EQ(eight.unique_bytes, sixteen.unique_bytes - rows.unique_kv_bytes / 2 + scales)
          << name;
      EXPECT_DOUBLE_EQ(eight.flops, sixteen.flops) << name;
    }
  }
}

}  // namespace
}  // namespace attn
