// Kernel parameters of the paged_decode family, shared by the host (which fills them) and the
// device code (which reads them). One query token per sequence.
//
// Pointers are device addresses. Strides are in elements, so one struct serves both pool layouts:
//   NHD: K/V pool [pages, page_size, kv_heads, head_dim]
//   HND: K/V pool [pages, kv_heads, page_size, head_dim]
#pragma once

#include "kernels/paged_decode/sm80_simt_traits.hpp"

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
  int num_splits;    // grid z: the most splits of any sequence (paged_decode::sm80_simt::splits_of)
  int split_tokens;  // auto split length (> 0), or 0: every sequence gets num_splits splits
  int head_chunks;   // ceil(group_size / heads_per_cta)
  int page_shift;    // log2(page_size) when it is a power of two, else -1
  int sliding_window;   // 0: none; else the query (position kv_len - 1) sees the last w keys
  float q_scale;        // multiplies q: softmax_scale (* log2(e) without soft-cap), fp8: * 2^120
  float soft_cap;       // 0: none; else logits = cap * tanh(logits / cap)
  float soft_cap_log2;  // soft_cap * log2(e)
  int has_sinks;
  int kv_fp8;                                           // K/V hold e4m3 codes: scales below apply
  float k_scale[paged_decode::sm80_simt::kMaxKvHeads];  // per kv head (a per-tensor scale is
                                                        // repeated)
  float v_scale[paged_decode::sm80_simt::kMaxKvHeads];
  float sink_log2[paged_decode::sm80_simt::kMaxQHeads];  // per q head, sink logit * log2(e)
};

}  // namespace attn
