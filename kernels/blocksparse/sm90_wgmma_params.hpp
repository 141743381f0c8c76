// Kernel parameters of blocksparse.sm90_wgmma, shared by the host (which fills them) and the
// device code (which reads them). The struct is a __grid_constant__ kernel parameter: TMA reads the
// tensor maps from parameter memory. Pointers are device addresses; 16-bit elements (bf16, fp16; an
// fp8 cache's K and V as 16-bit copies of its codes).
#pragma once

#include "kernels/common/tensor_map_bytes.hpp"

namespace attn {

struct BlockSparseSm90Params {
  // q as a 2-D tensor [total_q, num_q_heads * head_dim]; boxes of tile_m rows x 64 columns.
  TensorMapBytes q_map;
  // The gathered k and v as [total_kv, num_kv_heads * head_dim]; boxes of tile_n rows x 64.
  TensorMapBytes k_map;
  TensorMapBytes v_map;
  void* out;                 // [total_q, num_q_heads, head_dim]
  const int* cu_seqlens_q;   // [num_seqs + 1]
  const int* cu_seqlens_kv;  // [num_seqs + 1]
  // The work plan (blocksparse_sm90_plan; fields: sm90_wgmma_traits.hpp): items [num_items]
  // [kItemInts], heaviest first, and their key tiles, entries [key0 x 4 + consumer bits].
  const int* items;
  const int* entries;
  int* schedule;  // [2], zero between launches: items handed out, CTAs done (next_item)
  int num_items;
  int num_q_heads;
  int group;         // num_q_heads / num_kv_heads
  float scale_log2;  // softmax_scale * log2(e): logits in the log2 domain
  // An fp8 cache (the kernel's KV_SCALES): [num_kv_heads] dequantisation scales of K and V.
  const float* k_scale;
  const float* v_scale;
};

}  // namespace attn
