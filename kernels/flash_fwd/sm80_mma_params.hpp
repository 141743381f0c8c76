// Kernel parameters of flash_fwd.sm80_mma, shared by the host (which fills them) and the device
// code (which reads them). Pointers are device addresses; 16-bit elements (bf16 or fp16).
#pragma once

namespace attn {

struct FlashFwdParams {
  const void* q;             // [total_q, num_q_heads, head_dim]
  const void* k;             // [total_kv, num_kv_heads, head_dim], gathered from the paged pool
  const void* v;             // [total_kv, num_kv_heads, head_dim], gathered from the paged pool
  void* out;                 // [total_q, num_q_heads, head_dim]
  float* lse;                // [total_q, num_q_heads] log-sum-exp (natural log); null: not written
  const int* cu_seqlens_q;   // [num_seqs + 1]
  const int* cu_seqlens_kv;  // [num_seqs + 1]
  // [num_tiles][2]: (sequence, query tile) of each CTA column, heaviest first (blockIdx.x).
  const int* tiles;
  int num_q_heads;
  int num_kv_heads;
  int group;         // num_q_heads / num_kv_heads
  float scale_log2;  // softmax_scale * log2(e): logits in the log2 domain
};

// The gather that makes K and V contiguous (flash_fwd_gather_kv): each 16-byte chunk of the dense
// tensors is copied from the page that holds its token.
struct FlashFwdGatherParams {
  const void* k_pool;  // the batch's layout (NHD or HND), see Problem
  const void* v_pool;
  void* k;                   // [total_kv, num_kv_heads, head_dim]
  void* v;                   // [total_kv, num_kv_heads, head_dim]
  const int* block_table;    // [num_seqs, max_pages_per_seq]
  const int* cu_seqlens_kv;  // [num_seqs + 1]
  long long page_stride;     // elements between pages of the pool
  long long token_stride;    // elements between tokens of a page
  long long head_stride;     // elements between kv heads
  long long total_kv;
  int num_seqs;
  int num_kv_heads;
  int head_dim;
  int page_size;
  int max_pages_per_seq;
};

}  // namespace attn
