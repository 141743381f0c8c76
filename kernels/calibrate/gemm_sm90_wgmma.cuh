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

// A shared-memory matrix descriptor for a K-major tile in the 128-byte swizzle layout TMA wrote:
// rows of 128 bytes, core matrices of 8 rows 1024 bytes apart.
__device__ __forceinline__ unsigned long long descriptor(const void* tile) {
  const unsigned long long address = smem_address(tile);
  unsigned long long d = (address & 0x3FFFF) >> 4;
  d |= (unsigned long long)(16 >> 4) << 16;    // leading byte offset (unused with swizzling)
  d |= (unsigned long long)(1024 >> 4) << 32;  // stride byte offset
  d |= 1ull << 62;                             // 128-byte swizzle
  return d;
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

// D[64 x 128] += A[64 x 16] * B[128 x 16]^T, both from shared memory (K-major, 128 B swizzle).
__device__ __forceinline__ void wgmma_m64n128k16(float (&d)[64], unsigned long long desc_a,
                                                 unsigned long long desc_b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, %64, %65, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
        "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
        "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
        "+f"(d[63])
      : "l"(desc_a), "l"(desc_b), "r"(1));
}

// D[64 x 256] += A[64 x 16] * B[256 x 16]^T, both from shared memory (K-major, 128 B swizzle).
__device__ __forceinline__ void wgmma_m64n256k16(float (&d)[128], unsigned long long desc_a,
                                                 unsigned long long desc_b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63,"
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79,"
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95,"
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111,"
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, "
      "%127"
      "}, %128, %129, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
        "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
        "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
        "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]),
        "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]),
        "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]),
        "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]),
        "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]),
        "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]),
        "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]),
        "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]),
        "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "l"(desc_a), "l"(desc_b), "r"(1));
}

template <int BN>
__device__ __forceinline__ void wgmma_tile(float (&d)[BN / 2], unsigned long long desc_a,
                                           unsigned long long desc_b) {
  if constexpr (BN == 256) {
    wgmma_m64n256k16(d, desc_a, desc_b);
  } else {
    wgmma_m64n128k16(d, desc_a, desc_b);
  }
}

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
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  const int tiles_m = p.m / BM, tiles_n = p.n / BN, k_blocks = p.k / BK;
  const int tiles = tiles_m * tiles_n;
  const int warpgroup = threadIdx.x / 128;

  if (warpgroup == 0) {
    // Producer: one thread issues every TMA load; the rest of the warpgroup idles.
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
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
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
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
          sm90::wgmma_tile<BN>(acc, sm90::descriptor(a + kk * 32), sm90::descriptor(b + kk * 32));
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
