// Batches built by hand for the mask tests: lengths and mask fields set directly, so that the
// masks are tested on their own, whatever generate_batch does with a spec's mask object.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "workloads/batch.hpp"

namespace attn::test {

struct SeqShape {
  int64_t context_len = 0;
  int64_t query_len = 1;
};

inline Batch hand_batch(const std::vector<SeqShape>& shapes, int num_q_heads = 4,
                        int num_kv_heads = 2, bool causal = true, int64_t sliding_window = 0,
                        uint64_t seed = 11) {
  Batch b;
  b.spec.name = "mask-test";
  b.spec.model.num_q_heads = num_q_heads;
  b.spec.model.num_kv_heads = num_kv_heads;
  b.spec.model.head_dim = 64;
  b.spec.mask.causal = causal;
  b.spec.seed = seed;
  b.data_seed = seed;
  b.causal = causal;
  b.sliding_window = sliding_window;
  b.num_seqs = int(shapes.size());
  b.cu_seqlens_q.push_back(0);
  b.cu_seqlens_kv.push_back(0);
  for (const SeqShape& shape : shapes) {
    b.context_lens.push_back(shape.context_len);
    b.query_lens.push_back(shape.query_len);
    b.kv_lens.push_back(shape.context_len + shape.query_len);
    b.cu_seqlens_q.push_back(b.cu_seqlens_q.back() + shape.query_len);
    b.cu_seqlens_kv.push_back(b.cu_seqlens_kv.back() + shape.context_len + shape.query_len);
  }
  b.total_q = b.cu_seqlens_q.back();
  b.total_kv = b.cu_seqlens_kv.back();
  return b;
}

// A few sequences of the shapes masks go wrong on: decode (one query after a context), prefill
// (query == kv), chunked prefill (a query after a context), lengths that are not multiples of
// anything in particular, and the occasional empty context or single token.
inline std::vector<SeqShape> random_shapes(std::mt19937& rng, int max_len = 70) {
  std::uniform_int_distribution<int> count(1, 4);
  std::uniform_int_distribution<int> kind(0, 3);
  std::uniform_int_distribution<int64_t> len(1, max_len);
  std::vector<SeqShape> shapes(size_t(count(rng)));
  for (SeqShape& shape : shapes) {
    switch (kind(rng)) {
      case 0:  // decode
        shape = {len(rng), 1};
        break;
      case 1:  // prefill
        shape = {0, len(rng)};
        break;
      case 2:  // chunked prefill
        shape = {len(rng), len(rng)};
        break;
      default:  // a short context and a few new tokens
        shape = {len(rng) % 5, 1 + len(rng) % 7};
        break;
    }
  }
  return shapes;
}

// Writes `text` to a fresh file under the test temp directory and returns its path.
inline std::string write_temp_file(const std::string& name, const std::string& text) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "attn_mask_tests";
  std::filesystem::create_directories(dir);
  const std::filesystem::path path = dir / name;
  std::ofstream(path, std::ios::binary) << text;
  return path.string();
}

}  // namespace attn::test
