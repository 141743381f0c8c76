// `attn-bench workload show`: what a batch amounts to before anything runs: sequences and tokens,
// pages and bytes, the minimum traffic and the useful FLOPs of its masks, the features in force,
// and a histogram of its KV lengths.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "workloads/batch.hpp"

namespace attn {

struct LengthBucket {
  int64_t lo = 0, hi = 0;  // kv lengths in [lo, hi]
  int64_t count = 0;
};

struct BatchSummary {
  int64_t sequences = 0, query_tokens = 0, kv_tokens = 0;
  int64_t pages_used = 0;      // distinct pages the sequences point at (shared prefixes once)
  int64_t pages_capacity = 0;  // the pool, poison page included
  double kv_bytes = 0;         // K and V of every key of every sequence (all its pages hold)
  double kv_pool_bytes = 0;    // K and V pools allocated
  double q_bytes = 0;
  // The least a kernel moves through the page table (workloads/traffic.hpp): Q, output, the K/V
  // rows some query sees and their page-table entries; logical (rows of pages shared through a
  // common prefix once per sequence) and unique (once).
  double minimum_bytes = 0;
  double unique_minimum_bytes = 0;
  int64_t visible_pairs = 0;          // (q head, query, key) triples the masks let through
  double useful_flops = 0;            // 2 * (head_dim + v_head_dim) * visible_pairs (Q.K and P.V)
  std::vector<std::string> features;  // one line each: dtypes, layout, masks, sinks, ...
  std::vector<LengthBucket> kv_length_histogram;  // log2 buckets: 0, 1, 2-3, 4-7, ...
};

BatchSummary summarize_batch(const Batch& batch);

// Human-readable lines, as `workload show` prints them.
std::string format_batch_summary(const Batch& batch, const BatchSummary& summary);

}  // namespace attn
