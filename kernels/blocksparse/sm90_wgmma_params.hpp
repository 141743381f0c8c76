// Kernel parameters of blocksparse.sm90_wgmma, shared by the host (which fills them) and the
// device code (which reads them). The struct is a __grid_constant__ kernel parameter: TMA reads the
// tensor maps from parameter memory. Pointers are device addresses; 16-bit elements (bf16, fp16).
#pragma once

#include "kernels/common/tensor_map_bytes.hpp"

namespace attn {

struct BlockSparseSm90Params {
  // q as a 2-D tensor [total_q, num_q_heads * head_dim]; boxes of 64 rows x 64 columns.
  TensorMapBytes q_map;
  // The gathered k and v as [total_kv, num_kv_heads * head_dim]; boxes of tile_n rows x 64.
  TensorMapBytes k_map;
  TensorMapBytes v_map;
  void* out;                 // [total_q, num_q_heads, head_dim]
  const int* cu_seqlens_q;   // [num_seqs + 1]
  const int* cu_seqlens_kv;  // [num_seqs + 1]
  // [num_tiles][2]: (sequence, position tile t: positions [64 t, 64 (t + 1))) of each CTA row,
  // heaviest first (blockIdx.y; blockIdx.x is the q head); blocksparse_mma_schedule, tile_m 64.
  const int* tiles;
  const int* crow;  // [num_q_heads, num_blocks + 1] the layout's CSR offsets per head
  const int* col;   // [num_q_heads, max_nnz] the kept block columns per head, increasing
  int num_blocks;
  int max_nnz;
  int block_size;  // tokens per layout block; a multiple of 64 and of TILE_N
  int num_q_heads;
  int group;         // num_q_heads / num_kv_heads
  float scale_log2;  // softmax_scale * log2(e): logits in the log2 domain
};

}  // namespace attn
