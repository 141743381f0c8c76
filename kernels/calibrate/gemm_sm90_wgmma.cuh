// gemm_sm90_wgmma: a bf16 GEMM on Hopper's tensor cores, written to reach the rate a large real
// GEMM reaches (attn-bench calibrate's tensor ceiling), not a register-only loop that would
// overstate it: operands stream from DRAM through shared memory as in any GEMM.
//
//   C[m, n] = sum_k A[m, k] * B[n, k]      A [m, k], B [n, k], C [m, n] row-major bf16, fp32 acc.
//
// Structure (the usual Hopper warp-specialised mainloop):
// - One producer warpgroup (one thread issues) loads A and B tiles with TMA
//   (cp.async.bulk.tensor, 128-byte swizzle) into STAGES shared buffers; each buffer has a "full"
//   mbarrier (TMA completes its bytes on it) and an "empty" one (consumer warps arrive on it).
// - CONSUMERS warpgroups each own 64 rows of the BM = 64 * CONSUMERS x BN tile and issue
//   wgmma.m64nBNk16 with both operands read from shared memory through descriptors, keeping one
//   wgmma group in flight while the next buffer's wait happens. Accumulators stay in registers;
//   setmaxnreg moves registers from the producer (40) to the consumers (232).
// - The grid is persistent (one CTA per SM); tiles are visited in groups of GROUP_M row-tiles so
//   that CTAs running together share A and B tiles in the L2.
//
// Tunables and why they exist:
//   BN         128 or 256: wider tiles read fewer shared bytes per FLOP (wgmma n256 is shared-
//              memory-bound below that), but need 128 accumulator registers per thread
//   CONSUMERS  1 or 2 consumer warpgroups (BM 64 or 128)
//   STAGES     TMA buffers in flight: latency hiding vs shared memory
//   GROUP_M    row-tiles per L2 group of the persistent schedule
// m must be a multiple of BM, n of BN and k of 64 (the host checks).
#pragma once

#include "kernels/calibrate/calibrate_params.hpp"
#include "kernels/calibrate/gemm_traits.hpp"
#include "kernels/common/convert.cuh"
#include "kernels/common/sm90.cuh"

