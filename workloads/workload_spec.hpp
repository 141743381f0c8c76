// WorkloadSpec: what the user wrote in workload.json, validated. A plain aggregate with a canonical
// JSON form (every default written out, keys sorted) and a content hash of that form.
//
// The reference for every field is docs/workload.md. Schema version 1 is the first slice: model
// shape, KV-cache paging, an explicit list of sequences and a data seed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/dtype.hpp"

namespace attn {

inline constexpr int kWorkloadSchemaVersion = 1;

// Where a page's tokens and heads sit in the paged K/V pools.
enum class KvLayout {
  nhd,  // [pages, page_size, kv_heads, head_dim] (vLLM's flash layout)
  hnd,  // [pages, kv_heads, page_size, head_dim]
};
std::string to_string(KvLayout layout);
std::optional<KvLayout> kv_layout_from_string(const std::string& text);

// How page ids are handed out to sequences.
enum class PageAllocation {
  sequential,  // sequence 0 gets pages 0..n0-1, sequence 1 the next ones, ...
  shuffled,    // a seeded random permutation of the pool: neighbours in a sequence are far apart
};
std::string to_string(PageAllocation allocation);
std::optional<PageAllocation> page_allocation_from_string(const std::string& text);

struct ModelShape {
  int num_q_heads = 0;
  int num_kv_heads = 0;  // divides num_q_heads; the ratio is the GQA group size
  int head_dim = 0;
  DType dtype = DType::bf16;            // Q, K, V and output
  std::optional<double> softmax_scale;  // default 1/sqrt(head_dim)
};

struct KvCacheSpec {
  int page_size = 16;  // tokens per page, 1..256
  KvLayout layout = KvLayout::nhd;
  PageAllocation allocation = PageAllocation::shuffled;
};

// `count` sequences, each with `context_len` tokens already in the cache and `query_len` new
// tokens. The new tokens' keys and values are in the cache too (written before attention, as a
// serving engine does), so a sequence attends over kv_len = context_len + query_len keys; new token
// i (0-based) sees keys [0, context_len + i] (causal, aligned to the end).
struct SequenceSpec {
  int64_t context_len = 0;
  int64_t query_len = 1;
  int count = 1;
};

struct WorkloadSpec {
  int schema_version = kWorkloadSchemaVersion;
  std::string name;
  std::string description;
  ModelShape model;
  KvCacheSpec kv_cache;
  std::vector<SequenceSpec> sequences;
  uint64_t seed = 0;

  double effective_softmax_scale() const;
  int group_size() const { return model.num_q_heads / model.num_kv_heads; }
};

// Parses and validates workload JSON text. `source` names the input in messages (a path or
// "preset:default"). Throws InputError listing every problem found: a syntax error with its line
// and column, a wrong value with its JSON pointer and the rule it breaks. Rejects duplicate keys,
// unknown keys, and inputs that are too large or too deeply nested.
WorkloadSpec parse_workload(std::string_view text, const std::string& source);

// Reads the file and parses it; an unreadable file is an InputError naming the path.
WorkloadSpec load_workload_file(const std::string& path);

// The canonical form: every field written, defaults included, keys sorted.
nlohmann::json to_json(const WorkloadSpec& spec);
std::string canonical_json(const WorkloadSpec& spec);
// SHA-256 of the canonical JSON, hex.
std::string content_hash(const WorkloadSpec& spec);

}  // namespace attn
