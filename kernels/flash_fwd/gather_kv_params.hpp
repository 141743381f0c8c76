// Parameters of flash_fwd_gather_kv (gather_kv.cuh), shared by the host and the device code.
#pragma once

namespace attn {

// The gather that makes K and V contiguous (flash_fwd_gather_kv): each 16-byte chunk of the dense
// tensors is copied from the page that holds its token. Strides and sizes in elements of the
// cache's dtype.
struct FlashFwdGatherParams {
  const void* k_pool;  // the batch's layout (NHD or HND), see Problem
  const void* v_pool;
  void* k;                   // [total_kv, num_kv_heads, head_dim]
  void* v;                   // [total_kv, num_kv_heads, v_head_dim]
  const int* block_table;    // [num_seqs, max_pages_per_seq]
  const int* cu_seqlens_kv;  // [num_seqs + 1]
  long long page_stride;     // elements between pages of the K pool
  long long token_stride;    // elements between tokens of a page
  long long head_stride;     // elements between kv heads
  long long v_page_stride;   // the same of the V pool (its rows v_head_dim wide)
  long long v_token_stride;
  long long v_head_stride;
  long long total_kv;
  int num_seqs;
  int num_kv_heads;
  int head_dim;
  int v_head_dim;  // at most head_dim
  int page_size;
  int max_pages_per_seq;
  int element_bytes;  // of K/V: 2 (bf16, fp16) or 1 (fp8 e4m3 codes, gathered as codes)
};

}  // namespace attn
