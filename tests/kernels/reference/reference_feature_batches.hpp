// Small batches, each with a set of the features the references implement, for the tests that
// hold the naive GPU reference to the CPU one: the CPU test of its rules (gpu_reference_test.cpp)
// and the GPU test of its output (gpu_reference_gpu_test.cpp). Together they cover every family's
// batches (decode, prefix prefill, dense prefill, block-sparse, explicit masks) and every feature
// (layouts, page sizes, head dims, GQA ratios, fp16, fp8 per tensor and per head, soft-cap, sinks,
// sliding window, non-causal, shared prefixes, rows that see no key).
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "tests/test_support.hpp"
#include "workloads/batch.hpp"

namespace attn::testing {

struct FeatureBatch {
  std::string what;
  Batch batch;
};

// Draws lengths from `rng`; the same seed gives the same batches.
inline std::vector<FeatureBatch> reference_feature_batches(uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&](std::initializer_list<int64_t> values) {
    return *(values.begin() + std::uniform_int_distribution<size_t>(0, values.size() - 1)(rng));
  };
  auto shape = [&](int q_heads, int kv_heads, int head_dim, DType dtype, int page,
                   KvLayout layout) {
    SpecShape s;
    s.q_heads = q_heads;
    s.kv_heads = kv_heads;
    s.head_dim = head_dim;
    s.dtype = dtype;
    s.page_size = page;
    s.layout = layout;
    s.seed = rng();
    return s;
  };
  auto decode = [&](int n) {
    std::vector<std::pair<int64_t, int64_t>> seqs;
    for (int i = 0; i < n; ++i) seqs.push_back({pick({0, 1, 17, 64, 129, 300}), 1});
    return seqs;
  };
  auto prefix_prefill = [&](int n) {
    std::vector<std::pair<int64_t, int64_t>> seqs;
    for (int i = 0; i < n; ++i) seqs.push_back({pick({0, 5, 33, 100}), pick({1, 7, 16, 41})});
    return seqs;
  };
  auto dense_prefill = [&](int n) {
    std::vector<std::pair<int64_t, int64_t>> seqs;
    for (int i = 0; i < n; ++i) seqs.push_back({0, pick({1, 31, 64, 97, 150})});
    return seqs;
  };
  auto fp8 = [](WorkloadSpec& s, KvScaleGranularity granularity) {
    s.model.kv_dtype = DType::fp8_e4m3;
    s.model.kv_scale = granularity;
  };

