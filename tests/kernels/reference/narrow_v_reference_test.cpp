// The CPU oracles with V narrower than Q and K (model.v_head_dim): Q.K over head_dim, P.V and the
// output over v_head_dim, in every layout and over an fp8 cache, and the CPU reference variant
// end to end.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "kernels/reference/paged_attention_reference.hpp"
#include "kernels/registry.hpp"
#include "tests/test_support.hpp"
#include "workloads/batch_data.hpp"

namespace attn {
namespace {

Batch narrow_v_batch(int head_dim, int v_head_dim, KvLayout layout, bool fp8 = false) {
  testing::SpecShape shape;
  shape.q_heads = 6;
  shape.kv_heads = 2;
  shape.head_dim = head_dim;
  shape.layout = layout;
  shape.page_size = 16;
  WorkloadSpec spec = testing::make_spec(shape, {{0, 5}, {20, 7}, {37, 1}});
  spec.model.v_head_dim = v_head_dim;
  if (fp8) {
    spec.model.kv_dtype = DType::fp8_e4m3;
    spec.model.kv_scale = KvScaleGranularity::per_head;
  }
  return generate_batch(spec);
}

double max_difference(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    worst = std::max(worst, double(std::fabs(a[i] - b[i])));
  return worst;
}

// The paged oracle (pools through the page table) equals the dense one (every value from the data
// rule, sharing no addressing code), and both are v_head_dim wide.
TEST(NarrowVReference, PagedMatchesDenseInEveryLayout) {
  struct Dims {
    int head_dim, v_head_dim;
  };
  for (Dims dims : {Dims{192, 128}, Dims{128, 64}}) {
    for (KvLayout layout : {KvLayout::nhd, KvLayout::hnd, KvLayout::vllm}) {
      for (bool fp8 : {false, true}) {
        SCOPED_TRACE(std::to_string(dims.head_dim) + "x" + std::to_string(dims.v_head_dim) + " " +
                     to_string(layout) + (fp8 ? " fp8" : ""));
        const Batch batch = narrow_v_batch(dims.head_dim, dims.v_head_dim, layout, fp8);
        const std::vector<float> paged = paged_attention_reference(Problem::on_host(batch), 2);
        const std::vector<float> dense = naive_dense_attention(batch, 2);
        EXPECT_EQ(paged.size(), size_t(batch.total_q) * 6 * size_t(dims.v_head_dim));
        EXPECT_LT(max_difference(paged, dense), 1e-5);
      }
    }
  }
}

// With Q all zero every visible key weighs the same: each output element is the mean of V's
// column over the keys the row sees, read at v_head_dim's stride.
TEST(NarrowVReference, ZeroQueriesAverageTheVisibleValues) {
  const Batch batch = narrow_v_batch(192, 128, KvLayout::nhd);
  Problem host = Problem::on_host(batch);
  std::memset(const_cast<void*>(host.q()), 0, size_t(query_elements(batch)) * size_of(batch.dtype));
  const std::vector<float> out = paged_attention_reference(host, 2);
  ASSERT_EQ(out.size(), size_t(output_elements(batch)));
  const int64_t token = batch.cu_seqlens_q[2];  // sequence 2: one query seeing all 38 keys
  for (int head : {0, 5}) {
    for (int dim : {0, 77, 127}) {
      double sum = 0;
      for (int64_t j = 0; j < batch.kv_lens[2]; ++j)
        sum += stored_kv_value(batch, DataStream::value, 2, j, head / 3, dim);
      EXPECT_NEAR(out[size_t((token * 6 + head) * 128 + dim)], sum / double(batch.kv_lens[2]), 1e-6)
          << "head " << head << " dim " << dim;
    }
  }
}

TEST(NarrowVReference, TheCpuReferenceVariantRunsItAndMatchesTheOracle) {
  const Batch batch = narrow_v_batch(192, 128, KvLayout::hnd);
  const Registry registry = make_registry();
  const Variant* variant = registry.find("prefix_prefill.cpu_reference");
  ASSERT_NE(variant, nullptr);
  const KernelConfig config = variant->default_config(batch, Target::cpu());
  ASSERT_TRUE(variant->check(batch, config, Target::cpu()).ok);
  Problem problem = Problem::on_host(batch);
  ExecContext context;
  context.target = Target::cpu();
  context.cpu_threads = 2;
  variant->run(problem, config, context);
  const std::vector<uint8_t> output = problem.read_output();
  ASSERT_EQ(output.size(), size_t(output_elements(batch)) * size_of(batch.dtype));
  const std::vector<float> expected = naive_dense_attention(batch, 2);
  for (size_t i = 0; i < expected.size(); ++i) {
    ASSERT_NEAR(load_as_float(output.data(), i, batch.dtype), expected[i],
                1e-2 * (1.0 + std::fabs(expected[i])))
        << "element " << i;
  }
}

}  // namespace
}  // namespace attn
