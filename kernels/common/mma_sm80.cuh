// Warp-level tensor-core building blocks of sm_80 and newer: ldmatrix (plain and transposed),
// movmatrix (a transpose in registers) and mma.sync m16n8k16 with fp32 accumulation, for bf16 or
// fp16 operands.
//
// Fragment layouts (PTX ISA, "Matrix Fragments for mma.m16n8k16"): lane l holds, of
//   A (16 x 16, row-major):    rows l / 4 and l / 4 + 8, columns 2 (l % 4) + {0, 1} and + 8;
//   B (16 x 8, column-major):  column l / 4, rows 2 (l % 4) + {0, 1} and + 8;
//   C/D (16 x 8, fp32):        rows l / 4 and l / 4 + 8, columns 2 (l % 4) + {0, 1}.
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
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned int (&r)[4], const void* shared) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(shared)));
}

// The same from a 32-bit shared-memory address (kernels that keep their fragment addresses as
// such hold one register per address instead of a 64-bit generic pointer).
__device__ __forceinline__ void ldmatrix_x4(unsigned int (&r)[4], unsigned shared) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared));
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned int (&r)[4], unsigned shared) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared));
}

// The 8 x 8 matrix of 16-bit elements whose fragment (lane l: row l / 4, columns 2 (l % 4) and
// 2 (l % 4) + 1, packed low first) is `fragment`, transposed in registers: the result is the same
// lane's fragment of the transpose.
__device__ __forceinline__ unsigned int movmatrix_trans(unsigned int fragment) {
  unsigned int out;
  asm("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(out) : "r"(fragment));
  return out;
}

// d += a (16 x 16, row-major) * b (16 x 8, column-major), fp32 accumulation.
template <int DTYPE>
__device__ __forceinline__ void mma_m16n8k16(float (&d)[4], const unsigned int (&a)[4],
                                             unsigned int b0, unsigned int b1) {
  if constexpr (DTYPE == kDTypeBf16) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

}  // namespace attn
