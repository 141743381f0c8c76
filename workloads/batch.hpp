// Batch: what the generator builds from a WorkloadSpec: per-sequence lengths, the page table (CSR
// and padded 2-D), slot mapping, and the seed that fills Q, K and V. No tensor data lives here; the
// data is a pure function of (seed, logical position), see batch_data.hpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "workloads/block_sparse_layout.hpp"
#include "workloads/explicit_mask.hpp"
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
  // with NaN) that every padding entry of the padded block table (padded_block_table) points to,
  // so a kernel that reads past a sequence's pages produces NaN instead of plausible numbers.
  int page_size = 0;
  int64_t num_pages = 0;
  int32_t poison_page = 0;
  std::vector<int32_t> page_indptr;    // [num_seqs + 1], CSR row pointers into page_indices
  std::vector<int32_t> page_indices;   // [page_indptr.back()], page ids in token order
  std::vector<int32_t> last_page_len;  // [num_seqs], tokens in the last page (1..page_size; 0 if
                                       // the sequence has no pages)
  int max_pages_per_seq = 0;
  std::vector<int64_t> slot_mapping;  // [total_q], cache slot (page * page_size + offset) of
                                      // each new token

  // Prefix sharing (allocation shared_prefix): the first shared_prefix_len[s] tokens of sequence s
  // live on pages it shares with sequence prefix_source[s], and hold that sequence's data. Without
  // sharing, prefix_source[s] == s and shared_prefix_len[s] == 0.
  std::vector<int32_t> prefix_source;      // [num_seqs]
  std::vector<int64_t> shared_prefix_len;  // [num_seqs]

  // Element types and dequantisation. K/V of an fp8 KV cache hold codes; the value a kernel must
  // use is code * scale. Scales: [1] per tensor or [num_kv_heads] per head; empty unless fp8.
  // mla (spec.model.latent()): the K pool is the latent pool, [num_pages, page_size,
  // kv_lora_rank + qk_rope_head_dim], a row [c | k_rope]; there is no V pool (V is c, the first
  // kv_lora_rank elements of a row); k_scales is its one scale and v_scales a copy of it.
  DType dtype = DType::bf16;     // Q and output
  DType kv_dtype = DType::bf16;  // K and V pools
  std::vector<float> k_scales;
  std::vector<float> v_scales;

  // Attention semantics: logits = scale * q.k, then soft-capped (cap * tanh(logits / cap)) when
  // logits_soft_cap > 0, then masked, then softmax with the q head's sink logit (if any) in the
  // denominator. A query row with no visible key outputs zeros.
  float softmax_scale = 0.0f;
  float logits_soft_cap = 0.0f;    // 0: none
  int64_t sliding_window = 0;      // 0: none; else a query at position p sees keys p-w+1 .. p
  bool causal = true;              // false: a query sees all kv_len keys of its sequence
  std::vector<float> sink_logits;  // [num_q_heads], empty without sinks
  std::optional<BlockSparseLayout> block_sparse;
  std::optional<ExplicitMask> explicit_mask;

  uint64_t data_seed = 0;

  bool decode_only() const;  // every sequence has exactly one query token
  int64_t max_query_len() const;
  int64_t max_kv_len() const;
  // K and V are fp8 e4m3 codes (with k_scales and v_scales).
  bool kv_fp8() const { return kv_dtype == DType::fp8_e4m3; }
};

// Builds the batch the spec describes. Deterministic: the same spec gives the same batch on every
// platform (the page shuffle uses the counter RNG, not the standard library's distributions).
Batch generate_batch(const WorkloadSpec& spec);

// The page table padded to a rectangle, [num_seqs, max_pages_per_seq]: row s holds sequence s's
// pages in token order (page_indices), then poison_page. It grows with sequences x the longest
// sequence (a million one-token sequences beside one of 2047 tokens on one-token pages: 8 GiB),
// so it is not part of the Batch: it is built where it is read (the CUDA variants' and the GPU
// references' inputs, kernels/problem.cpp, and a batch dump). The CPU references read the CSR
// form.
std::vector<int32_t> padded_block_table(const Batch& batch);

}  // namespace attn
