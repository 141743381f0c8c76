// Kernel parameters of the paged_decode family, shared by the host (which fills them) and the
// device code (which reads them). One query token per sequence.
//
// Pointers are device addresses. Strides are in elements, so one struct serves both pool layouts:
//   NHD: K/V pool [pages, page_size, kv_heads, head_dim]
//   HND: K/V pool [pages, kv_heads, page_size, head_dim]
#pragma once

namespace attn {

struct PagedDecodeParams {
  const void* q;           // [num_seqs, num_q_heads, head_dim]
  const void* k_pool;      // layout above
  const void* v_pool;      // layout above
  const int* block_table;  // [num_seqs, max_pages_per_seq], padding points at the poison page
  const int* kv_lens;      // [num_seqs]
  void* out;               // [num_seqs, num_q_heads, head_dim]
  float* partial_out;      // [num_splits, num_seqs, num_q_heads, head_dim], normalised per split
  float* partial_lse;      // [num_splits, num_seqs, num_q_heads], log2-sum-exp of scaled logits
  long long page_stride;   // elements between pages
  long long token_stride;  // elements between tokens of a page
  long long head_stride;   // elements between kv heads
  int num_seqs;
  int num_q_heads;
  int num_kv_heads;
  int page_size;
  int max_pages_per_seq;
  int num_splits;    // splits of each sequence's keys; 1 writes `out` directly
  int head_chunks;   // ceil(group_size / heads_per_cta)
  float scale_log2;  // softmax_scale * log2(e): logits live in the log2 domain
};

}  // namespace attn
