// Hopper (sm_90a) building blocks shared by the kernels that use TMA, mbarriers and wgmma: the
// calibration GEMM (kernels/calibrate/gemm_sm90_wgmma.cuh), flash_fwd.sm90_wgmma,
// prefix_prefill.sm90_wgmma and paged_decode.sm90_tma.
//
// - mbarriers: init, arrive, arrive with an expected transaction byte count, and a parity wait.
//   A barrier starts in phase 0; waiting for parity 1 on a fresh barrier returns at once (the
//   phase "before" the first counts as complete), which is how a producer's first wait on an
//   "empty" barrier passes.
// - TMA: a 2-D, 4-D or 5-D box of a tensor map into shared memory, completing its bytes on an
//   mbarrier.
// - wgmma shared-memory descriptors for the 128-byte swizzle layout TMA writes with
//   CU_TENSOR_MAP_SWIZZLE_128B and a 64-element (128-byte) inner box: rows of 128 bytes, 8-row
//   swizzle atoms of 1024 bytes. Buffers must start on a 1024-byte boundary.
// - wgmma.mma_async m64nNk16, fp32 accumulation, bf16 or fp16 inputs: both operands from shared
//   memory (SS, N any multiple of 16 up to 256), or A from registers (RS, N = 64, 72, 80, 96, 128,
//   192, 256: V's widths; 72: head dim 64 beside a column of ones, sm90_attention::Consumer's
//   TENSOR_ROW_SUMS).
//
// Accumulator layout of wgmma m64nN (fp32, N / 2 registers per thread): warp w of the warpgroup
// holds rows 16w .. 16w + 15; register i of lane l holds row 16w + l / 4 + 8 * ((i / 2) % 2),
// column 8 * (i / 4) + 2 * (l % 4) + i % 2. A register-sourced A fragment (m64k16, 16-bit) is
// four 32-bit registers per thread in the same arrangement as mma.sync m16n8k16's A per warp:
// {row l/4, cols 2(l%4)+0..1}, {row l/4+8, same cols}, {row l/4, cols 8+2(l%4)+0..1},
// {row l/4+8, cols 8+...}; so accumulator registers 8k .. 8k + 7 of one k16 column block, packed
// in pairs, are exactly the A fragment of that block.
#pragma once

#include "kernels/common/dtype_code.hpp"
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

// Makes the initialised barriers visible to the async proxy (TMA) and the other threads; follow
// with __syncthreads().
__device__ __forceinline__ void fence_barrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
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
// Elements outside the tensor are written as zeros and still count towards the bytes.
__device__ __forceinline__ void tma_load_2d(void* destination, const TensorMapBytes* map, int inner,
                                            int outer, unsigned long long* bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4}], [%2];\n" ::"r"(smem_address(destination)),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(smem_address(bar)), "r"(inner), "r"(outer)
      : "memory");
}

// TMA: a box of a 3-D tensor at coordinates c0 (innermost) .. c2 into shared memory, completing
// on `bar` (flash_fwd.sm90_wgmma's and blocksparse.sm90_wgmma's Q, K and V as (head_dim, heads,
// rows): a box's columns past head_dim are zero-filled, with no memory read).
__device__ __forceinline__ void tma_load_3d(void* destination, const TensorMapBytes* map, int c0,
                                            int c1, int c2, unsigned long long* bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5}], [%2];\n" ::"r"(smem_address(destination)),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(smem_address(bar)), "r"(c0), "r"(c1),
      "r"(c2)
      : "memory");
}

// TMA: a box of a 4-D tensor at coordinates c0 (innermost) .. c3 into shared memory, completing
// on `bar` (prefix_prefill.sm90_wgmma's Q, the GQA group's heads of consecutive tokens, and its
// new-token K/V tiles).
__device__ __forceinline__ void tma_load_4d(void* destination, const TensorMapBytes* map, int c0,
                                            int c1, int c2, int c3, unsigned long long* bar) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5, %6}], [%2];\n" ::"r"(smem_address(destination)),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(smem_address(bar)), "r"(c0), "r"(c1),
      "r"(c2), "r"(c3)
      : "memory");
}

