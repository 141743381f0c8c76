#include "kernels/device/tensor_map.hpp"

#include <cstring>

namespace attn {

CUtensorMapDataType tensor_map_type(DType dtype) {
  return dtype == DType::bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
}

TensorMapBytes encode_tensor_map(const DriverApi& api, CUtensorMapDataType type, const void* base,
                                 int rank, const uint64_t* dims, const uint64_t* strides_bytes,
                                 const uint32_t* box) {
  cuuint64_t global_dims[5], global_strides[4];
  cuuint32_t box_dims[5], element_strides[5];
  for (int i = 0; i < rank; ++i) {
    global_dims[i] = cuuint64_t(dims[i]);
    box_dims[i] = i == 0 ? 64u : cuuint32_t(box[i]);  // 64 x 2 bytes: one swizzle row
    element_strides[i] = 1;
    if (i > 0) global_strides[i - 1] = cuuint64_t(strides_bytes[i - 1]);
  }
  CUtensorMap map;
  ATTN_CU_CHECK(
      api, cuTensorMapEncodeTiled(
               &map, type, cuuint32_t(rank), const_cast<void*>(base), global_dims, global_strides,
               box_dims, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
               CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
  TensorMapBytes bytes;
  static_assert(sizeof(bytes) == sizeof(map), "CUtensorMap is 128 bytes");
  std::memcpy(&bytes, &map, sizeof map);
  return bytes;
}

TensorMapBytes encode_tensor_map_2d(const DriverApi& api, CUtensorMapDataType type,
                                    const void* base, uint64_t cols, uint64_t rows,
                                    uint64_t row_stride_bytes, uint32_t box_rows) {
  const uint64_t dims[2] = {cols, rows};
  const uint32_t box[2] = {64, box_rows};
  return encode_tensor_map(api, type, base, 2, dims, &row_stride_bytes, box);
}

TensorMapBytes encode_heads_tensor_map(const DriverApi& api, CUtensorMapDataType type,
                                       const void* base, int dims, int heads, uint64_t rows,
                                       uint32_t box_rows) {
  const uint64_t extent[3] = {uint64_t(dims), uint64_t(heads), rows};
  const uint64_t strides[2] = {uint64_t(dims) * 2, uint64_t(heads) * uint64_t(dims) * 2};
  const uint32_t box[3] = {64, 1, box_rows};
  return encode_tensor_map(api, type, base, 3, extent, strides, box);
}

}  // namespace attn
