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
  EXPECT_TRUE(bool(paged_decode_supports_layout_and_masks(generate_batch(spec))));
  spec.kv_cache.layout = KvLayout::vllm;
  const Support vllm = paged_decode_supports_layout_and_masks(generate_batch(spec));
  EXPECT_FALSE(bool(vllm));
  EXPECT_NE(vllm.reason.find("vllm"), std::string::npos) << vllm.reason;
}

}  // namespace
}  // namespace attn
