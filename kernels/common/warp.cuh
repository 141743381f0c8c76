// Reductions across lanes of one warp.
#pragma once

namespace attn {

// Sum over groups of WIDTH consecutive lanes (WIDTH a power of two <= 32); every lane of a group
// gets the group's sum.
template <int WIDTH>
__device__ __forceinline__ float group_sum(float value) {
#pragma unroll
  for (int offset = WIDTH / 2; offset > 0; offset /= 2) {
    value += __shfl_xor_sync(0xffffffffu, value, offset);
  }
  return value;
}

__device__ __forceinline__ float warp_max(float value) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) {
    value = fmaxf(value, __shfl_xor_sync(0xffffffffu, value, offset));
  }
  return value;
}

__device__ __forceinline__ float warp_sum(float value) {
  return group_sum<32>(value);
}

}  // namespace attn
