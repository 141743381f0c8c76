// Kernel parameters of paged_decode.sm80_mma, shared by the host (which fills them) and the
// device code (which reads them). One query token per sequence. K/V elements are of Q's dtype or
// fp8 e4m3 codes (value = code * scale).
//
// Pointers are device addresses. Strides are in elements, so one struct serves both pool layouts:
//   NHD: K/V pool [pages, page_size, kv_heads, head_dim]
//   HND: K/V pool [pages, kv_heads, page_size, head_dim]
#pragma once

namespace attn {

struct Sm80MmaParams {
  const void* q;           // [num_seqs, num_q_heads, head_dim]
  const void* k_pool;      // layout above
  const void* v_pool;      // layout above
  const int* block_table;  // [num_seqs, max_pages_per_seq], padding points at the poison page
  const int* kv_lens;      // [num_seqs]
  void* out;               // [num_seqs, num_q_heads, head_dim]
  // Work list (kernels/paged_decode/decode_work_plan.hpp): CTA i computes, for KV head
  // i % num_kv_heads, the segments work[cta_work[c] .. cta_work[c + 1]) in order, c = i /
  // num_kv_heads; a segment is (sequence, chunk, first block, end block), blocks of
  // block_tokens visible keys. A sequence with seq_splits[s] > 1 chunks keeps their partial
  // results in rows seq_partial[s] .. + seq_splits[s] - 1; the last of its CTAs to finish merges
  // them.
  const int* work;         // [segments, 4]
  const int* cta_work;     // [ctas + 1]
  const int* seq_splits;   // [num_seqs] chunks of each sequence's visible keys, >= 1
  const int* seq_partial;  // [num_seqs] first partial row of each sequence
  int* split_counters;     // [num_seqs, num_kv_heads] finished splits; zero between launches
  float* partial_out;      // [partial rows, num_q_heads, head_dim], normalised per split
  float* partial_lse;      // [partial rows, num_q_heads], log2-sum-exp of the logits
  const float* sink_log2;  // [num_q_heads] sink logits * log2(e); null without sinks
  const float* k_scale;    // [num_kv_heads] fp8 K dequantisation scales; null for 16-bit K/V
  const float* v_scale;    // [num_kv_heads] fp8 V dequantisation scales; null for 16-bit K/V
  long long page_stride;   // elements between pages
  long long token_stride;  // elements between tokens of a page
  long long head_stride;   // elements between kv heads
  int num_seqs;
  int num_q_heads;
  int num_kv_heads;
  int group;  // num_q_heads / num_kv_heads, 1..16
  int page_size;
  int max_pages_per_seq;
  int sliding_window;  // 0: none; else the query (position kv_len - 1) sees the last w keys
  // Logits in the log2 domain. Without soft-cap: logit2 = score_scale * q.k. With soft-cap
  // (cap_log2 > 0): logit2 = cap_log2 * tanh(score_scale * q.k), where score_scale is then
  // softmax_scale / cap and cap_log2 = cap * log2(e).
  float score_scale;
  float cap_log2;
};

}  // namespace attn
