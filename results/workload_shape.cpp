#include "results/workload_shape.hpp"

#include <algorithm>

#include "base/dtype.hpp"
#include "base/errors.hpp"

namespace attn {

WorkloadShape shape_of(const WorkloadSpec& spec) {
  WorkloadShape s;
  int64_t total_cached = 0;
  for_each_sequence(spec, [&](const SequenceLengths& lengths) {
    ++s.batch_size;
    total_cached += lengths.context_len;  // cached tokens: the new (query) ones do not count
    s.max_context_len = std::max(s.max_context_len, int64_t(lengths.context_len));
    s.query_tokens += lengths.query_len;
  });
  s.context_len = s.batch_size > 0 ? (total_cached + s.batch_size - 1) / s.batch_size : 0;
  ATTN_ASSERT(spec.model.num_kv_heads > 0, "a validated spec has KV heads");
  s.gqa_ratio = spec.model.num_q_heads / spec.model.num_kv_heads;
  s.head_dim = spec.model.head_dim;
  s.dtype = to_string(spec.model.dtype);
  s.kv_dtype = to_string(spec.model.effective_kv_dtype());
  s.page_size = spec.kv_cache.page_size;
  return s;
}

WorkloadShape shape_of_canonical_json(const std::string& canonical_json, const std::string& name) {
  return shape_of(parse_workload(canonical_json, "workload '" + name + "' of the database"));
}

int pow2_bucket(int64_t value) {
  int k = 0;
  for (int64_t p = 1; p < value && k < 62; p *= 2) ++k;
  return k;
}

namespace {

BucketRange pow2_bucket_range(int bucket, int64_t smallest) {
  if (bucket <= 0) return {smallest, 1};
  const int64_t hi = int64_t(1) << std::min(bucket, 62);
  return {hi / 2 + 1, hi};
}

}  // namespace

BucketRange batch_bucket_range(int bucket) {
  return pow2_bucket_range(bucket, 1);
}

BucketRange context_bucket_range(int bucket) {
  return pow2_bucket_range(bucket, 0);
}

std::string to_string(const BucketRange& range) {
  return "[" + std::to_string(range.lo) + ", " + std::to_string(range.hi) + "]";
}

}  // namespace attn
