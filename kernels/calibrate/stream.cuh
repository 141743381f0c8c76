// Streaming kernels that measure the memory ceilings for attn-bench calibrate.
//
// stream_read: every thread reads 16-byte vectors in a grid-stride loop, UNROLL independent loads
// in flight before their first use, and folds them into an XOR checksum. The checksum is written
// only if it equals a sentinel the host picks (practically never), so the compiler cannot drop
// the loads and the kernel writes nothing: the time is the read alone.
// stream_copy: the same loop with a 16-byte store of each vector (bytes read + bytes written).
//
// Tunables: THREADS per block and UNROLL (loads in flight per thread); the host picks the grid
// (blocks per SM x SMs).
#pragma once

#include "kernels/calibrate/calibrate_params.hpp"

namespace attn {

template <int THREADS, int UNROLL>
__global__ void __launch_bounds__(THREADS) stream_read(const StreamParams p) {
  const uint4* in = static_cast<const uint4*>(p.src);
  const unsigned long long stride = (unsigned long long)gridDim.x * THREADS;
  unsigned long long i = (unsigned long long)blockIdx.x * THREADS + threadIdx.x;
  unsigned int sum = 0;
  for (; i + (UNROLL - 1) * stride < p.vectors; i += UNROLL * stride) {
    uint4 v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) v[u] = in[i + u * stride];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) sum ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  for (; i < p.vectors; i += stride) {
    const uint4 v = in[i];
    sum ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (sum == p.sentinel) *p.sink = sum;
}

template <int THREADS, int UNROLL>
__global__ void __launch_bounds__(THREADS) stream_copy(const StreamParams p) {
  const uint4* in = static_cast<const uint4*>(p.src);
  uint4* out = static_cast<uint4*>(p.dst);
  const unsigned long long stride = (unsigned long long)gridDim.x * THREADS;
  unsigned long long i = (unsigned long long)blockIdx.x * THREADS + threadIdx.x;
  for (; i + (UNROLL - 1) * stride < p.vectors; i += UNROLL * stride) {
    uint4 v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) v[u] = in[i + u * stride];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) out[i + u * stride] = v[u];
  }
  for (; i < p.vectors; i += stride) out[i] = in[i];
}

}  // namespace attn
