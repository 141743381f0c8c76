#include "kernels/reference/paged_attention_reference.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/test_support.hpp"
#include "workloads/batch_data.hpp"

namespace attn {
namespace {

double max_difference(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, double(std::fabs(a[i] - b[i])));
  return worst;
}

struct Case {
  testing::SpecShape shape;
  std::vector<std::pair<int64_t, int64_t>> sequences;  // (context, query)
};

// The paged reference (reads through the page table and pools) equals the dense naive attention
// (computes every value from the data rule) on small cases covering the batch features.
TEST(PagedReference, MatchesDenseNaiveAttention) {
  std::vector<Case> cases;
  for (int page : {1, 3, 16, 256}) {
    for (KvLayout layout : {KvLayout::nhd, KvLayout::hnd}) {
      Case c;
      c.shape.page_size = page;
      c.shape.layout = layout;
      c.shape.q_heads = 6;
      c.shape.kv_heads = 2;  // GQA 3
      c.shape.head_dim = 64;
      c.sequences = {{0, 1}, {1, 1}, {16, 1}, {37, 1}, {15, 1}};
      cases.push_back(c);
    }
  }
  Case prefill;  // causal new tokens on top of a context
  prefill.shape.q_heads = 4;
  prefill.shape.kv_heads = 4;
  prefill.shape.head_dim = 128;
  prefill.shape.dtype = DType::fp16;
  prefill.shape.allocation = PageAllocation::sequential;
  prefill.sequences = {{0, 5}, {20, 7}, {3, 1}};
  cases.push_back(prefill);

  for (size_t i = 0; i < cases.size(); ++i) {
    const Batch batch = generate_batch(testing::make_spec(cases[i].shape, cases[i].sequences));
    const Problem host = Problem::on_host(batch);
    const std::vector<float> paged = paged_attention_reference(host, 2);
    const std::vector<float> dense = naive_dense_attention(batch, 2);
    EXPECT_LT(max_difference(paged, dense), 1e-5) << "case " << i;
  }
}

// A query sees exactly context_len + position + 1 keys: changing the first invisible key's value
// changes nothing, changing the last visible one changes the output.
TEST(PagedReference, CausalWindowIsExact) {
  testing::SpecShape shape;
  shape.q_heads = 2;
  shape.kv_heads = 1;
  shape.page_size = 4;
  shape.allocation = PageAllocation::sequential;
  const Batch batch = generate_batch(testing::make_spec(shape, {{5, 3}}));  // kv_len 8
  Problem host = Problem::on_host(batch);
  const std::vector<float> before = paged_attention_reference(host, 1);
  const int D = shape.head_dim;
  // Query token 0 sees keys 0..5; key 6 (page 1, slot 2) is visible to tokens 1 and 2 only.
  auto* v_pool = static_cast<uint16_t*>(const_cast<void*>(host.v_pool()));
  const int64_t key6 = pool_offset(batch, DataStream::value, batch.page_indices[1], 2, 0, 0);
  for (int d = 0; d < D; ++d) v_pool[key6 + d] = float_to_bf16(100.0f);
  const std::vector<float> after = paged_attention_reference(host, 1);
  const size_t row = size_t(shape.q_heads) * D;  // one query token, all heads
  for (size_t i = 0; i < row; ++i) ASSERT_EQ(before[i], after[i]) << "token 0 saw key 6";
  double moved = 0;
  for (size_t i = row; i < 3 * row; ++i)
    moved = std::max(moved, double(std::fabs(before[i] - after[i])));
  EXPECT_GT(moved, 1e-3) << "tokens 1 and 2 did not see key 6";
}

// Softmax is over the right axis: with one key, the output is that key's value row.
TEST(PagedReference, SingleKeyReturnsItsValue) {
  testing::SpecShape shape;
  shape.q_heads = 4;
  shape.kv_heads = 2;
  const Batch batch = generate_batch(testing::make_decode_spec(shape, {0}));
  const Problem host = Problem::on_host(batch);
  const std::vector<float> out = paged_attention_reference(host, 1);
  for (int h = 0; h < shape.q_heads; ++h) {
    for (int d = 0; d < shape.head_dim; ++d) {
      const float v = round_to(DType::bf16, kv_value(batch, DataStream::value, 0, 0, h / 2, d));
      ASSERT_FLOAT_EQ(out[size_t(h * shape.head_dim + d)], v);
    }
  }
}

}  // namespace
}  // namespace attn