// TMA: a box of a 5-D tensor at coordinates c0 (innermost) .. c4 into shared memory, completing
// on `bar` (prefix_prefill.sm90_wgmma's page boxes).
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

// TMA store of a box of shared memory to global memory at coordinates (inner, outer) of `map`
// (rows past the tensor's end are not written). Asynchronous: in this thread's bulk group until
// tma_store_commit; the shared bytes may be rewritten once tma_store_wait_read says they are read.
__device__ __forceinline__ void tma_store_2d(const TensorMapBytes* map, int inner, int outer,
                                             const void* source) {
  asm volatile(
      "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n" ::"l"(
          reinterpret_cast<unsigned long long>(map)),
      "r"(smem_address(source)), "r"(inner), "r"(outer)
      : "memory");
}
__device__ __forceinline__ void tma_store_commit() {
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}
// Waits until this thread's committed bulk stores have read their shared memory (ALL: and
// written global memory).
template <bool ALL = false>
__device__ __forceinline__ void tma_store_wait() {
  if constexpr (ALL) {
    asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
  } else {
    asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
  }
}

// Orders this thread's earlier generic-proxy shared-memory writes before later async-proxy
// (TMA) accesses of the same bytes.
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// A shared-memory matrix descriptor in the 128-byte swizzle layout. `leading_bytes` and
// `stride_bytes` are the descriptor's LBO and SBO:
// - K-major (rows of 64 16-bit K elements, 128 bytes, one wgmma k16 step is 32 bytes along a row):
//   LBO is unused (1 by convention), SBO = 1024, the distance between 8-row groups.
// - MN-major (rows of 64 16-bit MN elements, one row per K index): SBO = 1024, the distance
//   between groups of 8 K rows; LBO = the distance between 64-element column blocks along MN
//   (CUTLASS's canonical Swizzle<3,4,3> o ((T,8,m),(8,k)):((1,T,LBO),(8T,SBO))).
__device__ __forceinline__ unsigned long long descriptor(const void* tile,
                                                         unsigned int leading_bytes,
                                                         unsigned int stride_bytes) {
  const unsigned long long address = smem_address(tile);
  unsigned long long d = (address & 0x3FFFF) >> 4;
  d |= (unsigned long long)((leading_bytes >> 4) & 0x3FFF) << 16;
  d |= (unsigned long long)((stride_bytes >> 4) & 0x3FFF) << 32;
  d |= 1ull << 62;  // 128-byte swizzle
  return d;
}

// The K-major descriptor of a tile TMA wrote with the 128-byte swizzle.
__device__ __forceinline__ unsigned long long descriptor(const void* tile) {
  return descriptor(tile, 16, 1024);
}

// The descriptor `bytes` further into the same buffer: the start address field counts 16-byte
// units, and shared memory (under 256 KiB) keeps address / 16 below 2^14, so the sum never
// carries out of the field. One add per wgmma instead of rebuilding the descriptor from a pointer
// (bytes: a multiple of 16).
__device__ __forceinline__ unsigned long long descriptor_advance(unsigned long long desc,
                                                                 unsigned int bytes) {
  // A 32-bit add on the low word (the high word, SBO and swizzle, is the same register).
  const unsigned int low = static_cast<unsigned int>(desc) + (bytes >> 4);
  return (desc & 0xFFFFFFFF00000000ull) | low;
}

