// A batch dump of a workload whose V is narrower than Q and K (model.v_head_dim): the V pool and
// the reference output are v_head_dim wide, and the index says so.
#include <gtest/gtest.h>

#include "tests/test_support.hpp"
#include "workloads/batch_data.hpp"
#include "workloads/batch_dump.hpp"

namespace attn {
namespace {

const DumpTensor* find_tensor(const std::vector<DumpTensor>& tensors, const std::string& name) {
  for (const auto& t : tensors)
    if (t.tensor.name == name) return &t;
  return nullptr;
}

Batch narrow_v_dump_batch(KvLayout layout) {
  testing::SpecShape shape;
  shape.q_heads = 4;
  shape.kv_heads = 2;
  shape.head_dim = 192;
  shape.layout = layout;
  WorkloadSpec spec = testing::make_spec(shape, {{0, 3}, {20, 1}});
  spec.model.v_head_dim = 128;
  return generate_batch(spec);
}

TEST(NarrowVDump, TheVPoolIsVHeadDimWide) {
  const Batch batch = narrow_v_dump_batch(KvLayout::nhd);
  const std::vector<DumpTensor> tensors = batch_tensors(batch);
  const DumpTensor* k = find_tensor(tensors, "k_cache");
  const DumpTensor* v = find_tensor(tensors, "v_cache");
  ASSERT_NE(k, nullptr);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(k->tensor.shape, (std::vector<int64_t>{batch.num_pages, 16, 2, 192}));
  EXPECT_EQ(v->tensor.shape, (std::vector<int64_t>{batch.num_pages, 16, 2, 128}));
  EXPECT_EQ(v->tensor.data.size(), size_t(batch.num_pages * 16 * 2 * 128 * 2));
  EXPECT_NE(v->meaning.find("[pages, page_size, kv_heads, v_head_dim]"), std::string::npos)
      << v->meaning;
  const Batch vllm = narrow_v_dump_batch(KvLayout::vllm);
  const std::vector<DumpTensor> vllm_tensors = batch_tensors(vllm);
  const DumpTensor* v_vllm = find_tensor(vllm_tensors, "v_cache");
  ASSERT_NE(v_vllm, nullptr);
  EXPECT_EQ(v_vllm->tensor.shape, (std::vector<int64_t>{vllm.num_pages, 2, 128, 16}));
}

TEST(NarrowVDump, TheReferenceOutputAndTheIndexCarryVHeadDim) {
  const Batch batch = narrow_v_dump_batch(KvLayout::hnd);
  const std::vector<float> out(size_t(output_elements(batch)), 0.5f);
  const DumpTensor reference = reference_output_tensor(batch, out);
  EXPECT_EQ(reference.tensor.shape, (std::vector<int64_t>{batch.total_q, 4, 128}));
  const nlohmann::json index = dump_index(batch, batch_tensors(batch));
  EXPECT_EQ(index["batch"]["head_dim"], 192);
  EXPECT_EQ(index["batch"]["v_head_dim"], 128);
  EXPECT_EQ(index["spec"]["model"]["v_head_dim"], 128);
}

}  // namespace
}  // namespace attn
