// Explicit shared-memory addresses and accesses. A pointer into dynamic shared memory that went
// through integer arithmetic (a 1024-byte aligned base, say) is a generic pointer to the compiler:
// its loads and stores become generic ones (LD.E / ST.E), slower than LDS / STS and waited on as
// global loads are. These take the 32-bit shared-window address instead.
#pragma once

namespace attn {

__device__ __forceinline__ unsigned shared_address(const void* pointer) {
  return static_cast<unsigned>(__cvta_generic_to_shared(pointer));
}

// 16 bytes at shared address `address` (16-byte aligned). Volatile: ordered with the barriers and
// copies around it as written.
__device__ __forceinline__ uint4 ld_shared_16(unsigned address) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(address)
               : "memory");
  return v;
}

__device__ __forceinline__ void st_shared_16(unsigned address, const uint4& v) {
  asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"r"(address), "r"(v.x), "r"(v.y),
               "r"(v.z), "r"(v.w)
               : "memory");
}

__device__ __forceinline__ int ld_shared_s32(unsigned address) {
  int v;
  asm volatile("ld.shared.s32 %0, [%1];\n" : "=r"(v) : "r"(address) : "memory");
  return v;
}

__device__ __forceinline__ void st_shared_s32(unsigned address, int v) {
  asm volatile("st.shared.s32 [%0], %1;\n" ::"r"(address), "r"(v) : "memory");
}

}  // namespace attn
