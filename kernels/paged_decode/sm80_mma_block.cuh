// One warp's share of one compute block in the tensor-core decode kernels (paged_decode.sm80_mma
// and paged_decode.sm90_tma): S = Q K^T over the warp's keys, logits, masks, the online-softmax
// update and O += P V, from K/V tiles already in shared memory. The kernels differ only in how
// the tiles get there (cp.async into padded rows, or TMA into 128-byte-swizzled rows), which the
// Tile layout type names:
//   PaddedTile<ROW_BYTES>       row r at r * ROW_BYTES (rows padded by 16 bytes: ldmatrix reads 8
//                               rows in different bank groups)
//   Swizzled128Tile<TOKENS>     TMA's 128-byte swizzle: [row bytes / 128][TOKENS][128], the 16-byte
//                               chunk c of row r stored at chunk c ^ (r % 8) (also conflict-free)
//
// The warp's accumulators (WarpState) follow the m16n8k16 layout: lane l holds rows l / 4 and
// l / 4 + 8 of every n8 tile, columns 2 (l % 4) and 2 (l % 4) + 1.
#pragma once

#include "kernels/common/convert.cuh"
#include "kernels/common/mma_sm80.cuh"
#include "kernels/paged_decode/sm80_mma_traits.hpp"

namespace attn {
namespace paged_decode::sm80_mma {

template <int ROW_BYTES>
struct PaddedTile {
  __device__ __forceinline__ static int offset(int row, int byte) { return row * ROW_BYTES + byte; }
};

template <int TOKENS>
struct Swizzled128Tile {
  __device__ __forceinline__ static int offset(int row, int byte) {
    return (byte >> 7) * (TOKENS * 128) + row * 128 + ((((byte >> 4) & 7) ^ (row & 7)) << 4) +
           (byte & 15);
  }
};

// Bytes e and e + 1 of w0 and of w1 (fp8 codes of two keys, w0's first) as two f16x2 registers:
// `lo` holds the two keys' byte e, `hi` their byte e + 1. One byte permute serves both pairs.
__device__ __forceinline__ void e4m3_pairs_to_f16(unsigned int w0, unsigned int w1, int e,
                                                  unsigned int& lo, unsigned int& hi) {
  e4m3x4_to_f16(__byte_perm(w0, w1, e | ((4 + e) << 4) | ((e + 1) << 8) | ((5 + e) << 12)), lo, hi);
}

// One warp's online-softmax state over its keys: the fp32 output accumulator [16 x HEAD_DIM] and
// this lane's two rows' maximum (log2 domain) and partial sum (this lane's columns only).
template <int HEAD_DIM>
struct WarpState {
  static constexpr bool kKeyRows = false;
  float o[HEAD_DIM / 8][4];
  float row_max[2];
  float row_sum[2];
  __device__ __forceinline__ void init() {
    const float neg_inf = -__int_as_float(0x7f800000);
#pragma unroll
    for (int n = 0; n < HEAD_DIM / 8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
    row_max[0] = row_max[1] = neg_inf;
    row_sum[0] = row_sum[1] = 0.0f;
  }
};

// Q's A fragments: kept in registers where q_in_registers says so, else re-read per k16 step
// from the padded Q tile (16 rows of row_elements(HEAD_DIM) 16-bit elements). For fp8 K/V the dims
// are permuted, identically in Q and K (a dot product does not care), so that a lane's 4 dims of
// a k16 step are 4 adjacent bytes: logical dims {2t, 2t+1, 2t+8, 2t+9} of the mma fragment
// (t = lane % 4) are physical dims 4t .. 4t+3.
template <bool KV_FP8, int HEAD_DIM>
struct QFragments {
  static constexpr int K_STEPS = HEAD_DIM / 16;
  static constexpr bool IN_REGISTERS =
      paged_decode::sm80_mma::q_in_registers(HEAD_DIM, KV_FP8 ? 1 : 2);
  static constexpr int HELD = IN_REGISTERS ? K_STEPS : 1;
  static constexpr int ROW = paged_decode::sm80_mma::row_elements(HEAD_DIM);
  unsigned int a[HELD][4];
  const unsigned short* tile;

