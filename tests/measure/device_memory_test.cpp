// The device memory a batch needs (measure/device_memory.hpp), from the spec before anything is
// allocated: the inputs the variants read, the GPU reference's output and upload, the timing
// buffers and a margin. Checked against the free memory on the GPU (measure/device_memory_gpu
// tests); here, what the estimate counts.
#include "measure/device_memory.hpp"

#include <gtest/gtest.h>

#include "tests/test_support.hpp"
#include "workloads/batch_data.hpp"

namespace attn {
namespace {

TEST(DeviceMemoryNeed, CountsTheInputsTheReferenceAndTheTimingBuffers) {
  testing::SpecShape shape;
  shape.head_dim = 128;
  shape.q_heads = 32;
  shape.kv_heads = 8;
  const Batch batch = generate_batch(testing::make_decode_spec(shape, {1000, 3000, 17}));
  const int64_t q = query_elements(batch) * int64_t(size_of(batch.dtype));
  const int64_t pools =
      (pool_elements(batch, DataStream::key) + pool_elements(batch, DataStream::value)) *
      int64_t(size_of(batch.kv_dtype));
  const int64_t table = 4 * int64_t(batch.num_seqs) * batch.max_pages_per_seq;
  const int64_t l2 = int64_t(50) << 20;

  const DeviceMemoryNeed plain = device_memory_need(batch, false, false, l2);
  EXPECT_EQ(plain.inputs, 2 * q + pools + table + 4 * batch.num_seqs + 4 * (batch.num_seqs + 1));
  EXPECT_EQ(plain.reference, 0);
  EXPECT_EQ(plain.timing, 8 * l2);
  EXPECT_GE(plain.margin, int64_t(256) << 20);
  EXPECT_EQ(plain.total(),
            plain.inputs + plain.masks + plain.reference + plain.timing + plain.margin);

  // The GPU reference writes fp32 rows; with a device fill it also reads an upload of the host
  // problem.
  const int64_t fp32_out = 4 * batch.total_q * 32 * 128 + 4 * batch.total_q * 32;
  EXPECT_EQ(device_memory_need(batch, true, false, l2).reference, fp32_out);
  EXPECT_EQ(device_memory_need(batch, true, true, l2).reference, fp32_out + 2 * q + pools + table);
  EXPECT_GT(device_memory_need(batch, false, true, l2).inputs, plain.inputs) << "the CSR table";
  EXPECT_EQ(plain.workspace, 0);
}

// An fp8 cache adds the 16-bit copies prefix_prefill.sm90_wgmma's kernel writes: each sequence's
// context in tiles of up to 128 keys and its new tokens' rows (rounded up to 16), K and V.
TEST(DeviceMemoryNeed, AnFp8CacheCountsTheDequantisedCopies) {
  testing::SpecShape shape;
  shape.head_dim = 128;
  shape.q_heads = 32;
  shape.kv_heads = 8;
  shape.page_size = 16;
  WorkloadSpec spec = testing::make_spec(shape, {{1000, 17}, {0, 300}, {45, 1}}, "fp8-memory");
  spec.model.kv_dtype = DType::fp8_e4m3;
  const Batch batch = generate_batch(spec);
  const int64_t rows = (1024 + 32) + (0 + 304) + (128 + 16);
  const DeviceMemoryNeed need = device_memory_need(batch, false, false, int64_t(50) << 20);
  EXPECT_EQ(need.workspace, rows * 8 * (128 + 128) * 2);
  EXPECT_EQ(need.total(),
            need.inputs + need.masks + need.reference + need.timing + need.workspace + need.margin);
}

}  // namespace
}  // namespace attn
