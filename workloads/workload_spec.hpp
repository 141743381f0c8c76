// WorkloadSpec: what the user wrote in workload.json, validated. A plain aggregate with a canonical
// JSON form (every default written out, keys sorted) and a content hash of that form.
//
// The reference for every field is docs/workload.md.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/dtype.hpp"
#include "workloads/trace_file.hpp"

namespace attn {

inline constexpr int kWorkloadSchemaVersion = 2;  // version 1 files are still accepted

// Where a page's tokens and heads sit in the paged K/V pools.
enum class KvLayout {
  nhd,   // [pages, page_size, kv_heads, head_dim] (vLLM's flash layout)
  hnd,   // [pages, kv_heads, page_size, head_dim]
  vllm,  // vLLM's paged-attention layout: K [pages, kv_heads, head_dim / x, page_size, x] with
         // x = 16 bytes / element size, V [pages, kv_heads, head_dim, page_size]
};
std::string to_string(KvLayout layout);
std::optional<KvLayout> kv_layout_from_string(const std::string& text);

// How page ids are handed out to sequences.
enum class PageAllocation {
  sequential,     // sequence 0 gets pages 0..n0-1, sequence 1 the next ones, ...
  shuffled,       // a seeded random permutation of the pool: neighbours in a sequence are far apart
  fragmented,     // pages come off a free list left behind by a simulated serving history
  shared_prefix,  // groups of sequences point at the same pages for a common prefix
};
std::string to_string(PageAllocation allocation);
std::optional<PageAllocation> page_allocation_from_string(const std::string& text);

// Granularity of the dequantisation scales of an fp8 KV cache.
enum class KvScaleGranularity { per_tensor, per_head };
std::string to_string(KvScaleGranularity granularity);
std::optional<KvScaleGranularity> kv_scale_granularity_from_string(const std::string& text);

// Which attention the model computes (docs/workload.md, "Multi-head latent attention").
enum class AttentionKind {
  mha,  // Q, K and V heads of head_dim: multi-head, grouped-query or multi-query attention
  mla,  // multi-head latent attention (DeepSeek-V2/V3) in its absorbed form: every token caches
        // one latent vector of kv_lora_rank and a rotary key of qk_rope_head_dim, shared by all
        // q heads; a q head's output is kv_lora_rank wide (in latent space)
};
std::string to_string(AttentionKind kind);
std::optional<AttentionKind> attention_kind_from_string(const std::string& text);

struct ModelShape {
  int num_q_heads = 0;
  int num_kv_heads = 0;  // divides num_q_heads; the ratio is the GQA group size (mla: 1)
  // The width of a Q row and of a cached K row, and of V unless v_head_dim says otherwise. mla:
  // kv_lora_rank + qk_rope_head_dim (a latent cache row is [c | k_rope], a Q row
  // [q_nope absorbed | q_rope]).
  int head_dim = 0;
  DType dtype = DType::bf16;      // Q and output, and K/V unless kv_dtype says otherwise
  std::optional<DType> kv_dtype;  // unset: same as dtype; or DType::fp8_e4m3
  KvScaleGranularity kv_scale = KvScaleGranularity::per_tensor;  // fp8 KV only
  // Default 1/sqrt(head_dim); mla: 1/sqrt(qk_nope_head_dim + qk_rope_head_dim) of the original
  // model (the absorbed form keeps the un-absorbed model's scale).
  std::optional<double> softmax_scale;
  std::optional<double> logits_soft_cap;  // > 0: logits = cap * tanh(logits / cap)
  std::optional<int64_t> sliding_window;  // >= 1: a query at position p sees keys p-w+1 .. p
  // Attention sinks (gpt-oss style): one extra logit per q head that joins the softmax
  // denominator and contributes no value. `seeded`: drawn from the seed; or explicit values.
  bool attention_sinks = false;
  std::vector<double> sink_logits;  // [num_q_heads] when given explicitly
  // V and the output, when narrower than head_dim (DeepSeek's MLA prefill: Q/K 192, V 128). Unset
  // (also when the file gives head_dim again): V is head_dim wide. Never set for mla (its V is
  // the latent: kv_lora_rank). Last but for the mla fields, so that the positional initialisers
  // of the fields above keep their meaning.
  std::optional<int> v_head_dim;
  // The attention the model computes (last, so that code building a ModelShape from its first
  // fields keeps working), and for mla only (0 otherwise): the latent width, the rotary width, and
  // the width of the original model's non-rotary q/k head part (for the default softmax scale
  // only; unset: kDefaultQkNopeHeadDim).
  AttentionKind attention = AttentionKind::mha;
  int kv_lora_rank = 0;
  int qk_rope_head_dim = 0;
  std::optional<int> qk_nope_head_dim;

