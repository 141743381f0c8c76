// Asynchronous global -> shared copies (cp.async, sm_80+), 16 bytes at a time, bypassing L1.
#pragma once

#include "kernels/common/shared_access.cuh"

namespace attn {

// Copies 16 bytes to shared address `dst`, or writes 16 zero bytes without reading `src` when
// `valid` is false.
__device__ __forceinline__ void cp_async_16(unsigned dst, const void* src, bool valid) {
  const int src_bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_16(void* dst, const void* src, bool valid) {
  cp_async_16(shared_address(dst), src, valid);
}

// Copies 16 bytes that are known to exist: no source size, so none of the zero-fill arithmetic
// that the predicated form costs per copy.
__device__ __forceinline__ void cp_async_16(void* dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(shared_address(dst)), "l"(src)
               : "memory");
}

// As cp_async_16, with a hint that L2 fetch PREFETCH bytes (64, 128 or 256) around the address
// from memory at once: for rows read by several copies in a row.
template <int PREFETCH>
__device__ __forceinline__ void cp_async_16_prefetch(void* dst, const void* src, bool valid) {
  static_assert(PREFETCH == 64 || PREFETCH == 128 || PREFETCH == 256, "L2 prefetch size");
  const int src_bytes = valid ? 16 : 0;
  if constexpr (PREFETCH == 64) {
    asm volatile(
        "cp.async.cg.shared.global.L2::64B [%0], [%1], 16, %2;\n" ::"r"(shared_address(dst)),
        "l"(src), "r"(src_bytes)
        : "memory");
  } else if constexpr (PREFETCH == 128) {
    asm volatile(
        "cp.async.cg.shared.global.L2::128B [%0], [%1], 16, %2;\n" ::"r"(shared_address(dst)),
        "l"(src), "r"(src_bytes)
        : "memory");
  } else {
    asm volatile(
        "cp.async.cg.shared.global.L2::256B [%0], [%1], 16, %2;\n" ::"r"(shared_address(dst)),
        "l"(src), "r"(src_bytes)
        : "memory");
  }
}

__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}

// Waits until at most N of this thread's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

}  // namespace attn
