// Small multi-head latent attention batches for the mla_decode tests, built from workload JSON.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "workloads/batch.hpp"

namespace attn::testing {

struct LatentShape {
  int q_heads = 4;
  int kv_lora_rank = 64;
  int qk_rope_head_dim = 16;
  int qk_nope_head_dim = 128;
  int page_size = 8;
  std::string kv_dtype;  // "": Q's dtype; or "fp8_e4m3"
  bool causal = true;
  std::string allocation = "shuffled";
  std::vector<std::pair<int64_t, int64_t>> sequences = {{13, 1}, {30, 3}, {0, 2}, {64, 4}};
};

inline nlohmann::json latent_workload_json(const LatentShape& shape) {
  nlohmann::json model = {{"attention", "mla"},
                          {"num_q_heads", shape.q_heads},
                          {"kv_lora_rank", shape.kv_lora_rank},
                          {"qk_rope_head_dim", shape.qk_rope_head_dim},
                          {"qk_nope_head_dim", shape.qk_nope_head_dim},
                          {"dtype", "bf16"}};
  if (!shape.kv_dtype.empty()) model["kv_dtype"] = shape.kv_dtype;
  nlohmann::json sequences = nlohmann::json::array();
  for (const auto& [context, query] : shape.sequences) {
    sequences.push_back({{"context_len", context}, {"query_len", query}});
  }
  nlohmann::json spec = {
      {"schema_version", 2},
      {"name", "latent"},
      {"model", model},
      {"kv_cache",
       {{"page_size", shape.page_size}, {"layout", "NHD"}, {"allocation", shape.allocation}}},
      {"sequences", sequences},
      {"seed", 11}};
  if (!shape.causal) spec["mask"] = {{"causal", false}};
  return spec;
}

inline Batch latent_batch(const LatentShape& shape) {
  return generate_batch(parse_workload(latent_workload_json(shape).dump(), "latent"));
}

// A small batch at the given widths for the gating tests: sequences of 300, 0, 1 and 64 cached
// keys with 1, 1, 2 and 4 query tokens; Q's dtype `dtype`, the cache's `kv_dtype` ("": Q's).
inline Batch small_latent_batch(int q_heads, int rank, int rope, int page_size,
                                const std::string& kv_dtype = "",
                                const std::string& dtype = "bf16") {
  LatentShape shape;
  shape.q_heads = q_heads;
  shape.kv_lora_rank = rank;
  shape.qk_rope_head_dim = rope;
  shape.page_size = page_size;
  shape.kv_dtype = kv_dtype;
  shape.sequences = {{300, 1}, {0, 1}, {1, 2}, {64, 4}};
  nlohmann::json spec = latent_workload_json(shape);
  spec["model"]["dtype"] = dtype;
  return generate_batch(parse_workload(spec.dump(), "latent"));
}

}  // namespace attn::testing
