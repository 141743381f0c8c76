// The split merge of mla_decode's GPU kernels (sm80_mma.cuh, sm90_wgmma.cuh,
// sm90_wgmma_key_rows.cuh): a split sequence's CTAs each leave normalised rows and their
// log2-sum-exp in the partial buffers; the last to finish weighs them into the output.
#pragma once

#include "kernels/common/convert.cuh"
#include "kernels/common/fast_math.cuh"
#include "kernels/mla_decode/sm80_mma_params.hpp"

namespace attn {
namespace mla_split {

// After every CTA of a split sequence has written its normalised rows and their log2-sum-exp to
// the partial buffers: the last of the (sequence, row tile)'s CTAs to finish merges them into the
// output (rows row0 .. row0 + rows - 1 of the sequence, output rows from out_row0), with merge_s
// ([splits][TILE_ROWS] floats of shared memory) for the weights, and resets the tile's counter
// for the next launch. The THREADS threads that compute (tid 0 ..) call it; sync() is their
// barrier.
template <int DTYPE, int RANK, int TILE_ROWS, int THREADS, class Sync>
__device__ __forceinline__ void merge_splits(const MlaSm80Params& p, int seq, int splits, int row0,
                                             int rows, long long out_row0, float* merge_s, int tid,
                                             Sync sync) {
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
  for (int r = tid; r < rows; r += THREADS) {
    const float* lse = p.partial_lse + static_cast<long long>(base_slot) * p.max_rows + row0 + r;
    float m = kNegInf;
    for (int sp = 0; sp < splits; ++sp) m = fmaxf(m, __ldcg(lse + sp * p.max_rows));
    float total = 0.0f;
    for (int sp = 0; sp < splits; ++sp) {
      const float w = m == kNegInf ? 0.0f : exp2_ftz(__ldcg(lse + sp * p.max_rows) - m);
      merge_s[sp * TILE_ROWS + r] = w;
      total += w;
    }
    const float inv = total > 0.0f ? 1.0f / total : 0.0f;
    for (int sp = 0; sp < splits; ++sp) merge_s[sp * TILE_ROWS + r] *= inv;
  }
  sync();
  // Four of a thread's pieces at a time: their loads (from L2) in flight together.
#pragma unroll 4
  for (int i = tid; i < rows * (RANK / 4); i += THREADS) {
    const int r = i / (RANK / 4), c = (i % (RANK / 4)) * 4;
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int sp = 0; sp < splits; ++sp) {
      const float w = merge_s[sp * TILE_ROWS + r];
      const float4 v = __ldcg(reinterpret_cast<const float4*>(
          p.partial_out + (static_cast<long long>(base_slot + sp) * p.max_rows + row0 + r) * RANK +
          c));
      acc[0] += w * v.x;
      acc[1] += w * v.y;
      acc[2] += w * v.z;
      acc[3] += w * v.w;
    }
    uint2 packed;
    packed.x = pack2<DTYPE>(acc[0], acc[1]);
    packed.y = pack2<DTYPE>(acc[2], acc[3]);
    *reinterpret_cast<uint2*>(static_cast<unsigned short*>(p.out) + (out_row0 + r) * RANK + c) =
        packed;
  }
  if (tid == 0) *counter = 0;
}

}  // namespace mla_split
}  // namespace attn