// The descriptor `bytes` further along an MN-major operand whose second column block (the one at
// LBO) stays where it is: the start address moves on by `bytes` and LBO back by as much, so every
// k16 step of P V reads the same rows of that block (sm90_attention::Consumer's column of ones,
// whose rows are all alike). LBO must stay at least 0: the block lies `bytes` or more past the
// start.
__device__ __forceinline__ unsigned long long descriptor_advance_fixed_leading(
    unsigned long long desc, unsigned int bytes) {
  const unsigned int units = bytes >> 4;
  const unsigned int low = static_cast<unsigned int>(desc) + units - (units << 16);
  return (desc & 0xFFFFFFFF00000000ull) | low;
}

__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// Register budgets of a warp-specialised CTA: the producer warpgroup gives registers back, the
// consumers take them (every thread of the warpgroup executes these).
template <int REGISTERS>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(REGISTERS));
}
template <int REGISTERS>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(REGISTERS));
}

// The accumulator operand lists of a wgmma m64nN: N / 2 fp32 registers, 8 M registers for M = N /
// 16 (ATTN_SM90_L<M>: "%0, %1, ..." without braces), and the matching "+f" constraints
// (ATTN_SM90_F<M>(d), of 8-register groups ATTN_SM90_G8). Both grow by one 8-register group per 16
// columns.
#define ATTN_SM90_R0 "%0, %1, %2, %3, %4, %5, %6, %7"
#define ATTN_SM90_R1 "%8, %9, %10, %11, %12, %13, %14, %15"
#define ATTN_SM90_R2 "%16, %17, %18, %19, %20, %21, %22, %23"
#define ATTN_SM90_R3 "%24, %25, %26, %27, %28, %29, %30, %31"
#define ATTN_SM90_R4 "%32, %33, %34, %35, %36, %37, %38, %39"
#define ATTN_SM90_R5 "%40, %41, %42, %43, %44, %45, %46, %47"
#define ATTN_SM90_R6 "%48, %49, %50, %51, %52, %53, %54, %55"
#define ATTN_SM90_R7 "%56, %57, %58, %59, %60, %61, %62, %63"
#define ATTN_SM90_R8 "%64, %65, %66, %67, %68, %69, %70, %71"
#define ATTN_SM90_R9 "%72, %73, %74, %75, %76, %77, %78, %79"
#define ATTN_SM90_R10 "%80, %81, %82, %83, %84, %85, %86, %87"
#define ATTN_SM90_R11 "%88, %89, %90, %91, %92, %93, %94, %95"
#define ATTN_SM90_R12 "%96, %97, %98, %99, %100, %101, %102, %103"
#define ATTN_SM90_R13 "%104, %105, %106, %107, %108, %109, %110, %111"
#define ATTN_SM90_R14 "%112, %113, %114, %115, %116, %117, %118, %119"
#define ATTN_SM90_R15 "%120, %121, %122, %123, %124, %125, %126, %127"
// Half a group: the 4 registers of an 8-column block past a multiple of 16 (N = 72).
#define ATTN_SM90_RH4 "%32, %33, %34, %35"
#define ATTN_SM90_L1 ATTN_SM90_R0
#define ATTN_SM90_L2 ATTN_SM90_L1 ", " ATTN_SM90_R1
#define ATTN_SM90_L3 ATTN_SM90_L2 ", " ATTN_SM90_R2
#define ATTN_SM90_L4 ATTN_SM90_L3 ", " ATTN_SM90_R3
#define ATTN_SM90_L5 ATTN_SM90_L4 ", " ATTN_SM90_R4
#define ATTN_SM90_L6 ATTN_SM90_L5 ", " ATTN_SM90_R5
#define ATTN_SM90_L7 ATTN_SM90_L6 ", " ATTN_SM90_R6
#define ATTN_SM90_L8 ATTN_SM90_L7 ", " ATTN_SM90_R7
#define ATTN_SM90_L9 ATTN_SM90_L8 ", " ATTN_SM90_R8
#define ATTN_SM90_L10 ATTN_SM90_L9 ", " ATTN_SM90_R9
#define ATTN_SM90_L11 ATTN_SM90_L10 ", " ATTN_SM90_R10
#define ATTN_SM90_L12 ATTN_SM90_L11 ", " ATTN_SM90_R11
#define ATTN_SM90_L13 ATTN_SM90_L12 ", " ATTN_SM90_R12
#define ATTN_SM90_L14 ATTN_SM90_L13 ", " ATTN_SM90_R13
#define ATTN_SM90_L15 ATTN_SM90_L14 ", " ATTN_SM90_R14
#define ATTN_SM90_L16 ATTN_SM90_L15 ", " ATTN_SM90_R15
#define ATTN_SM90_L4H ATTN_SM90_L4 ", " ATTN_SM90_RH4

