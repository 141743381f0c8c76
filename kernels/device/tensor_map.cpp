#include "kernels/device/tensor_map.hpp"

#include <cstring>

namespace attn {

TensorMapBytes encode_tensor_map_2d(const DriverApi& api, CUtensorMapDataType type,
                                    const void* base, uint64_t cols, uint64_t rows,
                                    uint64_t row_stride_bytes, uint32_t box_rows) {
  CUtensorMap map;
  const cuuint64_t dims[2] = {cuuint64_t(cols), cuuint64_t(rows)};
  const cuuint64_t strides[1] = {cuuint64_t(row_stride_bytes)};
  const cuuint32_t box[2] = {64, cuuint32_t(box_rows)};  // 64 x 2 bytes: one swizzle row
  const cuuint32_t element_strides[2] = {1, 1};
  ATTN_CU_CHECK(api, cuTensorMapEncodeTiled(
                         &map, type, 2, const_cast<void*>(base), dims, strides, box,
                         element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                         CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
  TensorMapBytes bytes;
  static_assert(sizeof(bytes) == sizeof(map), "CUtensorMap is 128 bytes");
  std::memcpy(&bytes, &map, sizeof map);
  return bytes;
}

}  // namespace attn