  DType effective_kv_dtype() const { return kv_dtype.value_or(dtype); }
  bool latent() const { return attention == AttentionKind::mla; }
  // The width of a V row and of an output row: v_head_dim, else head_dim; kv_lora_rank for mla
  // (its V is the first kv_lora_rank elements of each latent row).
  int effective_v_head_dim() const {
    return latent() ? kv_lora_rank : v_head_dim.value_or(head_dim);
  }
  // The paged pools: K and V, or mla's one latent pool (its V is the first kv_lora_rank
  // elements of each row).
  int kv_pools() const { return latent() ? 1 : 2; }
};

// The default qk_nope_head_dim of an mla model (DeepSeek-V2, DeepSeek-V3 and Kimi K2).
inline constexpr int kDefaultQkNopeHeadDim = 128;

// Prefix caching: consecutive groups of `group_size` sequences share the pages of their first
// `tokens` tokens (whole pages only; the partial page after them is private).
struct SharedPrefixSpec {
  int64_t tokens = 0;
  int group_size = 2;
};

struct KvCacheSpec {
  int page_size = 16;  // tokens per page, 1..256
  KvLayout layout = KvLayout::nhd;
  PageAllocation allocation = PageAllocation::shuffled;
  std::optional<int64_t> num_pages;  // pool capacity (excluding the poison page); unset: enough
  std::optional<SharedPrefixSpec> shared_prefix;  // required with allocation shared_prefix
};

// A length: a fixed value, or drawn per sequence from a distribution, clamped to [min, max].
enum class LengthDistribution { fixed, uniform, normal, lognormal, zipf };
std::string to_string(LengthDistribution distribution);

struct LengthSpec {
  LengthDistribution distribution = LengthDistribution::fixed;
  int64_t value = 0;      // fixed
  double mean = 0.0;      // normal
  double stddev = 0.0;    // normal
  double median = 0.0;    // lognormal: exp(mu)
  double sigma = 0.0;     // lognormal
  double exponent = 0.0;  // zipf: P(min + k) proportional to 1 / (k + 1)^exponent
  int64_t min = 0;        // uniform range and clamp of the others
  int64_t max = 0;