#define ATTN_SM90_G8(d, i)                                                                    \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), \
      "+f"(d[i + 6]), "+f"(d[i + 7])
#define ATTN_SM90_F1(d) ATTN_SM90_G8(d, 0)
#define ATTN_SM90_F2(d) ATTN_SM90_F1(d), ATTN_SM90_G8(d, 8)
#define ATTN_SM90_F3(d) ATTN_SM90_F2(d), ATTN_SM90_G8(d, 16)
#define ATTN_SM90_F4(d) ATTN_SM90_F3(d), ATTN_SM90_G8(d, 24)
#define ATTN_SM90_F5(d) ATTN_SM90_F4(d), ATTN_SM90_G8(d, 32)
#define ATTN_SM90_F6(d) ATTN_SM90_F5(d), ATTN_SM90_G8(d, 40)
#define ATTN_SM90_F7(d) ATTN_SM90_F6(d), ATTN_SM90_G8(d, 48)
#define ATTN_SM90_F8(d) ATTN_SM90_F7(d), ATTN_SM90_G8(d, 56)
#define ATTN_SM90_F9(d) ATTN_SM90_F8(d), ATTN_SM90_G8(d, 64)
#define ATTN_SM90_F10(d) ATTN_SM90_F9(d), ATTN_SM90_G8(d, 72)
#define ATTN_SM90_F11(d) ATTN_SM90_F10(d), ATTN_SM90_G8(d, 80)
#define ATTN_SM90_F12(d) ATTN_SM90_F11(d), ATTN_SM90_G8(d, 88)
#define ATTN_SM90_F13(d) ATTN_SM90_F12(d), ATTN_SM90_G8(d, 96)
#define ATTN_SM90_F14(d) ATTN_SM90_F13(d), ATTN_SM90_G8(d, 104)
#define ATTN_SM90_F15(d) ATTN_SM90_F14(d), ATTN_SM90_G8(d, 112)
#define ATTN_SM90_F16(d) ATTN_SM90_F15(d), ATTN_SM90_G8(d, 120)
#define ATTN_SM90_F4H(d) ATTN_SM90_F4(d), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35])

// SS: D (+)= A B^T over one k16 step, A [64 x 16] and B [N x 16] from K-major descriptors (A
// MN-major, [16 x 64] with M contiguous, with TRANS_A = 1: the key-rows form's V^T). scale_d = 0
// overwrites D (the first step of a product), 1 accumulates. M = N / 16; the operand numbers
// after the accumulators are 8 M (A), 8 M + 1 (B), 8 M + 2 (scale_d) and 8 M + 3 (TRANS_A).
#define ATTN_SM90_WGMMA_SS(N, TYPE, M, A, B, SCALE, TRANS)                                         \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #SCALE                                         \
               ", 0;\n"                                                                            \
               "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TYPE "." TYPE " {" ATTN_SM90_L##M \
               "}, %" #A ", %" #B ", p, 1, 1, %" #TRANS ", 0;\n}\n"                                \
               : ATTN_SM90_F##M(d)                                                                 \
               : "l"(desc_a), "l"(desc_b), "r"(scale_d), "n"(TRANS_A))