  std::vector<std::pair<std::string, WorkloadSpec>> specs;
  auto add = [&](std::string what, WorkloadSpec spec) {
    specs.emplace_back(std::move(what), std::move(spec));
  };
  add("decode bf16 nhd page 16 gqa 4",
      make_spec(shape(8, 2, 128, DType::bf16, 16, KvLayout::nhd), decode(5)));
  {
    WorkloadSpec s = make_spec(shape(8, 8, 128, DType::fp16, 8, KvLayout::vllm), decode(4));
    fp8(s, KvScaleGranularity::per_head);
    s.model.logits_soft_cap = 30.0;
    s.model.attention_sinks = true;
    s.model.sliding_window = 50;
    add("decode fp16 fp8-per-head vllm soft-cap sinks window", s);
  }
  {
    WorkloadSpec s = make_spec(shape(4, 1, 64, DType::bf16, 1, KvLayout::hnd), decode(3));
    fp8(s, KvScaleGranularity::per_tensor);
    add("decode bf16 fp8-per-tensor hnd page 1 mqa", s);
  }
  add("prefix prefill bf16 vllm head_dim 80",
      make_spec(shape(6, 2, 80, DType::bf16, 16, KvLayout::vllm), prefix_prefill(3)));
  {
    WorkloadSpec s = make_spec(shape(6, 3, 96, DType::bf16, 5, KvLayout::hnd), prefix_prefill(3));
    fp8(s, KvScaleGranularity::per_head);
    s.model.logits_soft_cap = 5.0;
    s.model.sink_logits = {0.5, -1, 2, 0, 1, 3};
    s.model.attention_sinks = true;
    s.model.sliding_window = 9;
    add("prefix prefill fp8-per-head hnd soft-cap explicit sinks window head_dim 96", s);
  }
  add("dense prefill causal fp16 nhd head_dim 256",
      make_spec(shape(4, 2, 256, DType::fp16, 64, KvLayout::nhd), dense_prefill(2)));
  {
    WorkloadSpec s = make_spec(shape(6, 3, 192, DType::bf16, 256, KvLayout::nhd), dense_prefill(2));
    s.mask.causal = false;
    add("dense prefill non-causal head_dim 192 page 256", s);
  }
  {
    WorkloadSpec s = make_spec(shape(4, 2, 64, DType::bf16, 16, KvLayout::nhd), dense_prefill(3));
    BlockSparseSpec sparse;
    sparse.block_size = 16;
    sparse.local_blocks = 2;
    sparse.vertical_stride = 3;
    s.mask.block_sparse = sparse;
    add("block-sparse prefill", s);
  }
  {
    WorkloadSpec s = make_spec(shape(8, 2, 128, DType::fp16, 3, KvLayout::hnd), prefix_prefill(3));
    BlockSparseSpec sparse;
    sparse.block_size = 8;
    sparse.local_blocks = 1;
    sparse.vertical_stride = 4;
    sparse.head_sliding_step = 2;
    s.mask.block_sparse = sparse;
    s.model.logits_soft_cap = 20.0;
    s.model.sliding_window = 40;
    add("block-sparse chunked prefill soft-cap window head sliding", s);
  }
  {
    WorkloadSpec s = make_spec(shape(4, 4, 64, DType::bf16, 16, KvLayout::nhd), decode(4));
    BlockSparseSpec sparse;
    sparse.block_size = 16;
    sparse.local_blocks = 2;
    sparse.vertical_stride = 2;
    sparse.homo_head = true;
    s.mask.block_sparse = sparse;
    add("block-sparse decode homo_head", s);
  }
  {
    WorkloadSpec s = make_spec(shape(4, 2, 64, DType::bf16, 16, KvLayout::nhd), prefix_prefill(3));
    ExplicitMaskSpec mask;
    mask.kind = ExplicitMaskKind::random;
    mask.density = 0.3;
    s.mask.explicit_mask = mask;
    s.model.attention_sinks = true;
    add("explicit random mask with sinks", s);
  }
  {
    WorkloadSpec s = make_spec(shape(4, 1, 128, DType::fp16, 16, KvLayout::vllm),
                               {{pick({0, 20, 77}), 6}, {pick({3, 50}), 6}});
    ExplicitMaskSpec mask;
    mask.kind = ExplicitMaskKind::tree;
    mask.tree_parents = {-1, 0, 0, 1, 1, 2};
    s.mask.explicit_mask = mask;
    fp8(s, KvScaleGranularity::per_tensor);
    add("explicit tree mask fp8 vllm", s);
  }
  {
    WorkloadSpec s = make_spec(shape(4, 2, 64, DType::bf16, 7, KvLayout::hnd), {{30, 8}, {0, 8}});
    ExplicitMaskSpec mask;
    mask.kind = ExplicitMaskKind::branches;
    mask.branches = 2;
    s.mask.explicit_mask = mask;
    add("explicit branches mask", s);
  }
  {
    WorkloadSpec s = make_spec(shape(2, 2, 64, DType::bf16, 4, KvLayout::nhd), prefix_prefill(2));
    ExplicitMaskSpec mask;
    mask.kind = ExplicitMaskKind::causal;
    s.mask.explicit_mask = mask;
    add("explicit causal mask", s);
  }
  {
    WorkloadSpec s = make_spec(shape(4, 2, 64, DType::bf16, 3, KvLayout::hnd), {});
    s.kv_cache.allocation = PageAllocation::shared_prefix;
    s.sequences = {{LengthSpec(24), LengthSpec(1), 4}, {LengthSpec(30), LengthSpec(5), 2}};
    s.kv_cache.shared_prefix = SharedPrefixSpec{12, 2};
    add("shared prefix hnd page 3", s);
  }
  {
    WorkloadSpec s = make_spec(shape(4, 2, 128, DType::fp16, 5, KvLayout::vllm), prefix_prefill(3));
    s.kv_cache.allocation = PageAllocation::fragmented;
    add("fragmented pages vllm fp16", s);
  }
  {
    WorkloadSpec s = make_spec(shape(4, 2, 192, DType::bf16, 16, KvLayout::vllm), prefix_prefill(3));
    s.model.v_head_dim = 128;
    add("narrow V: Q/K 192, V 128, vllm prefix prefill", s);
  }
  {
    WorkloadSpec s = make_spec(shape(4, 4, 128, DType::fp16, 7, KvLayout::hnd), dense_prefill(2));
    s.model.v_head_dim = 64;
    fp8(s, KvScaleGranularity::per_head);
    add("narrow V: Q/K 128, V 64, fp8-per-head hnd dense prefill", s);
  }

  std::vector<FeatureBatch> out;
  for (auto& [what, spec] : specs) out.push_back({what, generate_batch(spec)});
  {
    // Query 1 of a 4-key sequence sees nothing (zero output, -inf LSE), with a sink.
    Batch b = generate_batch(make_spec(shape(2, 1, 64, DType::bf16, 3, KvLayout::nhd), {{2, 2}}));
    ExplicitMask mask;
    mask.offsets = {0, 8};
    mask.bits = {1, 1, 1, 0, 0, 0, 0, 0};
    b.explicit_mask = mask;
    b.sink_logits = {1.0f, -2.0f};
    out.push_back({"a row that sees no key, with sinks", std::move(b)});
  }
  return out;
}

}  // namespace attn::testing
