// TMA descriptors (CUtensorMap) for the sm_90a kernels, encoded on the host through the driver
// loaded at run time.
#pragma once

#include <cstdint>

#include "base/dtype.hpp"
#include "kernels/common/tensor_map_bytes.hpp"
#include "kernels/device/driver_api.hpp"

namespace attn {

// A row-major 2-D tensor of 16-bit elements (`type`: CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 or
// FLOAT16), [rows, cols] with rows `row_stride_bytes` apart, read in boxes of box_rows rows by
// 64 columns (128 bytes) with the 128-byte swizzle, the layout wgmma's descriptors read
// (kernels/common/sm90.cuh). Out-of-bounds elements of a box are zero-filled. Requirements
// checked by the driver (it throws CallError otherwise): `base` and `row_stride_bytes` multiples
// of 16, box_rows <= 256.
// The same for a tensor of `rank` (2..5) dimensions, innermost first: dims[0] elements of 2 bytes
// contiguous, dims[i] (i >= 1) strides_bytes[i - 1] apart, read in boxes of 64 x box[1] x ... x
// box[rank - 1] (box[0] is 64: one swizzle row).
TensorMapBytes encode_tensor_map(const DriverApi& api, CUtensorMapDataType type, const void* base,
                                 int rank, const uint64_t* dims, const uint64_t* strides_bytes,
                                 const uint32_t* box);

// The tensor-map element type of a 16-bit dtype: bf16, else fp16.
CUtensorMapDataType tensor_map_type(DType dtype);

TensorMapBytes encode_tensor_map_2d(const DriverApi& api, CUtensorMapDataType type,
                                    const void* base, uint64_t cols, uint64_t rows,
                                    uint64_t row_stride_bytes, uint32_t box_rows);

// A contiguous [rows, heads, dims] tensor of 16-bit elements as the 3-D tensor (dims, heads,
// rows), read in boxes of 64 dims x 1 head x box_rows rows: the row of one head is innermost, so
// a box at dim 64 of a row of 80 or 96 dims is zero-filled past the row without a memory read
// (the flash_fwd and blocksparse sm90_wgmma kernels' Q, K and V). dims x 2 bytes must be a
// multiple of 16.
TensorMapBytes encode_heads_tensor_map(const DriverApi& api, CUtensorMapDataType type,
                                       const void* base, int dims, int heads, uint64_t rows,
                                       uint32_t box_rows);

}  // namespace attn
