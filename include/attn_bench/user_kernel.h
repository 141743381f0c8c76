/* attn_bench/user_kernel.h: the parameter block a user kernel receives from attn-bench.
 *
 * A user kernel (docs/user-kernels.md) is a CUDA __global__ function template compiled by NVRTC
 * with this header on the include path. It takes one argument, `const AttnUserParams p` (by
 * value), which attn-bench fills from the batch. The block is plain C (fixed-width integers,
 * floats, pointers), so its layout is the same in any translation unit that includes it.
 *
 * Versioning: ATTN_USER_KERNEL_VERSION changes whenever a field is added, removed or moved. A
 * kernel can check it at compile time: static_assert(ATTN_USER_KERNEL_VERSION == 1, "written for
 * version 1 of the parameter block"); and attn-bench writes the version it was built with into
 * `p.version` as well.
 *
 * Tensors (all pointers are device addresses; strides count elements, not bytes):
 *   q             [total_q, num_q_heads, head_dim], dtype (bf16 or fp16)
 *   k_pool/v_pool num_pages pages of page_size tokens x num_kv_heads heads x head_dim; element
 *                 (page, slot, head, dim) sits at page * kv_page_stride + slot * kv_token_stride +
 *                 head * kv_head_stride + dim. kv_layout says which layout it is (NHD: [pages,
 *                 page_size, heads, dim]; HND: [pages, heads, page_size, dim]); the strides hold
 *                 for both pools, so a kernel that reads through them runs either layout. (vLLM's
 *                 split layout is not offered to user kernels.)
 *                 fp8 pools hold e4m3 codes: the value is code * k_scale[kv head] (v_scale).
 *   out           [total_q, num_q_heads, head_dim], dtype; filled with NaN before every launch, so
 * an element the kernel does not write fails verification page_indptr   [num_seqs + 1] int32, CSR
 * rows into page_indices page_indices  [page_indptr[num_seqs]] int32, page ids of each sequence in
 * token order block_table   [num_seqs, max_pages_per_seq] int32, the same pages padded to a
 * rectangle; the padding points at a page of NaN, so reading past a sequence's last page shows
 *   kv_lens       [num_seqs] int32, keys of each sequence (context + its new query tokens)
 *   cu_seqlens_q  [num_seqs + 1] int32, where each sequence's query rows start in q and out
 *
 * Semantics (what the reference computes): for query row i of sequence s, at position
 * kv_lens[s] - query_len + i, logits = softmax_scale * q.k; with soft_cap > 0 they become
 * soft_cap * tanh(logits / soft_cap); with causal, keys after the query's position are hidden; with
 * sliding_window > 0 the query sees only the last sliding_window keys up to its position; with
 * has_sinks, sink_logits[q head] joins the softmax denominator (it has no value row). A query
 * row that sees no key outputs zeros. Query head h reads kv head h / (num_q_heads / num_kv_heads).
 */
#ifndef ATTN_BENCH_USER_KERNEL_H
#define ATTN_BENCH_USER_KERNEL_H

#define ATTN_USER_KERNEL_VERSION 1

/* NVRTC has no <stdint.h>; these are the widths every CUDA target has. */
typedef long long attn_i64;
typedef int attn_i32;

/* kv_layout */
#define ATTN_KV_LAYOUT_NHD 0
#define ATTN_KV_LAYOUT_HND 1

/* dtype and kv_dtype */
#define ATTN_DTYPE_BF16 0
#define ATTN_DTYPE_FP16 1
#define ATTN_DTYPE_FP8_E4M3 2

/* The most kv heads whose fp8 scales, and q heads whose sink logits, the block carries inline. */
#define ATTN_USER_MAX_KV_HEADS 64
#define ATTN_USER_MAX_Q_HEADS 256

typedef struct AttnUserParams {
  attn_i32 version; /* ATTN_USER_KERNEL_VERSION of the attn-bench that filled it */

  /* Tensors */
  const void* q;
  const void* k_pool;
  const void* v_pool;
  void* out;
  const attn_i32* page_indptr;
  const attn_i32* page_indices;
  const attn_i32* block_table;
  const attn_i32* kv_lens;
  const attn_i32* cu_seqlens_q;

  /* Element strides */
  attn_i64 q_token_stride; /* between query rows (num_q_heads * head_dim) */
  attn_i64 q_head_stride;  /* between q heads of a row (head_dim) */
  attn_i64 out_token_stride;
  attn_i64 out_head_stride;
  attn_i64 kv_page_stride;
  attn_i64 kv_token_stride;
  attn_i64 kv_head_stride;
  attn_i64 block_table_stride; /* max_pages_per_seq */

  /* Shape */
  attn_i32 num_seqs;
  attn_i32 num_q_heads;
  attn_i32 num_kv_heads;
  attn_i32 group_size; /* num_q_heads / num_kv_heads */
  attn_i32 head_dim;
  attn_i32 page_size;
  attn_i32 max_pages_per_seq;
  attn_i32 num_pages; /* pages in each pool */
  attn_i64 total_q;
  attn_i64 total_kv;
  attn_i32 max_query_len;
  attn_i32 max_kv_len;
  attn_i32 kv_layout; /* ATTN_KV_LAYOUT_* */
  attn_i32 dtype;     /* of q and out: ATTN_DTYPE_BF16 or ATTN_DTYPE_FP16 */
  attn_i32 kv_dtype;  /* of the pools: dtype, or ATTN_DTYPE_FP8_E4M3 */

  /* Semantics */
  float softmax_scale;
  float soft_cap;          /* 0: none */
  attn_i32 causal;         /* 1: a query sees keys up to its position; 0: all kv_lens[s] keys */
  attn_i32 sliding_window; /* 0: none */
  attn_i32 has_sinks;
  float sink_logits[ATTN_USER_MAX_Q_HEADS]; /* [num_q_heads] when has_sinks */
  float k_scale[ATTN_USER_MAX_KV_HEADS];    /* [num_kv_heads], 1 unless kv_dtype is fp8 */
  float v_scale[ATTN_USER_MAX_KV_HEADS];
} AttnUserParams;

#endif /* ATTN_BENCH_USER_KERNEL_H */
