// What mla_decode's GPU kernels (sm80_mma.cuh, sm90_wgmma.cuh, sm90_wgmma_key_rows.cuh) share
// around the key loop: the work item a CTA starts from, and the split merge (a split sequence's
// CTAs each leave normalised rows and their log2-sum-exp in the partial buffers; the last to
// finish weighs them into the output).
#pragma once

#include "kernels/common/convert.cuh"
#include "kernels/common/fast_math.cuh"
#include "kernels/mla_decode/sm80_mma_params.hpp"

namespace attn {
namespace mla_split {

// The CTA's work item (blockIdx.x's), in two 16-byte loads.
__device__ __forceinline__ MlaWorkItem load_work_item(const MlaSm80Params& p) {
  const int4* at = reinterpret_cast<const int4*>(p.work + blockIdx.x);
  const int4 a = __ldg(at), b = __ldg(at + 1);
  return MlaWorkItem{a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
}

// After every CTA of a split sequence has written its normalised rows and their log2-sum-exp to
// the partial buffers: the last of the (sequence, row tile)'s CTAs to finish merges them into the
// output (rows row0 .. row0 + rows - 1 of the sequence, output rows from out_row0) and resets the
// tile's counter for the next launch. The THREADS threads that compute (tid 0 ..) call it; sync()
// is their barrier.
template <int DTYPE, int RANK, int THREADS, class Sync>
__device__ __forceinline__ void merge_splits(const MlaSm80Params& p, int seq, int splits, int row0,
                                             int rows, long long out_row0, int tid, Sync sync) {
  const float kNegInf = -__int_as_float(0x7f800000);
  __shared__ int last_split;
  __threadfence();
  sync();
  int* counter = p.split_counters + static_cast<long long>(seq) * p.row_tiles + blockIdx.y;
  if (tid == 0) last_split = atomicAdd(counter, 1) == splits - 1;
  sync();
  if (!last_split) return;
  __threadfence();
  const int base_slot = p.seq_partial[seq];
  // The partial rows, 4 floats a piece: a thread takes PIECE_BATCH pieces at a time and loads
  // them, with their rows' log2-sum-exps, from SPLIT_BATCH splits at once, then weighs them in
  // with a running maximum per row (the loads come from L2, just written: issued one after
  // another, or the weights before the rows, they would cost a round trip each on the critical
  // path). 8 x 2 pieces, their sums and statistics take 128 registers: more splits at once spilled
  // in some configs (Hopper consumers are compiled within 168 registers).
  constexpr int PIECE_BATCH = 8, SPLIT_BATCH = 2;
  const int pieces = rows * (RANK / 4);
  for (int first = tid; first < pieces; first += THREADS * PIECE_BATCH) {
    float acc[PIECE_BATCH][4], run_max[PIECE_BATCH], run_sum[PIECE_BATCH];
#pragma unroll
    for (int it = 0; it < PIECE_BATCH; ++it) {
      acc[it][0] = acc[it][1] = acc[it][2] = acc[it][3] = 0.0f;
      run_max[it] = kNegInf;
      run_sum[it] = 0.0f;
    }
    for (int sp0 = 0; sp0 < splits; sp0 += SPLIT_BATCH) {
      float4 v[PIECE_BATCH][SPLIT_BATCH];
      float lse[PIECE_BATCH][SPLIT_BATCH];
#pragma unroll
      for (int it = 0; it < PIECE_BATCH; ++it) {
        const int i = first + it * THREADS;
        const int r = i / (RANK / 4), c = (i % (RANK / 4)) * 4;
#pragma unroll
        for (int k = 0; k < SPLIT_BATCH; ++k) {
          const long long row = static_cast<long long>(base_slot + sp0 + k) * p.max_rows + row0 + r;
          const bool valid = i < pieces && sp0 + k < splits;
          v[it][k] = valid ? __ldcg(reinterpret_cast<const float4*>(p.partial_out + row * RANK + c))
                           : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
          lse[it][k] = valid ? __ldcg(p.partial_lse + row) : kNegInf;
        }
      }
#pragma unroll
      for (int it = 0; it < PIECE_BATCH; ++it) {
        float m = run_max[it];
#pragma unroll
        for (int k = 0; k < SPLIT_BATCH; ++k) m = fmaxf(m, lse[it][k]);
        if (m == kNegInf) continue;  // no split so far saw a key of this row
        const float rescale = exp2_ftz(run_max[it] - m);
        run_max[it] = m;
        run_sum[it] *= rescale;
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[it][e] *= rescale;
#pragma unroll
        for (int k = 0; k < SPLIT_BATCH; ++k) {
          const float w = exp2_ftz(lse[it][k] - m);
          run_sum[it] += w;
          acc[it][0] += w * v[it][k].x;
          acc[it][1] += w * v[it][k].y;
          acc[it][2] += w * v[it][k].z;
          acc[it][3] += w * v[it][k].w;
        }
      }
    }
#pragma unroll
    for (int it = 0; it < PIECE_BATCH; ++it) {
      const int i = first + it * THREADS;
      if (i >= pieces) break;
      const int r = i / (RANK / 4), c = (i % (RANK / 4)) * 4;
      const float inv = run_sum[it] > 0.0f ? 1.0f / run_sum[it] : 0.0f;
      uint2 packed;
      packed.x = pack2<DTYPE>(acc[it][0] * inv, acc[it][1] * inv);
      packed.y = pack2<DTYPE>(acc[it][2] * inv, acc[it][3] * inv);
      *reinterpret_cast<uint2*>(static_cast<unsigned short*>(p.out) + (out_row0 + r) * RANK + c) =
          packed;
    }
  }
  if (tid == 0) *counter = 0;
}

}  // namespace mla_split
}  // namespace attn
