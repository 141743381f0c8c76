// Kernel parameters of flash_fwd.sm80_mma, shared by the host (which fills them) and the device
// code (which reads them). Pointers are device addresses; 16-bit elements (bf16 or fp16), or an
// fp8 cache's K/V codes (1 byte each) with their scales.
#pragma once

#include "kernels/flash_fwd/gather_kv_params.hpp"  // FlashFwdGatherParams

namespace attn {

struct FlashFwdParams {
  const void* q;             // [total_q, num_q_heads, head_dim]
  const void* k;             // [total_kv, num_kv_heads, head_dim], gathered from the paged pool
  const void* v;             // [total_kv, num_kv_heads, v_head_dim], gathered from the paged pool
  void* out;                 // [total_q, num_q_heads, v_head_dim]
  float* lse;                // [total_q, num_q_heads] log-sum-exp (natural log); null: not written
  const int* cu_seqlens_q;   // [num_seqs + 1]
  const int* cu_seqlens_kv;  // [num_seqs + 1]
  // [num_tiles][2]: (sequence, query tile) of each CTA column, heaviest first (blockIdx.x).
  const int* tiles;
  int num_q_heads;
  int num_kv_heads;
  int group;         // num_q_heads / num_kv_heads
  float scale_log2;  // softmax_scale * log2(e): logits in the log2 domain
  // An fp8 cache: the dequantisation scales per kv head (a per-tensor scale repeated); K's
  // multiplies the logits, V's the output. Null otherwise.
  const float* k_scale;  // [num_kv_heads]
  const float* v_scale;  // [num_kv_heads]
};

}  // namespace attn
