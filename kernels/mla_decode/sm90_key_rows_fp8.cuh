// mla_decode.sm90_wgmma_key_rows over an fp8 e4m3 latent cache: the products' operands.
// - S^T = K Q^T runs on fp8 tensor cores over the stage's codes as they landed: Q is written once
//   as two e4m3 terms, hi = e4m3(q 2^e) and lo = e4m3(16 (q 2^e - hi)) (2^e per row puts its
//   largest magnitude in [128, 256)), so that S^T 2^e = K hi^T + K lo^T / 16 keeps about 8 bits of
//   each element of Q (bf16 has 8) at no conversion of K.
// - O^T += V^T P^T in fp16 (every e4m3 code is an fp16 exactly), A from registers: a transposed
//   ldmatrix gives a thread, for the two keys 2 (lane % 4), + 1, the codes of dims 2 (lane / 4)
//   and + 1 (one b16 element per key); a byte permutation makes them the pairs (dim 2q: both
//   keys) and (dim 2q + 1: both keys), each converted in one instruction. So accumulator row R
//   of a 64-row tile (rows R and R + 8 of a warp's 16) holds dim fp8_v_dim(R) (the traits).
// A stage holds a block as column blocks of [64 keys][128 codes], 128-byte swizzled (16-byte
// chunk c of key row r at chunk c ^ (r % 8)); Q's two terms are laid out alike, [rows][128].
#pragma once

#include "kernels/common/convert.cuh"
#include "kernels/common/mma_sm80.cuh"
#include "kernels/common/shared_access.cuh"
#include "kernels/mla_decode/sm90_latent.cuh"
#include "kernels/mla_decode/sm90_wgmma_key_rows_traits.hpp"

namespace attn {
namespace mla_sm90_fp8 {

using mla_decode::sm90_wgmma_key_rows::fp8_v_dim;
using mla_decode::sm90_wgmma_key_rows::kRowBytes;  // one swizzle row: 128 codes

// A lane's transposed-ldmatrix row in a stage (lane l reads key 32 pair + l, group 4 m + wq):
// the key row and the 16-byte chunk the swizzle moves it to, kept as one shared address per lane;
// a step's own part (tile m's group bits, which the swizzle XORs into the chunk, its column block
// and its keys) is a constant once the caller's loop is unrolled. Stages start on the swizzle's
// 1024-byte period, so the XOR never carries into the row's address.
__device__ __forceinline__ unsigned v_lane_address(unsigned stage, int wq, int lane) {
  return stage + unsigned(lane * kRowBytes + ((wq ^ (lane % 8)) * 16));
}

// O^T's k16 steps 2 pair and 2 pair + 1 (keys 32 pair ..) for tile m's dims 16 (4 m + wq) .. + 15
// (the warp's 16 rows of the 64-row tile): the codes, from the lane's v_lane_address, then the A
// fragments.
template <int COLUMN_BLOCK>
__device__ __forceinline__ void v_codes(unsigned lane_address, int m, int pair,
                                        unsigned int (&r)[4]) {
  ldmatrix_x4_trans(r, (lane_address ^ unsigned((m % 2) * 64)) +
                           unsigned(pair * 32 * kRowBytes + (m / 2) * COLUMN_BLOCK));
}
__device__ __forceinline__ void v_fragments(const unsigned int (&r)[4], unsigned int (&a)[2][4]) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    // bytes (key 2c: dim 2q, 2q + 1; key 2c + 1: dim 2q, 2q + 1) -> (dim 2q: both, dim 2q + 1)
    e4m3x4_to_f16(__byte_perm(r[2 * h], 0, 0x3120), a[h][0], a[h][1]);
    e4m3x4_to_f16(__byte_perm(r[2 * h + 1], 0, 0x3120), a[h][2], a[h][3]);
  }
}

// Two e4m3 codes (lo the lower byte) of two floats, rounded to nearest, saturated to +-448.
__device__ __forceinline__ unsigned int e4m3x2_of(float lo, float hi) {
  unsigned short packed;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;\n" : "=h"(packed) : "f"(hi), "f"(lo));
  return packed;
}

