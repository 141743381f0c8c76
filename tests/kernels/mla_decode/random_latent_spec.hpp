// Random latent (mla) workloads for the mla_decode GPU tests: q head counts 1 to 128, latent widths
// a GPU variant takes, page sizes 1 to 256, lengths with 0 and 1 keys, 1 to 4 query tokens, causal
// or not, bf16 or fp16, a latent cache of Q's dtype or (three draws in ten) fp8 e4m3 with one
// scale, sized so that the CPU reference stays under a second or two of the cores.
#pragma once

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/kernels/mla_decode/latent_batch.hpp"
#include "tests/kernels/paged_decode/random_decode_batch.hpp"

namespace attn::testing {

// `shape`'s workload with 1 to 12 sequences of up to 1, 2 or 4 query tokens, contexts drawn from
// `edge_contexts` or (six draws in ten) uniformly within a key budget that keeps the CPU reference
// under a second or two; Q in bf16 or (three draws in ten) fp16; a random seed.
inline nlohmann::json latent_spec_with_random_lengths(std::mt19937_64& rng, LatentShape shape,
                                                      const std::vector<int64_t>& edge_contexts) {
  const int max_query = pick(rng, std::vector<int>{1, 1, 2, 4});
  const double width = shape.kv_lora_rank + shape.qk_rope_head_dim;
  const int64_t key_budget = int64_t(6e7 / (width * shape.q_heads * max_query));
  const int seqs = std::uniform_int_distribution<int>(1, 12)(rng);
  shape.sequences.clear();
  for (int s = 0; s < seqs; ++s) {
    int64_t context = pick(rng, edge_contexts);
    if (std::bernoulli_distribution(0.6)(rng)) {
      context =
          std::uniform_int_distribution<int64_t>(0, std::max<int64_t>(1, key_budget / seqs))(rng);
    }
    const int64_t query = std::uniform_int_distribution<int64_t>(1, max_query)(rng);
    shape.sequences.push_back({context, query});
  }
  nlohmann::json spec = testing::latent_workload_json(shape);
  if (std::bernoulli_distribution(0.3)(rng)) spec["model"]["dtype"] = "fp16";
  spec["seed"] = std::uniform_int_distribution<int>(1, 1 << 30)(rng);
  return spec;
}

inline nlohmann::json random_latent_spec(std::mt19937_64& rng) {
  testing::LatentShape shape;
  shape.q_heads = pick(rng, std::vector<int>{1, 2, 8, 16, 22, 64, 128});
  shape.kv_lora_rank = pick(rng, std::vector<int>{512, 512, 256, 128});
  shape.qk_rope_head_dim = pick(rng, std::vector<int>{64, 64, 128});
  shape.page_size = pick(rng, std::vector<int>{1, 16, 64, 64, 100, 256});
  shape.causal = std::bernoulli_distribution(0.8)(rng);
  shape.allocation = pick(rng, std::vector<std::string>{"shuffled", "sequential", "fragmented"});
  if (std::bernoulli_distribution(0.3)(rng)) shape.kv_dtype = "fp8_e4m3";
  return latent_spec_with_random_lengths(rng, shape, {0, 1, 2, 63, 64, 65});
}

}  // namespace attn::testing
