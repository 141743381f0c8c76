// The rules a WorkloadSpec must satisfy, for specs that did not come through parse_workload (built
// in code, edited after parsing), and the whole-batch sizes the limits are checked against.
// docs/workload.md lists every rule.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "workloads/workload_spec.hpp"

namespace attn {

// The largest size a count can hold: whole-batch sizes saturate at it (reported "at least").
inline constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// Per-field limits.
inline constexpr int kMaxQueryHeads = 256;
inline constexpr int kMaxPageSize = 256;
inline constexpr int kHeadDims[] = {64, 80, 96, 128, 192, 256};  // model.head_dim, v_head_dim
// attention "mla": kv_lora_rank and qk_rope_head_dim are multiples of their step in [min, max]
inline constexpr int kMinKvLoraRank = 64, kMaxKvLoraRank = 1024, kKvLoraRankStep = 64;
inline constexpr int kMinQkRopeHeadDim = 16, kMaxQkRopeHeadDim = 128, kQkRopeHeadDimStep = 16;
inline constexpr int kMaxQkNopeHeadDim = 1024;  // qk_nope_head_dim: 1 to this
inline constexpr size_t kMaxNameChars = 128;
inline constexpr size_t kMaxDescriptionChars = 4096;
inline constexpr size_t kMaxSequenceEntries = 65536;
inline constexpr int64_t kMaxSequenceCount = int64_t(1) << 20;

// Whole-batch limits, checked before anything is allocated.
inline constexpr int64_t kMaxSequences = int64_t(1) << 20;     // total, inclusive
inline constexpr int64_t kTokenLimit = int64_t(1) << 31;       // kv and q tokens, exclusive
inline constexpr int64_t kPageLimit = int64_t(1) << 31;        // pages incl. poison, excl.
inline constexpr int64_t kBlockTableLimit = int64_t(1) << 31;  // padded entries, exclusive
inline constexpr int64_t kMaxKvPoolBytes = int64_t(64) << 30;  // K + V, inclusive
inline constexpr int64_t kMaxQueryBytes = int64_t(16) << 30;   // Q, inclusive

// Sizes of the batch a spec describes, computed without allocating. Saturate at INT64_MAX, so a
// spec with absurd lengths reads as "too large" rather than overflowing.
// Lengths are the drawn ones (expand_sequences), except when there are more than kMaxSequences
// sequences: then each entry counts `count` times its largest possible lengths, without drawing.
struct WorkloadTotals {
  int64_t num_seqs = 0;
  int64_t total_kv = 0;      // sum of (context_len + query_len)
  int64_t total_q = 0;       // sum of query_len
  int64_t page_entries = 0;  // sum of ceil(kv_len / page_size): the CSR page table's entries
  int64_t used_pages = 0;  // sum of ceil(kv_len / page_size), less the pages a shared prefix saves
  int64_t pool_pages = 0;  // the pool's capacity (page_plan.hpp), excluding the poison page
  int64_t num_pages = 0;   // pool_pages + 1 (the poison page)
  int64_t max_pages_per_seq = 0;
  int64_t block_table_entries = 0;  // num_seqs * max_pages_per_seq
  // num_pages * page_size * num_kv_heads * (head_dim + v_head_dim) * kv size; mla (one latent
  // pool): num_pages * page_size * head_dim * kv size
  int64_t kv_pool_bytes = 0;
  int64_t query_bytes = 0;  // total_q * num_q_heads * head_dim * size
};
// Requires page_size >= 1, non-negative lengths and counts, and loaded trace rows.
WorkloadTotals workload_totals(const WorkloadSpec& spec);

// The problems with the spec (the same rules and messages as parse_workload, each prefixed with
// the JSON pointer of the field): the first kMaxListedProblems (base/errors.hpp), and in
// `omitted`, when given, how many more were found. Empty when it is valid.
std::vector<std::string> validate_workload(const WorkloadSpec& spec, size_t* omitted = nullptr);

}  // namespace attn
