// Kernel parameters of paged_decode.sm90_tma: those of paged_decode.sm80_mma (the same work
// list, split merge and logits) plus the TMA descriptors of the K and V pools. Passed as a
// __grid_constant__ parameter, so the descriptors stay in parameter space where TMA reads them.
//
// Each descriptor views a pool as a 5-D tensor of 16-bit elements, innermost first:
//   (64 dims of a box, head_dim / 64 boxes of a row, then kv heads and tokens of a page in the
//    pool's stride order, pages)
// NHD: (64, halves, kv_heads, page_size, pages); HND: (64, halves, page_size, kv_heads, pages).
// A box is 64 dims x box_tokens keys of one kv head and page, written 128-byte swizzled.
#pragma once

#include "kernels/common/tensor_map_bytes.hpp"
#include "kernels/paged_decode/sm80_mma_params.hpp"

namespace attn {

struct Sm90TmaParams {
  TensorMapBytes k_map;
  TensorMapBytes v_map;
  Sm80MmaParams base;
  int token_coordinate;  // 1 when tokens are the second coordinate (HND), 2 when the third (NHD)
};

}  // namespace attn
