// The CPU oracles on each feature of the Batch semantics (workloads/batch.hpp), checked by hand
// on buffers set to known values, and the two oracles against each other on generated batches
// with every feature on.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>

#include "kernels/reference/paged_attention_reference.hpp"
#include "tests/test_support.hpp"
#include "workloads/batch_data.hpp"

namespace attn {
namespace {

constexpr int kDim = 64;

// A host problem whose Q, K and V are zero except for the elements a test sets.
class HandProblem {
 public:
  explicit HandProblem(const Batch& batch) : batch_(batch), host_(Problem::on_host(batch)) {
    std::memset(mutable_ptr(host_.q()), 0, size_t(query_elements(batch)) * size_of(batch.dtype));
    std::memset(mutable_ptr(host_.k_pool()), 0,
                size_t(pool_elements(batch, DataStream::key)) * size_of(batch.kv_dtype));
    std::memset(mutable_ptr(host_.v_pool()), 0,
                size_t(pool_elements(batch, DataStream::value)) * size_of(batch.kv_dtype));
  }
  void set_q(int64_t token, int head, int dim, float value) {
    const int64_t i = (token * batch_.spec.model.num_q_heads + head) * kDim + dim;
    store_from_float(mutable_ptr(host_.q()), size_t(i), batch_.dtype, value);
  }
  // Stores `value` in the cache's element type (fp8: the code of `value`, read back times scale).
  void set_kv(DataStream stream, int seq, int64_t position, int head, int dim, float value) {
    const int32_t page =
        batch_.page_indices[size_t(batch_.page_indptr[size_t(seq)] + position / batch_.page_size)];
    const int64_t i =
        pool_offset(batch_, stream, page, int(position % batch_.page_size), head, dim);
    void* pool = mutable_ptr(stream == DataStream::key ? host_.k_pool() : host_.v_pool());
    store_from_float(pool, size_t(i), batch_.kv_dtype, value);
  }
  std::vector<float> run() const { return paged_attention_reference(host_, 1); }
  float out(const std::vector<float>& o, int64_t token, int head, int dim) const {
    return o[size_t((token * batch_.spec.model.num_q_heads + head) * kDim + dim)];
  }