  __device__ __forceinline__ void load(unsigned int (&frag)[4], int ks) const {
    const int lane = threadIdx.x % 32;
    if constexpr (KV_FP8) {
      const unsigned short* row = tile + (lane / 4) * ROW + ks * 16 + 4 * (lane % 4);
      frag[0] = *reinterpret_cast<const unsigned int*>(row);
      frag[1] = *reinterpret_cast<const unsigned int*>(row + 8 * ROW);
      frag[2] = *reinterpret_cast<const unsigned int*>(row + 2);
      frag[3] = *reinterpret_cast<const unsigned int*>(row + 8 * ROW + 2);
    } else {
      ldmatrix_x4(frag, tile + (lane % 16) * ROW + (lane / 16) * 8 + ks * 16);
    }
  }
  // After the Q tile is in shared memory (and visible to the warp).
  __device__ __forceinline__ void init(const unsigned short* q_tile) {
    tile = q_tile;
    if constexpr (IN_REGISTERS) {
#pragma unroll
      for (int ks = 0; ks < K_STEPS; ++ks) load(a[ks], ks);
    }
  }
};

// The warp's WARP_TOKENS keys of one block: rows row0 .. row0 + WARP_TOKENS - 1 of the K and V
// tiles, keys key0 .. key0 + WARP_TOKENS - 1 of the sequence. Keys outside [first_key, kv_len)
// are masked (their K rows may hold anything; their V rows must be finite: P is 0 there).
template <int MMA_DTYPE, bool KV_FP8, int HEAD_DIM, int WARP_TOKENS, class Tile>
__device__ __forceinline__ void attend_block(const unsigned char* k_tile,
                                             const unsigned char* v_tile, int row0,
                                             const QFragments<KV_FP8, HEAD_DIM>& q, int key0,
                                             int first_key, int kv_len, float score_scale,
                                             float cap_log2, WarpState<HEAD_DIM>& st) {
  constexpr int S_TILES = WARP_TOKENS / 8;  // n8 tiles of the warp's scores
  constexpr int D_TILES = HEAD_DIM / 8;     // n8 tiles of the output
  constexpr int K_STEPS = HEAD_DIM / 16;    // k16 steps of Q.K
  const float kNegInf = -__int_as_float(0x7f800000);
  const int lane = threadIdx.x % 32, quad = lane / 4, t4 = lane % 4;

  // S = Q K^T over the warp's keys: [16 heads x WARP_TOKENS keys].
  float s[S_TILES][4];
#pragma unroll
  for (int j = 0; j < S_TILES; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
#pragma unroll
  for (int ks = 0; ks < K_STEPS; ++ks) {
    unsigned int a[4];  // Q's fragment of this k16 step (register copies compile away)
    if constexpr (QFragments<KV_FP8, HEAD_DIM>::IN_REGISTERS) {
#pragma unroll
      for (int r = 0; r < 4; ++r) a[r] = q.a[ks % QFragments<KV_FP8, HEAD_DIM>::HELD][r];
    } else {
      q.load(a, ks);
    }
    if constexpr (KV_FP8) {
#pragma unroll
      for (int j = 0; j < S_TILES; ++j) {  // key j*8 + quad, physical dims ks*16 + 4 t4 ..
        unsigned int b0, b1;
        e4m3x4_to_f16(*reinterpret_cast<const unsigned int*>(
                          k_tile + Tile::offset(row0 + j * 8 + quad, ks * 16 + 4 * t4)),
                      b0, b1);
        mma_m16n8k16<MMA_DTYPE>(s[j], a, b0, b1);
      }
    } else {
#pragma unroll
      for (int pair = 0; pair < S_TILES / 2; ++pair) {
        unsigned int b[4];  // keys pair*16 .. +7 and +8 .. +15, dims ks*16 .. +15
        ldmatrix_x4(b, k_tile + Tile::offset(row0 + pair * 16 + (lane / 16) * 8 + lane % 8,
                                             (ks * 2 + (lane / 8) % 2) * 16));
        mma_m16n8k16<MMA_DTYPE>(s[2 * pair], a, b[0], b[1]);
        mma_m16n8k16<MMA_DTYPE>(s[2 * pair + 1], a, b[2], b[3]);
      }
    }
  }

  // Logits (log2 domain), the masks, and this block's row maxima.
  float tile_max[2] = {kNegInf, kNegInf};
#pragma unroll
  for (int j = 0; j < S_TILES; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int t = key0 + j * 8 + 2 * t4 + (e & 1);
      float x = s[j][e] * score_scale;
      if (cap_log2 > 0.0f) x = cap_log2 * tanhf(x);
      if (t >= kv_len || t < first_key) x = kNegInf;
      s[j][e] = x;
      tile_max[e / 2] = fmaxf(tile_max[e / 2], x);
    }
  }
  float base[2], alpha[2];
  bool grew = false;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    // The 4 lanes of a quad hold one row.
    tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 1));
    tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 2));
    const float new_max = fmaxf(st.row_max[r], tile_max[r]);
    base[r] = new_max == kNegInf ? 0.0f : new_max;  // no key yet: avoid -inf - -inf
    alpha[r] = exp2f(st.row_max[r] - base[r]);      // 0 while the row had no key
    grew |= new_max != st.row_max[r];
    st.row_max[r] = new_max;
    st.row_sum[r] *= alpha[r];
  }
  // Rescale the output only when some row's maximum grew (after the first blocks it rarely
  // does); the test is warp-uniform, so the lanes stay converged.
  if (__any_sync(0xffffffffu, grew)) {
#pragma unroll
    for (int n = 0; n < D_TILES; ++n) {
      st.o[n][0] *= alpha[0];
      st.o[n][1] *= alpha[0];
      st.o[n][2] *= alpha[1];
      st.o[n][3] *= alpha[1];
    }
  }

  // P = 2^(S - max), then O += P V; P's accumulator layout is the A fragment layout of the
  // next mma (two n8 tiles of S make one k16 slice of P).
