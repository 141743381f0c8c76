// Warp-level tensor-core building blocks of sm_80-class kernels: ldmatrix (shared -> fragment
// registers, optionally transposed) and mma.sync m16n8k16 with fp32 accumulation, for bf16 and
// fp16 inputs (DTYPE is a kDType* code from dtype_code.hpp).
//
// Fragment layouts (PTX ISA, "Matrix Fragments for mma.m16n8k16"), lane = 4 * g + t:
//   A (16 x 16, row-major) a[0]: row g, cols 2t..2t+1; a[1]: row g + 8; a[2]: col + 8; a[3]: both
//   B (16 x 8, "col": k-major) b0: rows (k) 2t..2t+1 of col g; b1: rows + 8
//   C (16 x 8 fp32) c[0..1]: row g, cols 2t..2t+1; c[2..3]: row g + 8
// so two adjacent n8 accumulator tiles of one product are, packed to 16 bits, the A fragment of a
// following k16 product (P = softmax(S) feeding P.V without a trip through shared memory).
#pragma once

#include "kernels/common/cp_async.cuh"
#include "kernels/common/dtype_code.hpp"

namespace attn {

// Four 8 x 8 matrices of 16-bit elements; lane l gives the address of row l % 8 of matrix l / 8.
__device__ __forceinline__ void ldmatrix_x4(unsigned int (&r)[4], const void* shared) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(shared)));
}

// As ldmatrix_x4, each 8 x 8 matrix transposed on the way (row-major V rows -> B fragments).
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned int (&r)[4], const void* shared) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(shared)));
}

// d += a (16 x 16) * b (16 x 8), fp32 accumulation.
template <int DTYPE>
__device__ __forceinline__ void mma_m16n8k16(float (&d)[4], const unsigned int (&a)[4],
                                             unsigned int b0, unsigned int b1) {
  if constexpr (DTYPE == kDTypeBf16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

}  // namespace attn