 private:
  static void* mutable_ptr(const void* p) { return const_cast<void*>(p); }
  const Batch& batch_;
  Problem host_;
};

Batch hand_batch(int q_heads, int kv_heads, std::vector<std::pair<int64_t, int64_t>> seqs,
                 DType kv_dtype = DType::bf16) {
  testing::SpecShape shape;
  shape.q_heads = q_heads;
  shape.kv_heads = kv_heads;
  shape.head_dim = kDim;
  shape.page_size = 3;
  WorkloadSpec spec = testing::make_spec(shape, seqs, "hand");
  if (kv_dtype != DType::bf16) spec.model.kv_dtype = kv_dtype;
  Batch batch = generate_batch(spec);
  batch.softmax_scale = 1.0f;
  return batch;
}

double sigmoid(double x) {
  return 1.0 / (1.0 + std::exp(-x));
}

// Two keys with logits 4 and 0: p0 = sigmoid(4) plain, sigmoid(2 tanh(2)) capped at 2.
TEST(ReferenceFeatures, SoftCapIsCapTimesTanh) {
  for (float cap : {0.0f, 2.0f, 50.0f}) {
    Batch batch = hand_batch(1, 1, {{1, 1}});
    batch.logits_soft_cap = cap;
    HandProblem p(batch);
    p.set_q(0, 0, 0, 4.0f);
    p.set_kv(DataStream::key, 0, 0, 0, 0, 1.0f);
    p.set_kv(DataStream::value, 0, 0, 0, 0, 1.0f);
    p.set_kv(DataStream::value, 0, 1, 0, 1, 1.0f);
    const std::vector<float> out = p.run();
    const double logit = cap > 0 ? cap * std::tanh(4.0 / cap) : 4.0;
    EXPECT_NEAR(p.out(out, 0, 0, 0), sigmoid(logit), 1e-6) << "cap " << cap;
    EXPECT_NEAR(p.out(out, 0, 0, 1), 1.0 - sigmoid(logit), 1e-6) << "cap " << cap;
  }
  EXPECT_NEAR(sigmoid(2.0 * std::tanh(2.0)), 0.873034, 1e-6);  // the capped case differs by far
}

// One key of logit 0: a sink of logit 0 takes half the mass, one of ln 3 three quarters, and one
// far below takes none. The sink adds no value of its own.
TEST(ReferenceFeatures, SinkJoinsTheDenominatorOnly) {
  Batch batch = hand_batch(3, 1, {{0, 1}});
  batch.sink_logits = {0.0f, float(std::log(3.0)), -1000.0f};
  HandProblem p(batch);
  p.set_kv(DataStream::value, 0, 0, 0, 0, 1.0f);
  p.set_kv(DataStream::value, 0, 0, 0, 5, -2.0f);
  const std::vector<float> out = p.run();
  const double kept[] = {0.5, 0.25, 1.0};
  for (int h = 0; h < 3; ++h) {
    EXPECT_NEAR(p.out(out, 0, h, 0), kept[h], 1e-6) << "head " << h;
    EXPECT_NEAR(p.out(out, 0, h, 5), -2.0 * kept[h], 1e-6) << "head " << h;
    EXPECT_EQ(p.out(out, 0, h, 1), 0.0f);
  }
}

// Query 1 of the sequence sees no key through its explicit mask: its output is exactly zero (not
// NaN from 0/0), with or without a sink; query 0 is unaffected.
TEST(ReferenceFeatures, RowWithNoVisibleKeyIsZero) {
  for (bool sink : {false, true}) {
    Batch batch = hand_batch(2, 1, {{2, 2}});  // kv_len 4
    ExplicitMask mask;
    mask.offsets = {0, 8};
    mask.bits = {1, 1, 1, 0,  // query 0: keys 0..2
                 0, 0, 0, 0};
    batch.explicit_mask = mask;
    if (sink) batch.sink_logits = {1.0f, 1.0f};
    HandProblem p(batch);
    for (int64_t j = 0; j < 4; ++j) p.set_kv(DataStream::value, 0, j, 0, 0, 2.0f);
    const std::vector<float> out = p.run();
    for (int h = 0; h < 2; ++h) {
      for (int d = 0; d < kDim; ++d) ASSERT_EQ(p.out(out, 1, h, d), 0.0f) << "head " << h;
      EXPECT_NEAR(p.out(out, 0, h, 0), sink ? 2.0 * 3 / (3 + std::exp(1.0)) : 2.0, 1e-6);
    }
    const std::vector<float> dense = naive_dense_attention(batch, 1);
    for (int h = 0; h < 2; ++h)
      for (int d = 0; d < kDim; ++d) EXPECT_EQ(dense[size_t((1 * 2 + h) * kDim + d)], 0.0f);
  }
}

// fp8 codes times the kv head's scale: with one key the output is v_code * v_scale[h]; with two
// keys the K scale sets the logit (q = 1, k_code = 1: logit = k_scale[h]).
TEST(ReferenceFeatures, Fp8CodesAreScaledPerHeadAndPerTensor) {
  {
    Batch batch = hand_batch(2, 2, {{0, 1}}, DType::fp8_e4m3);
    batch.k_scales = {0.5f, 2.0f};
    batch.v_scales = {0.25f, 4.0f};
    HandProblem p(batch);
    for (int h = 0; h < 2; ++h) p.set_kv(DataStream::value, 0, 0, h, 3, 1.5f);
    const std::vector<float> out = p.run();
    EXPECT_FLOAT_EQ(p.out(out, 0, 0, 3), 1.5f * 0.25f);
    EXPECT_FLOAT_EQ(p.out(out, 0, 1, 3), 1.5f * 4.0f);
  }
  for (bool per_head : {true, false}) {
    Batch batch = hand_batch(2, 2, {{1, 1}}, DType::fp8_e4m3);
    batch.k_scales = per_head ? std::vector<float>{0.5f, 2.0f} : std::vector<float>{3.0f};
    batch.v_scales = per_head ? std::vector<float>{1.0f, 0.5f} : std::vector<float>{1.0f};
    HandProblem p(batch);
    for (int h = 0; h < 2; ++h) {
      p.set_q(0, h, 0, 1.0f);
      p.set_kv(DataStream::key, 0, 0, h, 0, 1.0f);
      p.set_kv(DataStream::value, 0, 0, h, 0, 1.0f);
      p.set_kv(DataStream::value, 0, 1, h, 1, 1.0f);
    }
    const std::vector<float> out = p.run();
    for (int h = 0; h < 2; ++h) {
      const double ks = per_head ? batch.k_scales[size_t(h)] : batch.k_scales[0];
      const double vs = per_head ? batch.v_scales[size_t(h)] : batch.v_scales[0];
      EXPECT_NEAR(p.out(out, 0, h, 0), vs * sigmoid(ks), 1e-6) << "head " << h;
      EXPECT_NEAR(p.out(out, 0, h, 1), vs * (1 - sigmoid(ks)), 1e-6) << "head " << h;
    }
  }
}

// q = 0 makes attention uniform over the visible keys, so the output is the mean of their values
// and says exactly which keys were seen. Values: key j holds j in dim 0.
TEST(ReferenceFeatures, CausalNonCausalAndSlidingWindow) {
  struct Case {
    bool causal;
    int64_t window;
    double query0, query2;  // expected dim-0 output of new tokens 0 and 2
  };
  // Sequence: context 2, query 3 (kv_len 5); new token i is at position 2 + i.
  const Case cases[] = {
      {true, 0, 1.0, 2.0},   // keys 0..2 and 0..4
      {false, 0, 2.0, 2.0},  // every query sees keys 0..4
      {true, 2, 1.5, 3.5},   // keys 1..2 and 3..4
      {true, 1, 2.0, 4.0},   // only itself
  };
  for (const Case& c : cases) {
    Batch batch = hand_batch(1, 1, {{2, 3}});
    batch.causal = c.causal;
    batch.sliding_window = c.window;
    HandProblem p(batch);
    for (int64_t j = 0; j < 5; ++j) p.set_kv(DataStream::value, 0, j, 0, 0, float(j));
    const std::vector<float> out = p.run();
    EXPECT_NEAR(p.out(out, 0, 0, 0), c.query0, 1e-6) << c.causal << " window " << c.window;
    EXPECT_NEAR(p.out(out, 2, 0, 0), c.query2, 1e-6) << c.causal << " window " << c.window;
  }
}

// The same batch in every layout reads the same values, so the paged reference gives the same
// bits: the vLLM layout's x-packed K and transposed V are addressed right.
TEST(ReferenceFeatures, EveryLayoutGivesTheSameOutput) {
  for (DType kv_dtype : {DType::bf16, DType::fp8_e4m3}) {
    std::vector<std::vector<float>> outputs;
    for (KvLayout layout : {KvLayout::nhd, KvLayout::hnd, KvLayout::vllm}) {
      testing::SpecShape shape;
      shape.q_heads = 4;
      shape.kv_heads = 2;
      shape.head_dim = 128;
      shape.page_size = 5;
      shape.layout = layout;
      WorkloadSpec spec = testing::make_spec(shape, {{0, 3}, {11, 1}, {4, 2}});
      if (kv_dtype != DType::bf16) spec.model.kv_dtype = kv_dtype;
      const Batch batch = generate_batch(spec);
      outputs.push_back(paged_attention_reference(Problem::on_host(batch), 2));
    }
    EXPECT_EQ(outputs[0], outputs[1]) << "hnd, " << to_string(kv_dtype);
    EXPECT_EQ(outputs[0], outputs[2]) << "vllm, " << to_string(kv_dtype);
  }
}

double max_difference(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) || std::isnan(b[i])) return INFINITY;
    worst = std::max(worst, double(std::fabs(a[i] - b[i])));
  }
  return worst;
}

