// Kernel parameters of mla_decode.sm90_wgmma: those of mla_decode.sm80_mma (the same work list,
// split merge and scales) plus the TMA descriptor of the latent pool. Passed as a
// __grid_constant__ parameter, so the descriptor stays in parameter space where TMA reads it.
//
// The descriptor views the pool as a 2-D tensor of 16-bit elements: rows are the pool's slots
// (page x page_size + slot), rank + rope elements each; a box is 64 columns x box_tokens rows,
// written 128-byte swizzled.
#pragma once

#include "kernels/common/tensor_map_bytes.hpp"
#include "kernels/mla_decode/sm80_mma_params.hpp"

namespace attn {

struct MlaSm90Params {
  TensorMapBytes latent_map;
  MlaSm80Params base;
};

}  // namespace attn
