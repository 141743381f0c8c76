// Builders shared by tests: workload specs written in code instead of JSON files.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "workloads/batch.hpp"
#include "workloads/workload_spec.hpp"

namespace attn::testing {

struct SpecShape {
  int q_heads = 8;
  int kv_heads = 2;
  int head_dim = 64;
  DType dtype = DType::bf16;
  int page_size = 16;
  KvLayout layout = KvLayout::nhd;
  PageAllocation allocation = PageAllocation::shuffled;
  uint64_t seed = 1;
};

// 6 q heads over 2 kv heads (GQA 3: no power of two), the rest as given: the shape most kernel
// tests use to catch a group size hard-wired somewhere.
inline SpecShape gqa3_shape(int head_dim, DType dtype, uint64_t seed) {
  SpecShape shape;
  shape.q_heads = 6;
  shape.kv_heads = 2;
  shape.head_dim = head_dim;
  shape.dtype = dtype;
  shape.seed = seed;
  return shape;
}

// One sequence per (context_len, query_len) pair.
inline WorkloadSpec make_spec(const SpecShape& shape,
                              const std::vector<std::pair<int64_t, int64_t>>& sequences,
                              const std::string& name = "test") {
  WorkloadSpec spec;
  spec.name = name;
  spec.model.num_q_heads = shape.q_heads;
  spec.model.num_kv_heads = shape.kv_heads;
  spec.model.head_dim = shape.head_dim;
  spec.model.dtype = shape.dtype;
  spec.kv_cache.page_size = shape.page_size;
  spec.kv_cache.layout = shape.layout;
  spec.kv_cache.allocation = shape.allocation;
  for (const auto& [context, query] : sequences) spec.sequences.push_back({context, query, 1});
  spec.seed = shape.seed;
  return spec;
}

// Decode: one query token per sequence with the given context lengths.
inline WorkloadSpec make_decode_spec(const SpecShape& shape, const std::vector<int64_t>& contexts) {
  std::vector<std::pair<int64_t, int64_t>> sequences;
  for (int64_t c : contexts) sequences.push_back({c, 1});
  return make_spec(shape, sequences, "decode-test");
}

}  // namespace attn::testing