// One N of wgmma_ss, both 16-bit types.
#define ATTN_SM90_SS_CASE(N, M, A, B, SCALE, TRANS)         \
  if constexpr (N_ == N) {                                  \
    if constexpr (DTYPE == kDTypeBf16) {                    \
      ATTN_SM90_WGMMA_SS(N, "bf16", M, A, B, SCALE, TRANS); \
    } else {                                                \
      ATTN_SM90_WGMMA_SS(N, "f16", M, A, B, SCALE, TRANS);  \
    }                                                       \
  }

// N: any multiple of 16 from 16 to 256 (flash_fwd.sm90_wgmma's key tiles of 80 to 192 keys as
// well as the powers of two).
template <int DTYPE, int N_, int TRANS_A = 0>
__device__ __forceinline__ void wgmma_ss(float (&d)[N_ / 2], unsigned long long desc_a,
                                         unsigned long long desc_b, int scale_d) {
  static_assert(N_ % 16 == 0 && N_ >= 16 && N_ <= 256, "wgmma_ss: N must be 16, 32, .., 256");
  static_assert(TRANS_A == 0 || TRANS_A == 1, "wgmma_ss: TRANS_A is 0 or 1");
  static_assert(DTYPE == kDTypeBf16 || DTYPE == kDTypeFp16, "wgmma_ss: bf16 or fp16");
  ATTN_SM90_SS_CASE(16, 1, 8, 9, 10, 11)
  ATTN_SM90_SS_CASE(32, 2, 16, 17, 18, 19)
  ATTN_SM90_SS_CASE(48, 3, 24, 25, 26, 27)
  ATTN_SM90_SS_CASE(64, 4, 32, 33, 34, 35)
  ATTN_SM90_SS_CASE(80, 5, 40, 41, 42, 43)
  ATTN_SM90_SS_CASE(96, 6, 48, 49, 50, 51)
  ATTN_SM90_SS_CASE(112, 7, 56, 57, 58, 59)
  ATTN_SM90_SS_CASE(128, 8, 64, 65, 66, 67)
  ATTN_SM90_SS_CASE(144, 9, 72, 73, 74, 75)
  ATTN_SM90_SS_CASE(160, 10, 80, 81, 82, 83)
  ATTN_SM90_SS_CASE(176, 11, 88, 89, 90, 91)
  ATTN_SM90_SS_CASE(192, 12, 96, 97, 98, 99)
  ATTN_SM90_SS_CASE(208, 13, 104, 105, 106, 107)
  ATTN_SM90_SS_CASE(224, 14, 112, 113, 114, 115)
  ATTN_SM90_SS_CASE(240, 15, 120, 121, 122, 123)
  ATTN_SM90_SS_CASE(256, 16, 128, 129, 130, 131)
}

// SS over fp8: D (+)= A B^T over one k32 step of e4m3 codes, A [64 x 32] and B [N x 32] from
// K-major descriptors (128-byte rows of 128 codes: a step reads 32 bytes of them, as a 16-bit
// k16 step does). fp8 operands have no transpose. Operands after the accumulators: A = 8 M,
// B = 8 M + 1, scale_d = 8 M + 2.
#define ATTN_SM90_WGMMA_SS_E4M3(N, M, A, B, SCALE)                                         \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #SCALE                                 \
               ", 0;\n"                                                                    \
               "wgmma.mma_async.sync.aligned.m64n" #N "k32.f32.e4m3.e4m3 {" ATTN_SM90_L##M \
               "}, %" #A ", %" #B ", p, 1, 1;\n}\n"                                        \
               : ATTN_SM90_F##M(d)                                                         \
               : "l"(desc_a), "l"(desc_b), "r"(scale_d))
#define ATTN_SM90_SS_E4M3_CASE(N, M, A, B, SCALE) \
  if constexpr (N_ == N) {                        \
    ATTN_SM90_WGMMA_SS_E4M3(N, M, A, B, SCALE);   \
  }

