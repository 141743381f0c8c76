// flash_fwd.cpu_reference and the reference's log-sum-exp: the LSE of both oracles agrees, equals
// the logit of the only key a row sees and the log of the denominator computed here from the data
// rule, and the variant writes the same output and LSE.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "base/dtype.hpp"
#include "kernels/flash_fwd/flash_fwd_variants.hpp"
#include "kernels/reference/paged_attention_reference.hpp"
#include "kernels/registry.hpp"
#include "tests/test_support.hpp"
#include "workloads/batch_data.hpp"

namespace attn {
namespace {

Batch small_prefill(bool causal, DType dtype = DType::bf16) {
  testing::SpecShape shape;
  shape.q_heads = 6;
  shape.kv_heads = 2;  // GQA 3
  shape.head_dim = 64;
  shape.dtype = dtype;
  shape.page_size = 5;
  WorkloadSpec spec = testing::make_spec(shape, {{0, 9}, {4, 3}, {0, 1}, {11, 20}});
  spec.mask.causal = causal;
  return generate_batch(spec);
}

// scale * q . k of (token, q head) and key `key` of its sequence, from the data rule alone.
double logit(const Batch& batch, int seq, int64_t token, int head, int64_t key) {
  const int group = batch.spec.group_size();
  double dot = 0;
  for (int d = 0; d < batch.spec.model.head_dim; ++d) {
    dot += double(round_to(batch.dtype, query_value(batch, token, head, d))) *
           double(stored_kv_value(batch, DataStream::key, seq, key, head / group, d));
  }
  return dot * double(batch.softmax_scale);
}

TEST(ReferenceLse, BothOraclesAgreeAndMatchTheDenominator) {
  for (bool causal : {true, false}) {
    const Batch batch = small_prefill(causal);
    const Problem host = Problem::on_host(batch);
    std::vector<float> paged_lse, dense_lse;
    paged_attention_reference(host, 2, &paged_lse);
    naive_dense_attention(batch, 2, &dense_lse);
    const int Hq = batch.spec.model.num_q_heads;
    ASSERT_EQ(paged_lse.size(), size_t(batch.total_q) * Hq);
    ASSERT_EQ(dense_lse.size(), paged_lse.size());
    for (int s = 0; s < batch.num_seqs; ++s) {
      const int64_t context = batch.context_lens[size_t(s)];
      for (int64_t i = 0; i < batch.query_lens[size_t(s)]; ++i) {
        const int64_t token = batch.cu_seqlens_q[size_t(s)] + i;
        const int64_t keys = causal ? context + i + 1 : batch.kv_lens[size_t(s)];
        for (int h = 0; h < Hq; ++h) {
          double top = -std::numeric_limits<double>::infinity();
          for (int64_t j = 0; j < keys; ++j) top = std::max(top, logit(batch, s, token, h, j));
          double sum = 0;
          for (int64_t j = 0; j < keys; ++j) sum += std::exp(logit(batch, s, token, h, j) - top);
          const double expected = top + std::log(sum);
          const size_t r = size_t(token) * Hq + size_t(h);
          EXPECT_NEAR(paged_lse[r], expected, 1e-5 * (1 + std::fabs(expected)))
              << token << " " << h;
          EXPECT_NEAR(dense_lse[r], paged_lse[r], 1e-6 * (1 + std::fabs(expected)));
          // A row that sees one key (the first query of a causal prompt) has that key's logit.
          if (keys == 1) {
            EXPECT_NEAR(paged_lse[r], logit(batch, s, token, h, 0), 1e-5);
          }
        }
      }
    }
  }
}

TEST(FlashFwdCpuReference, WritesTheReferenceOutputAndLse) {
  const Registry registry = make_registry();
  const auto* variant =
      dynamic_cast<const FlashFwdVariant*>(registry.find("flash_fwd.cpu_reference"));
  ASSERT_NE(variant, nullptr);
  EXPECT_EQ(variant->family(), Family::flash_fwd);
  for (DType dtype : {DType::bf16, DType::fp16}) {
    const Batch batch = small_prefill(true, dtype);
    ASSERT_TRUE(variant->check(batch, {}, Target::cpu()));
    Problem problem = Problem::on_host(batch);
    ExecContext context;
    context.target = Target::cpu();
    context.cpu_threads = 2;
    const size_t rows = size_t(batch.total_q) * size_t(batch.spec.model.num_q_heads);
    std::vector<float> lse(rows, std::numeric_limits<float>::quiet_NaN());
    problem.poison_output(nullptr);
    variant->prepare_with_lse(problem, {}, context, lse.data())->launch();

    std::vector<float> expected_lse;
    const std::vector<float> expected = naive_dense_attention(batch, 2, &expected_lse);
    const std::vector<uint8_t> out = problem.read_output();
    ASSERT_EQ(expected.size(), rows * size_t(batch.spec.model.head_dim));
    for (size_t i = 0; i < expected.size(); ++i) {
      // The variant rounds the float reference to the dtype once.
      ASSERT_EQ(load_as_float(out.data(), i, dtype), round_to(dtype, expected[i])) << i;
    }
    for (size_t r = 0; r < rows; ++r) EXPECT_NEAR(lse[r], expected_lse[r], 1e-5) << r;

    // Without an LSE buffer the output is the same and nothing else is written.
    problem.poison_output(nullptr);
    variant->prepare(problem, {}, context)->launch();
    EXPECT_EQ(problem.read_output(), out);
  }
}

TEST(FlashFwdCpuReference, WorkCountsTheVisiblePairs) {
  const Registry registry = make_registry();
  const Variant& variant = *registry.find("flash_fwd.cpu_reference");
  const Batch causal = small_prefill(true), full = small_prefill(false);
  // Causal: sum over sequences of sum_i (context + i + 1); non-causal: query_len * kv_len.
  int64_t causal_pairs = 0, full_pairs = 0;
  for (int s = 0; s < causal.num_seqs; ++s) {
    const int64_t c = causal.context_lens[size_t(s)], q = causal.query_lens[size_t(s)];
    causal_pairs += q * c + q * (q + 1) / 2;
    full_pairs += q * (c + q);
  }
  const double per_pair = 4.0 * 64 * 6;  // 4 * head_dim FLOPs per pair, 6 q heads
  EXPECT_DOUBLE_EQ(variant.work(causal).flops, per_pair * double(causal_pairs));
  EXPECT_DOUBLE_EQ(variant.work(full).flops, per_pair * double(full_pairs));
  // Q and out (6 heads) plus K and V (2 heads), 2 bytes each.
  EXPECT_DOUBLE_EQ(variant.work(causal).bytes,
                   2.0 * 2 * (double(causal.total_q) * 6 + double(causal.total_kv) * 2) * 64);
}

}  // namespace
}  // namespace attn
