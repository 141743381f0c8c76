// Random decode shapes and lengths for the paged_decode GPU tests: GQA ratios, head dims, dtypes,
// page sizes (odd ones included), both layouts and allocations, and uneven lengths with edge cases
// (context 0: a single key; lengths one past a page).
#pragma once

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "kernels/variant.hpp"
#include "tests/kernels/random_draws.hpp"
#include "tests/test_support.hpp"

namespace attn::testing {

// The cases of the paged_decode tests of head dims 80, 96 and 192: each head dim in every KV dtype
// (bf16, fp16; fp8 per tensor with bf16 Q, per head with fp16 Q), both layouts and page sizes 1,
// 16 and 12, over `q_heads` / `kv_heads` heads with shuffled pages: 3 x 4 x 2 x 3 = 72 shapes.
struct OtherHeadDimCase {
  SpecShape shape;
  int fp8 = 0;  // 0: K/V of Q's dtype; 1: fp8 per tensor; 2: fp8 per head
};
inline std::vector<OtherHeadDimCase> other_head_dim_cases(int q_heads, int kv_heads) {
  std::vector<OtherHeadDimCase> cases;
  const std::pair<DType, int> kvs[] = {
      {DType::bf16, 0}, {DType::fp16, 0}, {DType::bf16, 1}, {DType::fp16, 2}};
  for (int head_dim : {80, 96, 192}) {
    for (const auto& [dtype, fp8] : kvs) {
      for (KvLayout layout : {KvLayout::nhd, KvLayout::hnd}) {
        for (int page_size : {1, 16, 12}) {
          OtherHeadDimCase c;
          c.shape.q_heads = q_heads;
          c.shape.kv_heads = kv_heads;
          c.shape.head_dim = head_dim;
          c.shape.dtype = dtype;
          c.shape.layout = layout;
          c.shape.page_size = page_size;
          c.shape.allocation = PageAllocation::shuffled;
          c.shape.seed = uint64_t(head_dim * 1000 + page_size * 10 + fp8);
          c.fp8 = fp8;
          cases.push_back(c);
        }
      }
    }
  }
  return cases;
}

// Head dims the paged_decode GPU kernels run (every variant runs every one).
inline std::vector<int> every_decode_head_dim() {
  return {64, 80, 96, 128, 192, 256};
}

// A random shape whose GQA group size is one of `groups` and head dim one of `head_dims`.
inline SpecShape random_decode_shape(std::mt19937_64& rng, const std::vector<int>& groups,
                                     const std::vector<int>& head_dims) {
  SpecShape shape;
  shape.kv_heads = pick(rng, std::vector<int>{1, 2, 4});
  shape.q_heads = shape.kv_heads * pick(rng, groups);
  shape.head_dim = pick(rng, head_dims);
  shape.dtype = pick(rng, std::vector<DType>{DType::bf16, DType::fp16});
  shape.page_size = pick(rng, std::vector<int>{1, 2, 5, 16, 31, 64, 128, 256});
  shape.layout = pick(rng, std::vector<KvLayout>{KvLayout::nhd, KvLayout::hnd});
  shape.allocation =
      pick(rng, std::vector<PageAllocation>{PageAllocation::sequential, PageAllocation::shuffled});
  shape.seed = rng();
  return shape;
}

// 1 to 9 context lengths drawn from edge cases and page-boundary neighbours.
inline std::vector<int64_t> random_decode_contexts(std::mt19937_64& rng) {
  std::vector<int64_t> contexts;
  const int seqs = std::uniform_int_distribution<int>(1, 9)(rng);
  for (int s = 0; s < seqs; ++s) {
    contexts.push_back(
        pick(rng, std::vector<int64_t>{0, 1, 2, 15, 16, 17, 97, 255, 256, 1031, 2047, 4099}));
  }
  return contexts;
}

}  // namespace attn::testing
