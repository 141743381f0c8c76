// mla_decode.sm90_wgmma_key_rows over an fp8 e4m3 latent cache: the products' operands. The
// products run in fp16 (every e4m3 code is an fp16 exactly); both A operands come from
// registers, converted from a stage's codes after an ldmatrix, so no 16-bit copy of a block
// exists in shared memory:
// - S^T = K Q^T: an ldmatrix (b16 elements: pairs of codes) gives a thread four codes of one key
//   row, at bytes 4 (lane % 4) .. + 3 of a 16-code group, where the A fragment of a k16 step
//   wants K elements 2 (lane % 4), + 1 and 2 (lane % 4) + 8, + 9. Any order of the width is as
//   good as another if both operands share it: K element k of a group is code fp8_code_of(k), and Q
//   is written into shared memory in that order.
// - O^T += V^T P^T: a transposed ldmatrix gives a thread, for the two keys 2 (lane % 4), + 1,
//   the codes of dims 2 (lane / 4) and + 1 (one b16 element per key); a byte permutation makes
//   them the pairs (dim 2q: both keys) and (dim 2q + 1: both keys). So accumulator row R of a
//   64-row tile (rows R and R + 8 of a warp's 16) holds dim fp8_v_dim(R) (both orders: the traits).
// A stage holds a block as column blocks of [64 keys][128 codes], 128-byte swizzled (16-byte
// chunk c of key row r at chunk c ^ (r % 8)).
#pragma once

#include "kernels/common/convert.cuh"
#include "kernels/common/mma_sm80.cuh"
#include "kernels/common/shared_access.cuh"
#include "kernels/mla_decode/sm90_latent.cuh"
#include "kernels/mla_decode/sm90_wgmma_key_rows_traits.hpp"

namespace attn {
namespace mla_sm90_fp8 {

constexpr int kRowBytes = 128;  // one swizzle row: 128 codes

using mla_decode::sm90_wgmma_key_rows::fp8_code_of;
using mla_decode::sm90_wgmma_key_rows::fp8_v_dim;

// A lane's ldmatrix row in a stage: the key row and the 16-byte chunk the swizzle moves it to,
// kept as one shared address per lane; a step's own part (its code group's bits, which the
// swizzle XORs into the chunk, and its column block) is a constant. Stages start on the swizzle's
// 1024-byte period, so the XOR never carries into the row's address.
//
// S^T: lane l reads key 16 wq + 8 ((l / 8) % 2) + l % 8, group 2 pair + l / 16.
__device__ __forceinline__ unsigned k_lane_address(unsigned stage, int wq, int lane) {
  const int key = 16 * wq + 8 * ((lane / 8) % 2) + lane % 8;
  return stage + unsigned(key * kRowBytes + (((lane / 16) ^ (key % 8)) * 16));
}
// O^T: lane l reads key 32 pair + l, group 4 m + wq.
__device__ __forceinline__ unsigned v_lane_address(unsigned stage, int wq, int lane) {
  return stage + unsigned(lane * kRowBytes + ((wq ^ (lane % 8)) * 16));
}

// S^T's k16 steps 2 pair and 2 pair + 1 for warp wq of the warpgroup (keys 16 wq .. + 15 of the
// block): the codes, from the lane's k_lane_address (pair is a constant once the caller's loop is
// unrolled: an XOR and an offset per ldmatrix), then the A fragments. The two are apart so that
// a caller loads the next steps' codes before it converts these.
template <int COLUMN_BLOCK>
__device__ __forceinline__ void k_codes(unsigned lane_address, int pair, unsigned int (&r)[4]) {
  const int group = 2 * pair;  // the lane's group is this one or the next
  ldmatrix_x4(r, (lane_address ^ unsigned((group % 8) * 16)) + unsigned((group / 8) * COLUMN_BLOCK));
}
__device__ __forceinline__ void k_fragments(const unsigned int (&r)[4], unsigned int (&a)[2][4]) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    e4m3x4_to_f16(r[2 * h], a[h][0], a[h][2]);      // keys 0..7 of the warp's 16
    e4m3x4_to_f16(r[2 * h + 1], a[h][1], a[h][3]);  // keys 8..15
  }
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

// Q's ROWS rows (row0 .. of the sequence whose first query token is q0; zeros past seq_rows) in
// fp16 into q_s as D / 64 column blocks of [ROWS][64], 128-byte swizzled, each 16-element group in
// fp8_code_of's order and each row times the power of two f16_row_factors gives it; factor_s[r]
// receives the row's factor back. One consumer warp per row, a lane per 16-element group. Every
// row's loads are issued first and then announced on named barrier kQIssuedBarrier (the producer
// warp waits there before its first TMA load: Q's few bytes are not queued behind the stages').
constexpr int kQIssuedBarrier = 4;
constexpr int kQIssuedThreads = mla_sm90::kConsumerThreads + 32;
template <int DTYPE, int D, int ROWS>
__device__ __forceinline__ void load_q_rows_f16(unsigned char* q_s, float* factor_s,
                                                const MlaSm80Params& p, int q0, int row0,
                                                int seq_rows, int tid) {
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
    float to_f16, back;
    f16_row_factors(most, to_f16, back);
#pragma unroll
    for (int i = 0; i < PER_LANE; ++i) {
      const int g = lane + 32 * i;
      if (g >= GROUPS) continue;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float out[8];
#pragma unroll
        for (int e = 0; e < 8; ++e) out[e] = v[i][fp8_code_of(8 * h + e)] * to_f16;
        const int chunk = 2 * g + h;
        *reinterpret_cast<uint4*>(q_s + (chunk / 8) * ROWS * 128 + r * 128 +
                                  ((chunk % 8) ^ (r % 8)) * 16) = pack8<kDTypeFp16>(out);
      }
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