  LengthSpec() = default;
  LengthSpec(int64_t fixed_value) : value(fixed_value), min(fixed_value), max(fixed_value) {}
  bool is_fixed() const { return distribution == LengthDistribution::fixed; }
};

// Lengths from a trace of requests (a prompt and an output length each; CSV, JSON lines or JSON
// arrays with a column mapping, workloads/trace_file.hpp), turned into sequences caught in one
// phase of serving.
enum class TracePhase {
  prefill,          // context 0, query = prompt
  decode,           // context = prompt + tokens generated so far (seeded), query 1
  chunked_prefill,  // context = a seeded whole number of chunks of the prompt, query = next chunk
};
std::string to_string(TracePhase phase);
std::optional<TracePhase> trace_phase_from_string(const std::string& text);

struct TraceSpec {
  std::string file;           // as written: a path relative to the workload file, or "builtin:NAME"
  std::string resolved_path;  // where `file` was found (not part of the canonical form)
  std::string sha256;         // of the file's bytes, filled when loaded; part of the canonical form
  std::optional<TraceFormat> format;    // as written; unset: from the file name's ending
  std::optional<TraceColumns> columns;  // as written; unset: prompt_len and output_len
  TracePhase phase = TracePhase::decode;
  int64_t first = 0;                              // first row used
  std::optional<int64_t> count;                   // rows used; unset: all from `first`
  int64_t chunk = 0;                              // chunked_prefill only
  std::vector<std::pair<int64_t, int64_t>> rows;  // loaded (prompt_len, output_len)
};

// `count` sequences, each with `context_len` tokens already in the cache and `query_len` new
// tokens. The new tokens' keys and values are in the cache too (written before attention, as a
// serving engine does), so a sequence attends over kv_len = context_len + query_len keys; new token
// i (0-based) sees keys [0, context_len + i] (causal, aligned to the end).
// With `trace` set, the lengths come from the trace instead and count is the rows used.
struct SequenceSpec {
  LengthSpec context_len = LengthSpec(0);
  LengthSpec query_len = LengthSpec(1);
  int count = 1;
  std::optional<TraceSpec> trace;
};

// Block-sparse layout per q head over blocks of `block_size` tokens (seed 003): block (i, j) is
// kept when j <= i and (i - j < local_blocks or (j + h * head_sliding_step + 1) % vertical_stride
// == 0); within a kept diagonal block the mask is causal per token. `homo_head`: every head uses
// head 0's layout. Or a layout read from `file`.
struct BlockSparseSpec {
  int block_size = 64;
  int local_blocks = 0;
  int vertical_stride = 0;
  int head_sliding_step = 1;
  bool homo_head = false;
  std::string file;           // a layout file instead of the parameters (docs/workload.md)
  std::string resolved_path;  // where `file` was found (not part of the canonical form)
  std::string sha256;         // of the file's bytes; part of the canonical form
};

// An explicit (query_len, kv_len) mask per sequence, read by the masked variants.
enum class ExplicitMaskKind {
  causal,    // the causal mask written out (for checking masked against unmasked variants)
  tree,      // speculative-decoding tree: new token i sees the context and its ancestors
  branches,  // the new tokens are `branches` equal causal branches that share the context
  random,    // each (query, key) visible with probability `density`, the diagonal always
  file,      // read from `file`
};
std::string to_string(ExplicitMaskKind kind);
std::optional<ExplicitMaskKind> explicit_mask_kind_from_string(const std::string& text);

struct ExplicitMaskSpec {
  ExplicitMaskKind kind = ExplicitMaskKind::causal;
  std::vector<int> tree_parents;  // tree: parent of each new token (-1: the context)
  int branches = 1;
  double density = 0.5;
  std::string file;
  std::string resolved_path;  // where `file` was found (not part of the canonical form)
  std::string sha256;         // of the file's bytes; part of the canonical form
};

struct MaskSpec {
  bool causal = true;  // false: every query sees all kv_len keys
  std::optional<BlockSparseSpec> block_sparse;
  std::optional<ExplicitMaskSpec> explicit_mask;
};

struct WorkloadSpec {
  int schema_version = kWorkloadSchemaVersion;
  std::string name;
  std::string description;
  ModelShape model;
  KvCacheSpec kv_cache;
  std::vector<SequenceSpec> sequences;
  MaskSpec mask;
  uint64_t seed = 0;

  double effective_softmax_scale() const;
  int group_size() const { return model.num_q_heads / model.num_kv_heads; }
};

// One sequence's concrete lengths after distributions and traces are drawn.
struct SequenceLengths {
  int64_t context_len = 0;
  int64_t query_len = 1;
};
// Draws every sequence's lengths (deterministic in the spec's seed; docs/workload.md, "Length
// distributions" and "Traces"). Cheap: no tensors. Trace entries need their rows loaded.
std::vector<SequenceLengths> expand_sequences(const WorkloadSpec& spec);
// The same lengths, handed to `visit` one at a time in batch order without being stored (the
// limits check walks a million sequences this way without allocating).
void for_each_sequence(const WorkloadSpec& spec,
                       const std::function<void(const SequenceLengths&)>& visit);

// Parses and validates workload JSON text. `source` names the input in messages (a path or
// "preset:default"). Throws InputError listing every problem found: a syntax error with its line
// and column, a wrong value with its JSON pointer and the rule it breaks. Rejects duplicate keys,
// unknown keys, and inputs that are too large or too deeply nested.
// Relative file references (traces, layouts, masks) resolve against `base_dir` (empty: the
// working directory).
WorkloadSpec parse_workload(std::string_view text, const std::string& source,
                            const std::string& base_dir = "");

// Reads the file and parses it; an unreadable file is an InputError naming the path.
WorkloadSpec load_workload_file(const std::string& path);

// The canonical form: every field written, defaults included, keys sorted.
nlohmann::json to_json(const WorkloadSpec& spec);
std::string canonical_json(const WorkloadSpec& spec);
// SHA-256 of the canonical JSON, hex.
std::string content_hash(const WorkloadSpec& spec);

}  // namespace attn