#pragma unroll
  for (int kc = 0; kc < S_TILES / 2; ++kc) {
    float prob[2][4];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        prob[h][e] = exp2f(s[2 * kc + h][e] - base[e / 2]);
        st.row_sum[e / 2] += prob[h][e];
      }
    }
    unsigned int a[4];
    a[0] = pack2<MMA_DTYPE>(prob[0][0], prob[0][1]);
    a[1] = pack2<MMA_DTYPE>(prob[0][2], prob[0][3]);
    a[2] = pack2<MMA_DTYPE>(prob[1][0], prob[1][1]);
    a[3] = pack2<MMA_DTYPE>(prob[1][2], prob[1][3]);
    if constexpr (KV_FP8) {
      // For P V the output dims are permuted: column n of output tile m is physical dim
      // 32 (m / 4) + 4 n + m % 4, so that one 32-bit load gives a lane (n = lane / 4) the 4
      // tiles' values of one key; the cross-warp merge writes them back in order. Keys
      // kc*16 + 2 t4 + {0, 1, 8, 9}; physical dims 32 g + 4 quad .. +3 are tiles 4g .. 4g+3.
      // Head dim 80 ends in a group of 2 tiles (dims 64 .. 79): column n of tile 8 + m' is
      // physical dim 64 + 2 n + m', one 16-bit load per key.
      const int key_row = row0 + kc * 16 + 2 * t4;
#pragma unroll
      for (int g = 0; g < HEAD_DIM / 32; ++g) {
        const int byte = g * 32 + 4 * quad;
        const unsigned int w0 =
            *reinterpret_cast<const unsigned int*>(v_tile + Tile::offset(key_row, byte));
        const unsigned int w1 =
            *reinterpret_cast<const unsigned int*>(v_tile + Tile::offset(key_row + 1, byte));
        const unsigned int w8 =
            *reinterpret_cast<const unsigned int*>(v_tile + Tile::offset(key_row + 8, byte));
        const unsigned int w9 =
            *reinterpret_cast<const unsigned int*>(v_tile + Tile::offset(key_row + 9, byte));
#pragma unroll
        for (int e = 0; e < 4; e += 2) {
          unsigned int b0[2], b1[2];  // dims e and e + 1 of the four
          e4m3_pairs_to_f16(w0, w1, e, b0[0], b0[1]);
          e4m3_pairs_to_f16(w8, w9, e, b1[0], b1[1]);
          mma_m16n8k16<MMA_DTYPE>(st.o[4 * g + e], a, b0[0], b1[0]);
          mma_m16n8k16<MMA_DTYPE>(st.o[4 * g + e + 1], a, b0[1], b1[1]);
        }
      }
      if constexpr (HEAD_DIM % 32 != 0) {
        // The last 16 dims (head dim 80): physical dims 32 G + 2 quad, +1 are tiles 4G, 4G + 1.
        constexpr int G = HEAD_DIM / 32;
        const int byte = G * 32 + 2 * quad;
        const unsigned int w0 =
            *reinterpret_cast<const unsigned short*>(v_tile + Tile::offset(key_row, byte));
        const unsigned int w1 =
            *reinterpret_cast<const unsigned short*>(v_tile + Tile::offset(key_row + 1, byte));
        const unsigned int w8 =
            *reinterpret_cast<const unsigned short*>(v_tile + Tile::offset(key_row + 8, byte));
        const unsigned int w9 =
            *reinterpret_cast<const unsigned short*>(v_tile + Tile::offset(key_row + 9, byte));
        unsigned int b0[2], b1[2];
        e4m3_pairs_to_f16(w0, w1, 0, b0[0], b0[1]);
        e4m3_pairs_to_f16(w8, w9, 0, b1[0], b1[1]);
        mma_m16n8k16<MMA_DTYPE>(st.o[4 * G], a, b0[0], b1[0]);
        mma_m16n8k16<MMA_DTYPE>(st.o[4 * G + 1], a, b0[1], b1[1]);
      }
    } else {
#pragma unroll
      for (int dp = 0; dp < D_TILES / 2; ++dp) {
        unsigned int b[4];  // keys kc*16 .. +15, dims dp*16 .. +7 and +8 .. +15
        ldmatrix_x4_trans(
            b, v_tile + Tile::offset(row0 + kc * 16 + lane % 16, (dp * 2 + lane / 16) * 16));
        mma_m16n8k16<MMA_DTYPE>(st.o[2 * dp], a, b[0], b[1]);
        mma_m16n8k16<MMA_DTYPE>(st.o[2 * dp + 1], a, b[2], b[3]);
      }
    }
  }
}

}  // namespace paged_decode::sm80_mma
}  // namespace attn