namespace attn {
namespace sm90 {

// Tile t of the persistent schedule: GROUP_M row-tiles at a time, columns inner.
template <int GROUP_M>
__device__ __forceinline__ void tile_coordinates(int t, int tiles_m, int tiles_n, int& tm,
                                                 int& tn) {
  const int per_group = GROUP_M * tiles_n;
  const int first_m = (t / per_group) * GROUP_M;
  const int group_rows = min(tiles_m - first_m, GROUP_M);
  tm = first_m + (t % per_group) % group_rows;
  tn = (t % per_group) / group_rows;
}

}  // namespace sm90

template <int BN, int CONSUMERS, int STAGES, int GROUP_M>
__global__ void __launch_bounds__(gemm::sm90_threads(CONSUMERS), 1)
    gemm_sm90_wgmma(const __grid_constant__ GemmParams p) {
  static_assert(gemm::sm90_check(BN, CONSUMERS, STAGES) == gemm::kOk,
                "invalid gemm_sm90_wgmma config: see gemm::sm90_check");
  constexpr int BM = gemm::sm90_bm(CONSUMERS);
  constexpr int BK = gemm::kSm90BK;
  constexpr int A_BYTES = BM * BK * 2;
  constexpr int STAGE_BYTES = gemm::sm90_stage_bytes(BN, CONSUMERS);
  extern __shared__ unsigned char shared_raw[];
  // The swizzle pattern repeats every 1024 bytes: buffers start on such a boundary.
  unsigned char* shared = reinterpret_cast<unsigned char*>(
      (reinterpret_cast<unsigned long long>(shared_raw) + 1023) & ~1023ull);
  unsigned long long* full = reinterpret_cast<unsigned long long*>(shared + STAGES * STAGE_BYTES);
  unsigned long long* empty = full + STAGES;

  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      sm90::mbarrier_init(&full[s], 1);
      sm90::mbarrier_init(&empty[s], CONSUMERS * 4);  // one arrival per consumer warp
    }
    sm90::fence_barrier_init();
  }
  __syncthreads();

  const int tiles_m = p.m / BM, tiles_n = p.n / BN, k_blocks = p.k / BK;
  const int tiles = tiles_m * tiles_n;
  const int warpgroup = threadIdx.x / 128;

  if (warpgroup == 0) {
    // Producer: one thread issues every TMA load; the rest of the warpgroup idles.
    sm90::setmaxnreg_dec<40>();
    if (threadIdx.x == 0) {
      int it = 0;
      for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
        int tm, tn;
        sm90::tile_coordinates<GROUP_M>(t, tiles_m, tiles_n, tm, tn);
        for (int kb = 0; kb < k_blocks; ++kb, ++it) {
          const int s = it % STAGES;
          // A fresh barrier counts as having completed the phase before its first: parity 1.
          sm90::mbarrier_wait(&empty[s], ((it / STAGES) & 1) ^ 1);
          unsigned char* stage = shared + s * STAGE_BYTES;
          sm90::mbarrier_expect_bytes(&full[s], STAGE_BYTES);
          sm90::tma_load_2d(stage, &p.a_map, kb * BK, tm * BM, &full[s]);
          sm90::tma_load_2d(stage + A_BYTES, &p.b_map, kb * BK, tn * BN, &full[s]);
        }
      }
    }
  } else {
    sm90::setmaxnreg_inc<232>();
    const int consumer = warpgroup - 1;
    const int lane = threadIdx.x % 32;
    const int warp = (threadIdx.x % 128) / 32;
    float acc[BN / 2];
    int it = 0;
    for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
      int tm, tn;
      sm90::tile_coordinates<GROUP_M>(t, tiles_m, tiles_n, tm, tn);
#pragma unroll
      for (int i = 0; i < BN / 2; ++i) acc[i] = 0.f;
      for (int kb = 0; kb < k_blocks; ++kb, ++it) {
        const int s = it % STAGES;
        sm90::mbarrier_wait(&full[s], (it / STAGES) & 1);
        const unsigned char* a = shared + s * STAGE_BYTES + consumer * 64 * BK * 2;
        const unsigned char* b = shared + s * STAGE_BYTES + A_BYTES;
        sm90::wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk) {
          // 16 bf16 = 32 bytes further along K inside the swizzled 128-byte rows.
          sm90::wgmma_ss<kDTypeBf16, BN>(acc, sm90::descriptor(a + kk * 32),
                                         sm90::descriptor(b + kk * 32), 1);
        }
        sm90::wgmma_commit();
        // The previous buffer's wgmmas are done once at most one group is pending: release it.
        sm90::wgmma_wait<1>();
        if (kb > 0 && lane == 0) sm90::mbarrier_arrive(&empty[(it - 1) % STAGES]);
      }
      sm90::wgmma_wait<0>();
      if (k_blocks > 0 && lane == 0) sm90::mbarrier_arrive(&empty[(it - 1) % STAGES]);

      // Accumulator layout of wgmma m64nN: warp w holds rows 16w..16w+15; per 8 columns, lane l
      // holds rows l/4 and l/4+8, columns 2(l%4) and 2(l%4)+1.
      const int row = tm * BM + consumer * 64 + warp * 16 + lane / 4;
      const int column = tn * BN + (lane % 4) * 2;
#pragma unroll
      for (int j = 0; j < BN / 8; ++j) {
        unsigned int* top =
            reinterpret_cast<unsigned int*>(p.c + (long long)row * p.n + column + j * 8);
        unsigned int* bottom =
            reinterpret_cast<unsigned int*>(p.c + (long long)(row + 8) * p.n + column + j * 8);
        *top = pack2<kDTypeBf16>(acc[4 * j + 0], acc[4 * j + 1]);
        *bottom = pack2<kDTypeBf16>(acc[4 * j + 2], acc[4 * j + 3]);
      }
    }
  }
}

}  // namespace attn
