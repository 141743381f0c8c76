// The shape of a workload that `attn-tune export` buckets by: batch size, context length, GQA
// ratio, head dim, dtypes and page size, read from the spec (or from the canonical JSON the
// results database keeps), and the power-of-two buckets of batch size and context length.
// docs/export.md describes the buckets.
//
// The context length is the one definition the export, the generated header's select() and the
// docs share: the CACHED tokens of a sequence, the keys already in its KV cache before this step's
// new (query) tokens, as the mean over the batch rounded up. A decode step over 4096 cached tokens
// has context length 4096 (it attends 4097 keys: the cache and its own new token); a prefill
// without a cached prefix has 0; a prefix prefill of 128 new tokens after 4096 cached ones, 4096.
#pragma once

#include <cstdint>
#include <string>

#include "workloads/workload_spec.hpp"

namespace attn {

struct WorkloadShape {
  int64_t batch_size = 0;   // sequences in the batch
  int64_t context_len = 0;  // cached tokens of a sequence (before its new ones), mean rounded up
  int64_t max_context_len = 0;  // the most cached tokens of any sequence
  int64_t query_tokens = 0;     // new tokens of all sequences
  int gqa_ratio = 0;            // num_q_heads / num_kv_heads
  int head_dim = 0;
  std::string dtype;     // Q and output: "bf16", "fp16", ...
  std::string kv_dtype;  // the K/V cache: the same as dtype unless it is fp8_e4m3
  int page_size = 0;     // tokens per KV page
};

// Draws the sequence lengths (deterministic in the seed) and reads the model and cache fields.
WorkloadShape shape_of(const WorkloadSpec& spec);
// The same from a workloads row's canonical JSON. Throws InputError when it no longer parses
// here (a trace or layout file referenced by a relative path that is not found from the working
// directory, or whose content changed).
WorkloadShape shape_of_canonical_json(const std::string& canonical_json, const std::string& name);

// Power-of-two buckets for batch size and context length: bucket k > 0 holds the values
// 2^(k-1) + 1 .. 2^k (so [33, 64] is bucket 6), bucket 0 holds 1 and anything below.
int pow2_bucket(int64_t value);
struct BucketRange {
  int64_t lo = 0, hi = 0;  // inclusive
};
// The values of a batch-size bucket: bucket 0 is [1, 1] (a batch has a sequence).
BucketRange batch_bucket_range(int bucket);
// The values of a context-length bucket: bucket 0 is [0, 1] (no cached token, or one).
BucketRange context_bucket_range(int bucket);
std::string to_string(const BucketRange& range);  // "[33, 64]"

}  // namespace attn
