// Kernel parameters of flash_fwd.sm90_wgmma, shared by the host (which fills them) and the device
// code (which reads them). The struct is a __grid_constant__ kernel parameter: TMA reads the
// tensor maps from parameter memory. Pointers are device addresses; 16-bit elements (an fp8
// cache's gathered codes are converted before the kernel reads them).
#pragma once

#include "kernels/common/tensor_map_bytes.hpp"

namespace attn {

struct FlashFwdSm90Params {
  // q as a 2-D tensor [total_q, num_q_heads * head_dim]; boxes of tile_m rows x 64 columns.
  TensorMapBytes q_map;
  // The gathered k and v as [total_kv, num_kv_heads * head_dim]; boxes of tile_n rows x 64.
  TensorMapBytes k_map;
  TensorMapBytes v_map;
  // out as a 2-D tensor [total_q, num_q_heads * head_dim]; boxes of 64 rows x 64 columns (one
  // consumer warpgroup's rows of one column block: the staged epilogue's TMA stores).
  TensorMapBytes o_map;
  void* out;                 // [total_q, num_q_heads, head_dim]
  float* lse;                // [total_q, num_q_heads] log-sum-exp (natural log); null: not written
  const int* cu_seqlens_q;   // [num_seqs + 1]
  const int* cu_seqlens_kv;  // [num_seqs + 1]
  // [items][3]: the work items in the order the CTAs draw them, each (sequence, query tile, q
  // head): every query tile of every sequence for every q head once (flash_fwd_work_order). The
  // grid is at most one CTA per SM.
  const int* work;
  int items;
  int* schedule;  // [2], zero between launches: items handed out, CTAs done (next_item)
  int num_q_heads;
  int group;         // num_q_heads / num_kv_heads
  float scale_log2;  // softmax_scale * log2(e): logits in the log2 domain
  // q again, with boxes of 64 rows x 64 columns: one warpgroup's rows of a stacked item
  // (flash_fwd::sm90_wgmma::stacks_heads). Last, so the other fields keep their offsets.
  TensorMapBytes q_rows_map;
  // An fp8 cache (KV_SCALES: its gathered codes converted to 16-bit by a pass before the kernel,
  // kernels/common/fp8_dequantize.cuh): the scales per kv head (a per-tensor one repeated); K's
  // multiplies the item's logits, V's its output. Null otherwise.
  const float* k_scale;  // [num_kv_heads]
  const float* v_scale;  // [num_kv_heads]
};

}  // namespace attn
