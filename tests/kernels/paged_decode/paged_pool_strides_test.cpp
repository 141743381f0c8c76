// The pool strides the CUDA paged_decode kernels are given describe the same element offsets as
// the batch's own pool_offset, for the layouts they read (NHD and HND).
#include <gtest/gtest.h>

#include "kernels/paged_decode/paged_decode_variants.hpp"
#include "tests/test_support.hpp"
#include "workloads/batch_data.hpp"

namespace attn {
namespace {

TEST(PagedPoolStrides, MatchPoolOffsetForNhdAndHnd) {
  for (KvLayout layout : {KvLayout::nhd, KvLayout::hnd}) {
    for (int page_size : {1, 7, 16}) {
      testing::SpecShape shape;
      shape.layout = layout;
      shape.page_size = page_size;
      shape.kv_heads = 3;
      shape.q_heads = 6;
      const Batch batch = generate_batch(testing::make_decode_spec(shape, {40, 9}));
      const PagedPoolStrides s = paged_pool_strides(batch);
      for (DataStream stream : {DataStream::key, DataStream::value}) {
        for (int64_t page : {int64_t(0), batch.num_pages - 1}) {
          for (int slot : {0, page_size - 1}) {
            for (int head : {0, 2}) {
              for (int dim : {0, 63}) {
                EXPECT_EQ(pool_offset(batch, stream, page, slot, head, dim),
                          page * s.page + slot * s.token + head * s.head + dim)
                    << to_string(layout) << " page_size " << page_size;
              }
            }
          }
        }
      }
    }
  }
}

TEST(PagedPoolStrides, LayoutAndMasksTheKernelsDoNotReadAreDeclined) {
  testing::SpecShape shape;
  WorkloadSpec spec = testing::make_decode_spec(shape, {40});
  const FeatureSet declared = paged_decode_features();
  EXPECT_TRUE(bool(check_features(declared, batch_features(generate_batch(spec)))));
  spec.kv_cache.layout = KvLayout::vllm;
  const Support vllm = check_features(declared, batch_features(generate_batch(spec)));
  EXPECT_FALSE(bool(vllm));
  EXPECT_NE(vllm.reason.find("the vllm KV layout"), std::string::npos) << vllm.reason;
  spec.kv_cache.layout = KvLayout::nhd;
  spec.mask.explicit_mask = ExplicitMaskSpec{};
  const Support masked = check_features(declared, batch_features(generate_batch(spec)));
  EXPECT_FALSE(bool(masked));
  EXPECT_NE(masked.reason.find("explicit masks"), std::string::npos) << masked.reason;
}

}  // namespace
}  // namespace attn