// The paged oracle (buffers through the page table) and the dense one (values from the data
// rule) agree on random batches with every feature, alone and combined.
TEST(ReferenceFeatures, OraclesAgreeWithEveryFeature) {
  std::mt19937_64 rng(31337);
  auto pick = [&](std::initializer_list<int64_t> values) {
    return *(values.begin() + std::uniform_int_distribution<size_t>(0, values.size() - 1)(rng));
  };
  for (int trial = 0; trial < 4; ++trial) {
    auto base = [&](KvLayout layout, int page, DType dtype) {
      testing::SpecShape shape;
      shape.q_heads = 6;
      shape.kv_heads = int(pick({1, 2, 3}));
      shape.head_dim = 64;
      shape.dtype = dtype;
      shape.page_size = page;
      shape.layout = layout;
      shape.seed = rng();
      std::vector<std::pair<int64_t, int64_t>> seqs;
      for (int n = int(pick({1, 3, 6})); n > 0; --n)
        seqs.push_back({pick({0, 1, 7, 13, 40}), pick({1, 1, 4, 9})});
      return testing::make_spec(shape, seqs);
    };
    struct Featured {
      WorkloadSpec spec;
      std::function<bool(const Batch&)> in_force;  // the batch really has the features
    };
    std::vector<Featured> specs;
    {
      WorkloadSpec s = base(KvLayout::vllm, 4, DType::bf16);
      s.model.kv_dtype = DType::fp8_e4m3;
      s.model.kv_scale = KvScaleGranularity::per_head;
      s.model.logits_soft_cap = 5.0;
      s.model.attention_sinks = true;
      s.model.sliding_window = 7;
      specs.push_back({s, [](const Batch& b) {
                         return b.kv_dtype == DType::fp8_e4m3 &&
                                int(b.k_scales.size()) == b.spec.model.num_kv_heads &&
                                b.logits_soft_cap > 0 && !b.sink_logits.empty() &&
                                b.sliding_window == 7;
                       }});
    }
    {
      WorkloadSpec s = base(KvLayout::hnd, 7, DType::fp16);
      s.model.kv_dtype = DType::fp8_e4m3;
      s.model.kv_scale = KvScaleGranularity::per_tensor;
      s.mask.causal = false;
      s.model.sink_logits = {0.5, -1, 2, 0, 1, 3};
      s.model.attention_sinks = true;
      specs.push_back({s, [](const Batch& b) {
                         return b.k_scales.size() == 1 && !b.causal && b.sink_logits.size() == 6 &&
                                b.sink_logits[2] == 2.0f;
                       }});
    }
    {
      WorkloadSpec s = base(KvLayout::nhd, 1, DType::bf16);
      BlockSparseSpec sparse;
      sparse.block_size = 4;
      sparse.local_blocks = 2;
      sparse.vertical_stride = 3;
      s.mask.block_sparse = sparse;
      s.model.logits_soft_cap = 30.0;
      specs.push_back({s, [](const Batch& b) { return b.block_sparse.has_value(); }});
    }
    {
      WorkloadSpec s = base(KvLayout::nhd, 16, DType::bf16);
      ExplicitMaskSpec mask;
      mask.kind = ExplicitMaskKind::random;
      mask.density = 0.3;
      s.mask.explicit_mask = mask;
      specs.push_back({s, [](const Batch& b) { return b.explicit_mask.has_value(); }});
    }
    {
      WorkloadSpec s = base(KvLayout::hnd, 3, DType::bf16);
      s.kv_cache.allocation = PageAllocation::shared_prefix;
      s.sequences = {{LengthSpec(24), LengthSpec(1), 4}, {LengthSpec(30), LengthSpec(5), 2}};
      s.kv_cache.shared_prefix = SharedPrefixSpec{12, 2};
      specs.push_back({s, [](const Batch& b) {
                         return std::any_of(b.shared_prefix_len.begin(), b.shared_prefix_len.end(),
                                            [](int64_t n) { return n > 0; });
                       }});
    }
    {
      WorkloadSpec s = base(KvLayout::vllm, 5, DType::fp16);
      s.kv_cache.allocation = PageAllocation::fragmented;
      specs.push_back({s, [](const Batch&) { return true; }});
    }
    for (size_t i = 0; i < specs.size(); ++i) {
      const Batch batch = generate_batch(specs[i].spec);
      const std::string what = "trial " + std::to_string(trial) + " spec " + std::to_string(i) +
                               " " + canonical_json(batch.spec);
      ASSERT_TRUE(specs[i].in_force(batch)) << "feature not in the batch: " << what;
      const std::vector<float> paged = paged_attention_reference(Problem::on_host(batch), 2);
      const std::vector<float> dense = naive_dense_attention(batch, 2);
      EXPECT_LT(max_difference(paged, dense), 1e-5) << what;
    }
  }
}

}  // namespace
}  // namespace attn
