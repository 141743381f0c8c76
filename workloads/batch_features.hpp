// The features a batch uses: every property of a workload that changes what a kernel must compute
// or how it must read its inputs, each under a stable name. A kernel variant declares the features
// it implements (kernels/feature_set.hpp) and is declined for every other one the batch uses, so a
// feature that a kernel does not know of is refused, never silently ignored (docs/architecture.md,
// "The feature contract").
//
// Three kinds of feature:
//   flag    used or not (sliding window, logits soft-cap, attention sinks, shared prefix)
//   choice  one named value per batch (query shape, mask, KV layout, Q dtype, KV dtype)
//   number  one integer per batch (head dim, V's head dim, page size)
// Every batch reports its query shape, mask, KV layout, dtype, head dim (mla: kv_lora_rank and
// qk_rope_head_dim) and page size; the flags, the KV dtype and V's head dim only when used.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "workloads/batch.hpp"

namespace attn {

// The stable names of the features (used in declarations, tests and docs; never change one).
namespace feature {
// choice: "decode" (every sequence one query token), "prefill" (every sequence more than one),
// "mixed" (some of each)
inline constexpr char kQueries[] = "queries";
// choice: "causal", "non_causal", "block_sparse" (a block-sparse layout, causal within kept
// blocks), "block_sparse_non_causal" (only in batches built in code: the workload schema needs
// causal with a layout), "explicit" (an explicit mask decides alone)
inline constexpr char kMask[] = "mask";
// flag: a sliding window that hides keys (shorter than the longest sequence; none with an
// explicit mask, which decides alone)
inline constexpr char kSlidingWindow[] = "sliding_window";
inline constexpr char kLogitsSoftCap[] = "logits_soft_cap";   // flag
inline constexpr char kAttentionSinks[] = "attention_sinks";  // flag
// flag: sequences whose first pages are shared with another sequence (allocation shared_prefix)
inline constexpr char kSharedPrefix[] = "shared_prefix";
inline constexpr char kKvLayout[] = "kv_layout";  // choice: "nhd", "hnd", "vllm"
inline constexpr char kDtype[] = "dtype";         // choice: Q and output, "bf16", "fp16"
// choice, reported only when K/V are not of Q's dtype: "fp8_e4m3.per_tensor" or
// "fp8_e4m3.per_head" (the scales' granularity), or "bf16" / "fp16" (the other 16-bit dtype: only
// in batches built in code, the workload schema gives K/V Q's dtype or fp8_e4m3)
inline constexpr char kKvDtype[] = "kv_dtype";
inline constexpr char kHeadDim[] = "head_dim";  // number: Q and K
// number, reported only when V (and the output) are narrower than Q and K: V's head dim
inline constexpr char kVHeadDim[] = "v_head_dim";
inline constexpr char kPageSize[] = "page_size";  // number: tokens per page
// flag: multi-head latent attention (attention "mla"): Q rows [q_nope absorbed | q_rope] against
// one shared latent cache row [c | k_rope] per token, output c-weighted (workload_spec.hpp). An
// mla batch reports kv_lora_rank and qk_rope_head_dim instead of head_dim.
inline constexpr char kLatentAttention[] = "latent_attention";
inline constexpr char kKvLoraRank[] = "kv_lora_rank";         // number, mla only
inline constexpr char kQkRopeHeadDim[] = "qk_rope_head_dim";  // number, mla only
}  // namespace feature

enum class FeatureKind { flag, choice, number };
std::string to_string(FeatureKind kind);

// One feature a batch uses.
struct FeatureUse {
  std::string name;               // feature::k...
  std::string value;              // a choice's value or a number in decimal; empty for a flag
  std::optional<int64_t> number;  // a number feature's value
  std::string description;        // for users: "sliding window", "head dim 80"

  static FeatureUse flag(std::string name, std::string description);
  static FeatureUse choice(std::string name, std::string value, std::string description);
  static FeatureUse integer(std::string name, int64_t number, std::string description);
};

struct BatchFeatures {
  std::vector<FeatureUse> uses;  // in schema order

  // The use of a feature, or null when the batch does not use it.
  const FeatureUse* find(const std::string& name) const;
};

// What `batch` uses, read from the batch's own fields (a test that edits a field of a generated
// batch changes what it reports). O(num_seqs).
BatchFeatures batch_features(const Batch& batch);

// One feature of the schema and every value the workload schema lets a batch use (for a choice:
// the names; for a number: the integers; batches built in code may report others, and no variant
// declares those).
struct FeatureInfo {
  std::string name;
  FeatureKind kind;
  std::string description;           // "sliding window", "query shape"
  std::vector<std::string> choices;  // choice
  std::vector<int64_t> numbers;      // number
};
const std::vector<FeatureInfo>& feature_schema();
const FeatureInfo* find_feature(const std::string& name);

// Where each field of workload.json goes: to the feature a batch reports for it, or to none, with
// the reason (a label, a seed, a capacity: nothing a kernel must implement). A CPU test walks the
// canonical JSON of workloads that set every field and fails on a field missing here, so a new
// workload field cannot arrive without a decision about its feature.
struct WorkloadFieldRole {
  std::string path;     // JSON pointer without array indices ("/model/sliding_window"); it
                        // covers every field below it
  std::string feature;  // feature::k..., or empty: not a feature
  std::string why_not;  // when `feature` is empty: why no kernel must implement it
};
const std::vector<WorkloadFieldRole>& workload_field_roles();

}  // namespace attn
