#include "workloads/batch_dump.hpp"

#include <gtest/gtest.h>

#include "tests/test_support.hpp"
#include "workloads/batch_summary.hpp"
#include "workloads/traffic.hpp"

namespace attn {
namespace {

const DumpTensor* find(const std::vector<DumpTensor>& tensors, const std::string& name) {
  for (const auto& t : tensors)
    if (t.tensor.name == name) return &t;
  return nullptr;
}

WorkloadSpec featured_spec() {
  testing::SpecShape shape;
  shape.q_heads = 4;
  shape.kv_heads = 2;
  shape.head_dim = 64;
  shape.page_size = 8;
  shape.layout = KvLayout::vllm;
  WorkloadSpec spec = testing::make_spec(shape, {{0, 3}, {20, 1}, {9, 4}});
  spec.model.kv_dtype = DType::fp8_e4m3;
  spec.model.kv_scale = KvScaleGranularity::per_head;
  spec.model.attention_sinks = true;
  BlockSparseSpec sparse;
  sparse.block_size = 8;
  sparse.local_blocks = 1;
  sparse.vertical_stride = 2;
  spec.mask.block_sparse = sparse;
  return spec;
}

TEST(BatchDump, TensorsFollowTheLayoutAndFeatures) {
  const Batch batch = generate_batch(featured_spec());
  const std::vector<DumpTensor> tensors = batch_tensors(batch);
  const DumpTensor* k = find(tensors, "k_cache");
  const DumpTensor* v = find(tensors, "v_cache");
  ASSERT_TRUE(k && v);
  EXPECT_EQ(k->tensor.dtype, "F8_E4M3");
  EXPECT_EQ(k->tensor.shape, (std::vector<int64_t>{batch.num_pages, 2, 64 / 16, 8, 16}));
  EXPECT_EQ(v->tensor.shape, (std::vector<int64_t>{batch.num_pages, 2, 64, 8}));
  ASSERT_TRUE(find(tensors, "k_scales"));
  EXPECT_EQ(find(tensors, "k_scales")->tensor.shape, std::vector<int64_t>{2});
  ASSERT_TRUE(find(tensors, "sink_logits"));
  EXPECT_EQ(find(tensors, "sink_logits")->tensor.shape, std::vector<int64_t>{4});
  ASSERT_TRUE(find(tensors, "block_sparse_crow"));
  ASSERT_TRUE(find(tensors, "block_sparse_col"));
  EXPECT_EQ(find(tensors, "explicit_mask"), nullptr);
  EXPECT_EQ(find(tensors, "q")->tensor.dtype, "BF16");
  EXPECT_EQ(find(tensors, "slot_mapping")->tensor.dtype, "I64");
  EXPECT_EQ(find(tensors, "block_table")->tensor.dtype, "I32");
  // Every tensor is valid safetensors material and the index lists it with its hash.
  SafetensorsWriter writer;
  for (const auto& t : tensors) writer.add(t.tensor);
  const nlohmann::json index = dump_index(batch, tensors);
  ASSERT_EQ(index["tensors"].size(), tensors.size());
  EXPECT_EQ(index["tensors"][1]["sha256"], tensor_sha256(k->tensor));
  EXPECT_EQ(index["batch"]["kv_dtype"], "fp8_e4m3");
  // Deterministic: a second generation gives the same bytes.
  EXPECT_EQ(tensor_sha256(find(batch_tensors(batch), "k_cache")->tensor), tensor_sha256(k->tensor));
}

TEST(BatchSummary, CountsFeaturesAndLog2Histogram) {
  testing::SpecShape shape;
  WorkloadSpec spec = testing::make_spec(shape, {{0, 1}, {1, 1}, {2, 1}, {6, 1}, {100, 1}});
  spec.model.sliding_window = 4;
  const Batch batch = generate_batch(spec);  // kv lens 1, 2, 3, 7, 101
  const BatchSummary s = summarize_batch(batch);
  EXPECT_EQ(s.sequences, 5);
  EXPECT_EQ(s.kv_tokens, 114);
  EXPECT_EQ(s.visible_pairs, int64_t(shape.q_heads) * (1 + 2 + 3 + 4 + 4));
  EXPECT_DOUBLE_EQ(s.useful_flops, 4.0 * shape.head_dim * double(s.visible_pairs));
  // The window reads 1 + 2 + 3 + 4 + 4 keys per kv head of the 114 in the cache.
  const MinimumTraffic traffic = minimum_traffic(batch, KvStorage::paged);
  EXPECT_EQ(traffic.kv_rows, int64_t(shape.kv_heads) * 14);
  EXPECT_DOUBLE_EQ(s.minimum_bytes, traffic.bytes());
  EXPECT_DOUBLE_EQ(s.unique_minimum_bytes, traffic.unique_bytes());
  EXPECT_LT(s.minimum_bytes, s.kv_bytes);
  ASSERT_EQ(s.kv_length_histogram.size(), 7u);  // 1, 2-3, 4-7, 8-15, 16-31, 32-63, 64-127
  EXPECT_EQ(s.kv_length_histogram[0].lo, 1);
  EXPECT_EQ(s.kv_length_histogram[0].count, 1);
  EXPECT_EQ(s.kv_length_histogram[1].count, 2);
  EXPECT_EQ(s.kv_length_histogram[2].count, 1);
  EXPECT_EQ(s.kv_length_histogram[6].lo, 64);
  EXPECT_EQ(s.kv_length_histogram[6].hi, 127);
  EXPECT_EQ(s.kv_length_histogram[6].count, 1);
  bool window = false;
  for (const auto& f : s.features) window |= f == "sliding window 4";
  EXPECT_TRUE(window);
  EXPECT_NE(format_batch_summary(batch, s).find("kv_len histogram"), std::string::npos);
}

}  // namespace
}  // namespace attn
