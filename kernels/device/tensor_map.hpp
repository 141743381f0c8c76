// TMA descriptors (CUtensorMap) for the sm_90a kernels, encoded on the host through the driver
// loaded at run time.
#pragma once

#include <cstdint>

#include "kernels/common/tensor_map_bytes.hpp"
#include "kernels/device/driver_api.hpp"

namespace attn {

// A row-major 2-D tensor of 16-bit elements (`type`: CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 or
// FLOAT16), [rows, cols] with rows `row_stride_bytes` apart, read in boxes of box_rows rows by
// 64 columns (128 bytes) with the 128-byte swizzle, the layout wgmma's descriptors read
// (kernels/common/sm90.cuh). Out-of-bounds elements of a box are zero-filled. Requirements
// checked by the driver (it throws CallError otherwise): `base` and `row_stride_bytes` multiples
// of 16, box_rows <= 256.
TensorMapBytes encode_tensor_map_2d(const DriverApi& api, CUtensorMapDataType type,
                                    const void* base, uint64_t cols, uint64_t rows,
                                    uint64_t row_stride_bytes, uint32_t box_rows);

}  // namespace attn
