// Parameters of the calibration kernels (kernels/calibrate/*.cuh), shared by host and device.
#pragma once

#include "kernels/common/tensor_map_bytes.hpp"

namespace attn {

struct StreamParams {
  const void* src;  // [vectors] of 16 bytes
  void* dst;        // [vectors] of 16 bytes (copy only)
  unsigned long long vectors;
  unsigned int* sink;  // written only when the read checksum equals `sentinel`
  unsigned int sentinel;
};

// C[m, n] = sum_k A[m, k] * B[n, k]: A [m, k] and B [n, k] row-major bf16 (both K-major, the
// layout the tensor cores read without transposes), C [m, n] row-major bf16, fp32 accumulation.
struct GemmParams {
  TensorMapBytes a_map;  // sm90: TMA descriptors of A and B (boxes of 64 x rows, 128 B swizzle)
  TensorMapBytes b_map;
  const unsigned short* a;
  const unsigned short* b;
  unsigned short* c;
  int m, n, k;
};

}  // namespace attn
