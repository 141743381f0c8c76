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
  // The weights: every split's log2-sum-exp of every row loaded at once (one load per thread and
  // pass), then per row the largest and each split's share.
  for (int i = tid; i < splits * rows; i += THREADS) {
    const int sp = i / rows, r = i % rows;
    merge_s[sp * TILE_ROWS + r] =
        __ldcg(p.partial_lse + static_cast<long long>(base_slot + sp) * p.max_rows + row0 + r);
  }
  sync();
  for (int r = tid; r < rows; r += THREADS) {
    float m = kNegInf;
    for (int sp = 0; sp < splits; ++sp) m = fmaxf(m, merge_s[sp * TILE_ROWS + r]);
    float total = 0.0f;
    for (int sp = 0; sp < splits; ++sp) {
      const float w = m == kNegInf ? 0.0f : exp2_ftz(merge_s[sp * TILE_ROWS + r] - m);
      merge_s[sp * TILE_ROWS + r] = w;
      total += w;
    }
    const float inv = total > 0.0f ? 1.0f / total : 0.0f;
    for (int sp = 0; sp < splits; ++sp) merge_s[sp * TILE_ROWS + r] *= inv;
  }
  sync();
  // The partial rows, 4 floats a piece: a thread takes PIECE_BATCH pieces at a time and loads
  // them from SPLIT_BATCH splits at once before it sums them (the loads come from L2, just
  // written: issued one after another they would cost a round trip each, several microseconds on
  // the critical path).
  constexpr int PIECE_BATCH = 8, SPLIT_BATCH = 4;
  const int pieces = rows * (RANK / 4);
  for (int first = tid; first < pieces; first += THREADS * PIECE_BATCH) {
    float acc[PIECE_BATCH][4];
#pragma unroll
    for (int it = 0; it < PIECE_BATCH; ++it)
      acc[it][0] = acc[it][1] = acc[it][2] = acc[it][3] = 0.0f;
    for (int sp0 = 0; sp0 < splits; sp0 += SPLIT_BATCH) {
      float4 v[PIECE_BATCH][SPLIT_BATCH];
#pragma unroll
      for (int it = 0; it < PIECE_BATCH; ++it) {
        const int i = first + it * THREADS;
        const int r = i / (RANK / 4), c = (i % (RANK / 4)) * 4;
#pragma unroll
        for (int k = 0; k < SPLIT_BATCH; ++k) {
          const long long row = static_cast<long long>(base_slot + sp0 + k) * p.max_rows + row0 + r;
          v[it][k] = i < pieces && sp0 + k < splits
                         ? __ldcg(reinterpret_cast<const float4*>(p.partial_out + row * RANK + c))
                         : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        }
      }
#pragma unroll
      for (int it = 0; it < PIECE_BATCH; ++it) {
        const int r = min((first + it * THREADS) / (RANK / 4), rows - 1);
#pragma unroll
        for (int k = 0; k < SPLIT_BATCH; ++k) {
          const float w = sp0 + k < splits ? merge_s[(sp0 + k) * TILE_ROWS + r] : 0.0f;
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
      uint2 packed;
      packed.x = pack2<DTYPE>(acc[it][0], acc[it][1]);
      packed.y = pack2<DTYPE>(acc[it][2], acc[it][3]);
      *reinterpret_cast<uint2*>(static_cast<unsigned short*>(p.out) + (out_row0 + r) * RANK + c) =
          packed;
    }
  }
  if (tid == 0) *counter = 0;
}

}  // namespace mla_split
}  // namespace attn
