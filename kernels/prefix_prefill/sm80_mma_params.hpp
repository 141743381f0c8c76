// Kernel parameters of prefix_prefill.sm80_mma / prefix_prefill.sm80_mma_masked (mma.cuh) and of
// the gather kernel that prepare() runs once to lay out the new tokens' K and V contiguously.
// Shared by the host (which fills them) and the device code (which reads them).
//
// Addresses into a paged pool are byte offsets from strides, so one struct serves every layout:
//   offset(page, slot, kv head, i) = page * page + head * head + slot * token + i * chunk
// where i is the 16-byte chunk of the dims for a key-major pool (NHD, HND, vLLM's x-packed K) and
// the dim for a dim-major pool (vLLM's V [pages, kv_heads, v_head_dim, page_size]). V's strides
// are those of its own rows, v_head_dim wide.
#pragma once

namespace attn {

struct PoolStrides {
  long long page;   // bytes between pages
  long long head;   // bytes between kv heads of a page
  long long token;  // bytes between slots of a page
  long long chunk;  // bytes between 16-byte dim chunks (key-major) or between dims (dim-major)
};

// Per sequence, as the kernel reads it: [num_seqs] rows of these four ints.
struct PrefixPrefillSeq {
  int context_len;  // cached tokens, read through the page table
  int query_len;    // new tokens (>= 1)
  int q_start;      // first row of Q and out (cu_seqlens_q)
  int new_start;    // first row of K_new/V_new: query starts rounded up to 16 (zero padding)
};

struct PrefixPrefillParams {
  const void* q;       // [total_q, num_q_heads, head_dim], dtype
  const void* k_pool;  // paged, the batch's layout, kv dtype
  const void* v_pool;  // paged, the batch's layout, rows v_head_dim wide, kv dtype
  const void* k_new;   // [new_rows, kv_heads, head_dim], kv dtype (gathered by prepare)
  const void* v_new;   // [new_rows, kv_heads, v_head_dim], or [kv_heads, v_head_dim, new_rows] when
                       // V is dim-major
  const int* block_table;         // [num_seqs, max_pages_per_seq]
  const int* tiles;               // [num_tiles, 2]: (sequence, first new token), heaviest first
  const PrefixPrefillSeq* seqs;   // [num_seqs]
  const unsigned char* mask;      // explicit mask grids (masked variant), 1 = visible
  const long long* mask_offsets;  // [num_seqs + 1]: where each sequence's grid starts
  const float* sink_log2;         // [num_q_heads] sink logit * log2(e); null without sinks
  const float* k_scale;  // [num_kv_heads] dequantisation scales of an fp8 cache; null otherwise
  const float* v_scale;  // [num_kv_heads]
  void* out;             // [total_q, num_q_heads, v_head_dim], dtype
  PoolStrides k_strides;
  PoolStrides v_strides;
  long long new_rows;  // rows of K_new (and the row length of a dim-major V_new)
  int num_q_heads;
  int num_kv_heads;
  int group;        // num_q_heads / num_kv_heads
  int tile_tokens;  // new tokens per CTA: block_m / group (rows = tokens x group, token-major)
  int page_size;
  int page_shift;  // log2(page_size) when it is a power of two, else -1
  int max_pages_per_seq;
  int causal;          // 0: a query sees every key of its sequence (subject to the window)
  int sliding_window;  // 0: none; else position p sees keys from p - w + 1 on
  // Logits in the log2 domain. Without soft-cap: logit2 = score_scale * q.k. With soft-cap
  // (cap_log2 > 0): logit2 = cap_log2 * tanh(score_scale * q.k), where score_scale is then
  // softmax_scale / cap and cap_log2 = cap * log2(e). An fp8 cache's k scale multiplies in per
  // kv head inside the kernel.
  float score_scale;
  float cap_log2;
};

// The gather: for each sequence s and new token i < query_len, K/V of the token's cache slot
// (slot_mapping) copied into K_new/V_new row seqs[s].new_start + i; rows up to the next multiple
// of 16 are zero. Grid (blocks, num_seqs), any block size.
struct PrefixPrefillGatherParams {
  const void* k_pool;
  const void* v_pool;
  const long long* slot_mapping;  // [total_q]: page * page_size + offset of each new token
  const PrefixPrefillSeq* seqs;   // [num_seqs]
  void* k_new;
  void* v_new;
  PoolStrides k_strides;
  PoolStrides v_strides;
  long long new_rows;
  int k_chunk_elements;  // elements per `chunk` step of the K pool: 16 / element bytes, or 1
  int v_chunk_elements;  // the same for V (1 when V is dim-major)
  int v_dim_major;       // V_new is [kv_heads, v_head_dim, new_rows]
  int element_bytes;     // 1 (fp8) or 2
  int num_kv_heads;
  int head_dim;    // K's rows
  int v_head_dim;  // V's rows (at most head_dim)
  int page_size;
};

}  // namespace attn