template <int N_>
__device__ __forceinline__ void wgmma_ss_e4m3(float (&d)[N_ / 2], unsigned long long desc_a,
                                              unsigned long long desc_b, int scale_d) {
  static_assert(N_ == 16 || N_ == 32 || N_ == 64, "wgmma_ss_e4m3: N must be 16, 32 or 64");
  ATTN_SM90_SS_E4M3_CASE(16, 1, 8, 9, 10)
  ATTN_SM90_SS_E4M3_CASE(32, 2, 16, 17, 18)
  ATTN_SM90_SS_E4M3_CASE(64, 4, 32, 33, 34)
}

// RS: D += A B over one k16 step, A [64 x 16] from registers (four packed pairs per thread, see
// the header comment), B from a descriptor: K-major ([N x 16], TRANS_B = 0) or MN-major
// ([16 x N] with N contiguous, TRANS_B = 1; 16-bit types only). Always accumulates. The operand
// numbers after the 8 M accumulators: A0..A3 = 8 M .. 8 M + 3, B, ONE, TRANS after them.
#define ATTN_SM90_WGMMA_RS(N, TYPE, M, A0, A1, A2, A3, B, ONE, TRANS)                              \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #ONE                                           \
               ", 0;\n"                                                                            \
               "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TYPE "." TYPE " {" ATTN_SM90_L##M \
               "}, {%" #A0 ", %" #A1 ", %" #A2 ", %" #A3 "}, %" #B ", p, 1, 1, %" #TRANS ";\n}\n"  \
               : ATTN_SM90_F##M(d)                                                                 \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1), "n"(TRANS_B))
#define ATTN_SM90_RS_CASE(N, M, A0, A1, A2, A3, B, ONE, TRANS)         \
  if constexpr (N_ == N) {                                             \
    if constexpr (DTYPE == kDTypeBf16) {                               \
      ATTN_SM90_WGMMA_RS(N, "bf16", M, A0, A1, A2, A3, B, ONE, TRANS); \
    } else {                                                           \
      ATTN_SM90_WGMMA_RS(N, "f16", M, A0, A1, A2, A3, B, ONE, TRANS);  \
    }                                                                  \
  }

template <int DTYPE, int N_, int TRANS_B>
__device__ __forceinline__ void wgmma_rs(float (&d)[N_ / 2], const unsigned int (&a)[4],
                                         unsigned long long desc_b) {
  static_assert(N_ == 16 || N_ == 32 || N_ == 64 || N_ == 72 || N_ == 80 || N_ == 96 || N_ == 128 ||
                    N_ == 192 || N_ == 256,
                "wgmma_rs: N must be 16, 32, 64, 72, 80, 96, 128, 192 or 256");
  static_assert(DTYPE == kDTypeBf16 || DTYPE == kDTypeFp16, "wgmma_rs: bf16 or fp16");
  static_assert(TRANS_B == 0 || TRANS_B == 1, "wgmma_rs: TRANS_B is 0 or 1");
  ATTN_SM90_RS_CASE(16, 1, 8, 9, 10, 11, 12, 13, 14)
  ATTN_SM90_RS_CASE(32, 2, 16, 17, 18, 19, 20, 21, 22)
  ATTN_SM90_RS_CASE(64, 4, 32, 33, 34, 35, 36, 37, 38)
  ATTN_SM90_RS_CASE(72, 4H, 36, 37, 38, 39, 40, 41, 42)
  ATTN_SM90_RS_CASE(80, 5, 40, 41, 42, 43, 44, 45, 46)
  ATTN_SM90_RS_CASE(96, 6, 48, 49, 50, 51, 52, 53, 54)
  ATTN_SM90_RS_CASE(128, 8, 64, 65, 66, 67, 68, 69, 70)
  ATTN_SM90_RS_CASE(192, 12, 96, 97, 98, 99, 100, 101, 102)
  ATTN_SM90_RS_CASE(256, 16, 128, 129, 130, 131, 132, 133, 134)
}

}  // namespace sm90
}  // namespace attn
