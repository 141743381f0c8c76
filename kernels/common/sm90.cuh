// Hopper (sm_90) building blocks shared by the kernels that use them: mbarriers and TMA loads
// (cp.async.bulk.tensor) completing on them. Compiled only for sm_90 and later.
#pragma once

#include "kernels/common/tensor_map_bytes.hpp"

namespace attn {
namespace sm90 {

__device__ __forceinline__ unsigned int smem_address(const void* pointer) {
  unsigned int address;
  asm("{\n.reg .u64 a;\ncvta.to.shared.u64 a, %1;\ncvt.u32.u64 %0, a;\n}\n"
      : "=r"(address)
      : "l"(pointer));
  return address;
}

__device__ __forceinline__ void mbarrier_init(unsigned long long* bar, unsigned int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_address(bar)), "r"(count));
}

__device__ __forceinline__ void mbarrier_expect_bytes(unsigned long long* bar, unsigned int bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_address(bar)),
               "r"(bytes)
               : "memory");
}

__device__ __forceinline__ void mbarrier_arrive(unsigned long long* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_address(bar)) : "memory");
}

__device__ __forceinline__ void mbarrier_wait(unsigned long long* bar, unsigned int parity) {
  unsigned int done;
  do {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(smem_address(bar)), "r"(parity)
        : "memory");
  } while (!done);
}

// TMA: a box of the tensor at coordinates (inner, outer) into shared memory, completing on `bar`.
__device__ __forceinline__ void tma_load_2d(void* destination, const TensorMapBytes* map, int inner,
                                            int outer, unsigned long long* bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4}], [%2];\n" ::"r"(smem_address(destination)),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(smem_address(bar)), "r"(inner), "r"(outer)
      : "memory");
}

// TMA: a box of a 5-D tensor at coordinates c0 (innermost) .. c4 into shared memory, completing
// on `bar`.
__device__ __forceinline__ void tma_load_5d(void* destination, const TensorMapBytes* map, int c0,
                                            int c1, int c2, int c3, int c4,
                                            unsigned long long* bar) {
  asm volatile(
      "cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5, %6, %7}], [%2];\n" ::"r"(smem_address(destination)),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(smem_address(bar)), "r"(c0), "r"(c1),
      "r"(c2), "r"(c3), "r"(c4)
      : "memory");
}

// Orders this thread's earlier generic-proxy shared-memory writes before later async-proxy
// (TMA) accesses of the same bytes.
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

}  // namespace sm90
}  // namespace attn
