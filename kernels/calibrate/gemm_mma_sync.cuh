// gemm_mma_sync: a bf16 GEMM on the tensor cores with mma.sync (sm_80 and newer), the calibration
// ceiling on GPUs without wgmma. Same problem as gemm_sm90_wgmma.cuh:
//   C[m, n] = sum_k A[m, k] * B[n, k]      A [m, k], B [n, k], C [m, n] row-major bf16, fp32 acc.
//
// A CTA computes a 128 x 128 tile with 8 warps of 64 x 32. Tiles of 32 along K stream into
// STAGES shared buffers with cp.async (16-byte copies, several in flight); rows are padded by
// 8 bf16 so that the ldmatrix reads of a warp hit distinct banks. Each warp loads its A and B
// fragments with ldmatrix.x4 and issues mma.m16n8k16 (16 per 16-wide K step).
// Tunable: STAGES (copies in flight vs shared memory). m, n multiples of 128, k of 32.
#pragma once

#include "kernels/calibrate/calibrate_params.hpp"
#include "kernels/calibrate/gemm_traits.hpp"
#include "kernels/common/convert.cuh"

namespace attn {
namespace sm80 {

__device__ __forceinline__ unsigned int smem_address(const void* pointer) {
  unsigned int address;
  asm("{\n.reg .u64 a;\ncvta.to.shared.u64 a, %1;\ncvt.u32.u64 %0, a;\n}\n"
      : "=r"(address)
      : "l"(pointer));
  return address;
}

__device__ __forceinline__ void copy16_async(void* shared, const void* global) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_address(shared)),
               "l"(global));
}
__device__ __forceinline__ void copy_commit() {
  asm volatile("cp.async.commit_group;\n" ::);
}
template <int N>
__device__ __forceinline__ void copy_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ __forceinline__ void ldmatrix_x4(unsigned int (&r)[4], const void* shared) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_address(shared)));
}

__device__ __forceinline__ void mma_bf16(float (&d)[4], const unsigned int (&a)[4], unsigned int b0,
                                         unsigned int b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

}  // namespace sm80

template <int STAGES>
__global__ void __launch_bounds__(gemm::kMmaThreads) gemm_mma_sync(const GemmParams p) {
  static_assert(gemm::mma_check(STAGES) == gemm::kOk, "invalid gemm_mma_sync config");
  constexpr int BM = gemm::kMmaBM, BN = gemm::kMmaBN, BK = gemm::kMmaBK;
  constexpr int ROW = gemm::kMmaRowHalfs;  // padded row, in bf16
  constexpr int A_TILE = BM * ROW, B_TILE = BN * ROW, STAGE = A_TILE + B_TILE;
  extern __shared__ __align__(16) unsigned short tiles[];  // [STAGES][A_TILE + B_TILE]

  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int warp_m = warp / 4, warp_n = warp % 4;  // 2 x 4 warps of 64 x 32
  const int tiles_n = p.n / BN;
  const int tm = blockIdx.x / tiles_n, tn = blockIdx.x % tiles_n;
  const unsigned short* a_block = p.a + (long long)tm * BM * p.k;
  const unsigned short* b_block = p.b + (long long)tn * BN * p.k;
  const int k_blocks = p.k / BK;

  // Each thread copies 2 chunks of A and 2 of B per stage: 128 rows x 4 chunks of 8 bf16.
  auto load_stage = [&](int stage, int kb) {
    unsigned short* a_tile = tiles + stage * STAGE;
    unsigned short* b_tile = a_tile + A_TILE;
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      const int chunk = tid + c * gemm::kMmaThreads;
      const int row = chunk / 4, col = (chunk % 4) * 8;
      sm80::copy16_async(a_tile + row * ROW + col, a_block + (long long)row * p.k + kb * BK + col);
      sm80::copy16_async(b_tile + row * ROW + col, b_block + (long long)row * p.k + kb * BK + col);
    }
  };

  float acc[4][4][4] = {};  // [m16 tile][n8 tile][fragment]
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < k_blocks) load_stage(s, s);
    sm80::copy_commit();
  }
  for (int kb = 0; kb < k_blocks; ++kb) {
    sm80::copy_wait<STAGES - 2>();
    __syncthreads();
    // Refill the buffer consumed in the previous iteration.
    const int next = kb + STAGES - 1;
    if (next < k_blocks) load_stage(next % STAGES, next);
    sm80::copy_commit();

    const unsigned short* a_tile = tiles + (kb % STAGES) * STAGE;
    const unsigned short* b_tile = a_tile + A_TILE;
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      unsigned int a[4][4], b[2][4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int row = warp_m * 64 + i * 16 + lane % 16;
        sm80::ldmatrix_x4(a[i], a_tile + row * ROW + kk + (lane / 16) * 8);
      }
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        // Lanes 0-7: n 0-7 k 0-7; 8-15: n 0-7 k 8-15; 16-23: n 8-15 k 0-7; 24-31: n 8-15 k 8-15.
        const int row = warp_n * 32 + j * 16 + (lane / 16) * 8 + lane % 8;
        sm80::ldmatrix_x4(b[j], b_tile + row * ROW + kk + ((lane / 8) % 2) * 8);
      }
#pragma unroll
      for (int i = 0; i < 4; ++i) {
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          sm80::mma_bf16(acc[i][j], a[i], b[j / 2][(j % 2) * 2], b[j / 2][(j % 2) * 2 + 1]);
        }
      }
    }
  }

  // mma m16n8 accumulator: lane l holds rows l/4 and l/4+8, columns 2(l%4) and 2(l%4)+1.
#pragma unroll
  for (int i = 0; i < 4; ++i) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int row = tm * BM + warp_m * 64 + i * 16 + lane / 4;
      const int column = tn * BN + warp_n * 32 + j * 8 + (lane % 4) * 2;
      *reinterpret_cast<unsigned int*>(p.c + (long long)row * p.n + column) =
          pack2<kDTypeBf16>(acc[i][j][0], acc[i][j][1]);
      *reinterpret_cast<unsigned int*>(p.c + (long long)(row + 8) * p.n + column) =
          pack2<kDTypeBf16>(acc[i][j][2], acc[i][j][3]);
    }
  }
}

}  // namespace attn
