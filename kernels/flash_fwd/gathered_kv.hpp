// Host helpers the blocksparse CUDA variants share (not device code): uploads, and the contiguous
// K/V both kernels read, gathered once from the paged pool in prepare() (outside any timing) with
// flash_fwd_gather_kv.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/variant.hpp"

namespace attn {

DeviceBuffer blocksparse_upload(const CudaContext& cuda, const std::vector<int32_t>& values);

// K and V as [total_kv, num_kv_heads, head_dim] and cu_seqlens_kv as int32, in this order;
// `gather` is flash_fwd_gather_kv from the variant's program. Synchronises the stream.
std::vector<DeviceBuffer> blocksparse_gather_kv(Problem& problem, ExecContext& context,
                                                CUfunction gather);

}  // namespace attn