// Q's ROWS rows (row0 .. of the sequence whose first query token is q0; zeros past seq_rows) as
// two e4m3 terms, hi into q_hi and lo into q_lo (each D / 128 column blocks of [ROWS][128 codes],
// 128-byte swizzled); factor_s[r] receives 2^-e, the row's factor back. One consumer warp per
// row, a lane per 16-element group. Every row's loads are issued first and then announced on
// named barrier kQIssuedBarrier (the producer warp waits there before its first TMA load: Q's
// few bytes are not queued behind the stages').
constexpr int kQIssuedBarrier = 4;
constexpr int kQIssuedThreads = mla_sm90::kConsumerThreads + 32;
template <int DTYPE, int D, int ROWS>
__device__ __forceinline__ void load_q_rows_e4m3(unsigned char* q_hi, unsigned char* q_lo,
                                                 float* factor_s, const MlaSm80Params& p, int q0,
                                                 int row0, int seq_rows, int tid) {
  constexpr int GROUPS = D / 16;
  constexpr int PER_LANE = (GROUPS + 31) / 32;
  constexpr int WARPS = mla_sm90::kConsumerThreads / 32;
  constexpr int ROWS_PER_WARP = ROWS / WARPS;
  static_assert(ROWS % WARPS == 0, "every consumer warp takes as many rows");
  const int warp = tid / 32, lane = tid % 32;
  const unsigned char* q_rows = static_cast<const unsigned char*>(p.q) +
                                (static_cast<long long>(q0) * p.num_q_heads + row0) * D * 2;
  uint4 raw[ROWS_PER_WARP][PER_LANE][2];
#pragma unroll
  for (int rr = 0; rr < ROWS_PER_WARP; ++rr) {
    const int r = warp + WARPS * rr;
#pragma unroll
    for (int i = 0; i < PER_LANE; ++i) {
      const int g = lane + 32 * i;
      raw[rr][i][0] = raw[rr][i][1] = make_uint4(0u, 0u, 0u, 0u);
      if (g < GROUPS && row0 + r < seq_rows) {
        const uint4* src =
            reinterpret_cast<const uint4*>(q_rows + static_cast<long long>(r) * D * 2 + g * 32);
        raw[rr][i][0] = __ldg(src);
        raw[rr][i][1] = __ldg(src + 1);
      }
    }
  }
  asm volatile("bar.arrive %0, %1;\n" ::"n"(kQIssuedBarrier), "n"(kQIssuedThreads) : "memory");
#pragma unroll
  for (int rr = 0; rr < ROWS_PER_WARP; ++rr) {
    const int r = warp + WARPS * rr;
    float v[PER_LANE][16];
    float most = 0.0f;
#pragma unroll
    for (int i = 0; i < PER_LANE; ++i) {
      float half[8];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        unpack8<DTYPE>(raw[rr][i][h], half);
#pragma unroll
        for (int e = 0; e < 8; ++e) v[i][8 * h + e] = half[e];
      }
#pragma unroll
      for (int e = 0; e < 16; ++e) most = fmaxf(most, fabsf(v[i][e]));
    }
#pragma unroll
    for (int o = 16; o > 0; o /= 2) most = fmaxf(most, __shfl_xor_sync(0xffffffffu, most, o));
    // 2^e with most 2^e in [128, 256); a zero row keeps e = 0. e stays within a float's range.
    const int top = most > 0.0f ? int((__float_as_uint(most) >> 23) & 0xff) - 127 : 7;
    const int e = min(max(7 - top, -100), 100);
    const float to_codes = __uint_as_float(unsigned(127 + e) << 23);
    const float back = __uint_as_float(unsigned(127 - e) << 23);
#pragma unroll
    for (int i = 0; i < PER_LANE; ++i) {
      const int g = lane + 32 * i;
      if (g >= GROUPS) continue;
      unsigned int hi_words[4], lo_words[4];
#pragma unroll
      for (int w = 0; w < 4; ++w) {
        unsigned int hi_pairs[2], lo_pairs[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const float x0 = v[i][4 * w + 2 * h] * to_codes, x1 = v[i][4 * w + 2 * h + 1] * to_codes;
          hi_pairs[h] = e4m3x2_of(x0, x1);
          unsigned int back16[2];
          e4m3x4_to_f16(hi_pairs[h], back16[0], back16[1]);  // the two hi codes, exactly
          const float2 b = unpack2<kDTypeFp16>(back16[0]);
          lo_pairs[h] = e4m3x2_of(16.0f * (x0 - b.x), 16.0f * (x1 - b.y));
        }
        hi_words[w] = hi_pairs[0] | (hi_pairs[1] << 16);
        lo_words[w] = lo_pairs[0] | (lo_pairs[1] << 16);
      }
      const int offset = (g / 8) * ROWS * 128 + r * 128 + ((g % 8) ^ (r % 8)) * 16;
      *reinterpret_cast<uint4*>(q_hi + offset) =
          make_uint4(hi_words[0], hi_words[1], hi_words[2], hi_words[3]);
      *reinterpret_cast<uint4*>(q_lo + offset) =
          make_uint4(lo_words[0], lo_words[1], lo_words[2], lo_words[3]);
    }
    if (lane == 0) factor_s[r] = back;
  }
  sm90::fence_proxy_async_shared();  // the generic writes, before wgmma reads them
  mla_sm90::consumers_sync();
}

// The producer warp's side of kQIssuedBarrier.
__device__ __forceinline__ void wait_q_issued() {
  asm volatile("bar.sync %0, %1;\n" ::"n"(kQIssuedBarrier), "n"(kQIssuedThreads) : "memory");
}

}  // namespace mla_sm90_fp8
}  // namespace attn
