// Batch: what the generator builds from a WorkloadSpec: per-sequence lengths, the page table (CSR
// and padded 2-D), slot mapping, and the seed that fills Q, K and V. No tensor data lives here; the
// data is a pure function of (seed, logical position), see batch_data.hpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "workloads/workload_spec.hpp"

namespace attn {

struct Batch {
  WorkloadSpec spec;
  std::string spec_hash;

  int num_seqs = 0;
  std::vector<int64_t> context_lens;   // [num_seqs]
  std::vector<int64_t> query_lens;     // [num_seqs]
  std::vector<int64_t> kv_lens;        // [num_seqs], context_len + query_len
  std::vector<int64_t> cu_seqlens_q;   // [num_seqs + 1], prefix sums of query_lens
  std::vector<int64_t> cu_seqlens_kv;  // [num_seqs + 1], prefix sums of kv_lens
  int64_t total_q = 0;
  int64_t total_kv = 0;

  // Paging. The pool holds num_pages pages: the ones sequences use, plus one poison page (filled
  // with NaN) that every padding entry of block_table points to, so a kernel that reads past a
  // sequence's pages produces NaN instead of plausible numbers.
  int page_size = 0;
  int64_t num_pages = 0;
  int32_t poison_page = 0;
  std::vector<int32_t> page_indptr;    // [num_seqs + 1], CSR row pointers into page_indices
  std::vector<int32_t> page_indices;   // [page_indptr.back()], page ids in token order
  std::vector<int32_t> last_page_len;  // [num_seqs], tokens in the last page (1..page_size; 0 if
                                       // the sequence has no pages)
  int max_pages_per_seq = 0;
  std::vector<int32_t> block_table;   // [num_seqs, max_pages_per_seq], padded with poison_page
  std::vector<int64_t> slot_mapping;  // [total_q], cache slot (page * page_size + offset) of
                                      // each new token

  float softmax_scale = 0.0f;
  uint64_t data_seed = 0;

  bool decode_only() const;  // every sequence has exactly one query token
  int64_t max_query_len() const;
  int64_t max_kv_len() const;
};

// Builds the batch the spec describes. Deterministic: the same spec gives the same batch on every
// platform (the page shuffle uses the counter RNG, not the standard library's distributions).
Batch generate_batch(const WorkloadSpec& spec);

}  // namespace attn
