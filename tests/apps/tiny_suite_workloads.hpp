// Workloads small enough for a suite that the CLI tests run on the CPU in a second: two decode
// batches (paged_decode runs them), for the suite files the tests write.
#pragma once

namespace attn::testing {

// Two workload objects of a suite's "workloads" array, "tiny-a" and "tiny-b", without the
// brackets.
inline constexpr const char* kTinyDecodeWorkloads = R"(
  {"schema_version": 2, "name": "tiny-a", "model": {"num_q_heads": 4, "num_kv_heads": 2,
   "head_dim": 64, "dtype": "bf16"}, "kv_cache": {"page_size": 16},
   "sequences": [{"context_len": 100, "query_len": 1, "count": 3}], "seed": 1},
  {"schema_version": 2, "name": "tiny-b", "model": {"num_q_heads": 8, "num_kv_heads": 1,
   "head_dim": 64, "dtype": "bf16"}, "kv_cache": {"page_size": 1},
   "sequences": [{"context_len": 50, "query_len": 1, "count": 2}], "seed": 1})";

}  // namespace attn::testing
