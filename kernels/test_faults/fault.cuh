// Test-only kernels that fail on purpose, so that the tuner's isolation of faulting configs (worker
// processes, per-phase deadlines, sticky-error respawn) can be checked on a GPU. Registered only
// when ATTN_BENCH_TEST_VARIANTS=1 (kernels/test_faults/fault_variants.cpp); never in a normal
// listing.
#pragma once

#include "kernels/test_faults/fault_params.hpp"

namespace attn::test_faults {

template <int kKind>
__global__ void fault_kernel(FaultParams p) {
  unsigned short* out = static_cast<unsigned short*>(p.out);
  if constexpr (kKind == kOobWrite) {
    // 1 TiB past the output, where nothing is mapped: the store faults.
    volatile unsigned short* far = out + (1ll << 39) + threadIdx.x * 4096ll;
    *far = 1;
  } else if constexpr (kKind == kHang) {
    // Never returns; the volatile sleep keeps the compiler from proving the loop empty.
    for (;;) asm volatile("nanosleep.u32 1000000;");
  } else if constexpr (kKind == kBadPage) {
    // What a kernel reading a corrupt block table does: it takes sequence 0's first page from the
    // table, but the entry has its high bits set, so the page number is kBadPageNumber or above,
    // far outside the pool. The load faults; its value is stored so that it cannot be dropped.
    const int page = p.block_table[0] | kBadPageNumber;
    const unsigned short key = p.k_pool[(long long)page * p.page_elements + threadIdx.x];
    out[threadIdx.x % p.elements] = key;
  } else if constexpr (kKind == kSmem) {
    // Only reached if a GPU ever allowed the request; the launch is expected to be refused.
    extern __shared__ unsigned short smem[];
    smem[threadIdx.x] = 0;
    __syncthreads();
    out[threadIdx.x % p.elements] = smem[(threadIdx.x + 1) % blockDim.x];
  } else {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < p.elements;
         i += stride) {
      out[i] = p.nan_bits;
    }
  }
}

}  // namespace attn::test_faults
