// One warp's share of one compute block in paged_decode.sm80_mma for GQA groups of at most 8 query
// heads: the transposed products
//   S^T = K Q^T     (the warp's keys are the 16 M rows of each mma, the group's heads the 8 N
//                    columns)
//   O^T += V^T P^T  (the head dims are the M rows, the heads the N columns)
// so no mma row is padding. The head-rows form of sm80_mma_block.cuh puts the heads in the 16 M
// rows, of which a group of 8 or fewer fills at most half. Per 16 keys this form issues half the
// mma.sync and half the exponentials, and its output accumulator is [HEAD_DIM x 8] (HEAD_DIM / 4
// floats a lane instead of HEAD_DIM / 2). P^T goes from S^T's accumulator layout to the B
// fragment of O^T's product by movmatrix (an 8 x 8 transpose in registers).
//
// Layouts (m16n8k16, lane l, quad = l / 4, t4 = l % 4):
//   S^T tile of 16 keys:  keys quad and quad + 8; heads 2 t4 and 2 t4 + 1
//   O^T tile m:           rows (head dims) quad and quad + 8 of the tile; heads 2 t4 and 2 t4 + 1
// For fp8 K/V, Q.K uses the dim permutation of sm80_mma_block.cuh (4 adjacent codes per lane), and
// P V permutes the output rows so that one 32-bit load of a key row gives a lane the values of
// two tiles: key_rows_dim() names the physical dim of each output row, and the epilogue writes
// them back in order.
#pragma once

#include "kernels/common/convert.cuh"
#include "kernels/common/mma_sm80.cuh"
#include "kernels/paged_decode/sm80_mma_block.cuh"
#include "kernels/paged_decode/sm80_mma_traits.hpp"

namespace attn {
namespace paged_decode::sm80_mma {

// The physical head dim of row r (0 .. 15) of output tile m.
template <bool KV_FP8, int HEAD_DIM>
__device__ __forceinline__ int key_rows_dim(int m, int r) {
  if constexpr (!KV_FP8) {
    return m * 16 + r;
  } else {
    if (HEAD_DIM % 32 == 0 || m < HEAD_DIM / 32 * 2) {  // tiles 2g and 2g + 1 share 32 dims
      return 32 * (m / 2) + 4 * (r % 8) + 2 * (m % 2) + r / 8;
    }
    return 32 * (m / 2) + 2 * (r % 8) + r / 8;  // head dim 80: the last 16 dims, one tile
  }
}

// One warp's online-softmax state over its keys in the key-rows form: O^T [HEAD_DIM x 8 heads]
// and this lane's two heads' maximum (log2 domain) and partial sum (this lane's keys only).
template <int HEAD_DIM>
struct KeyRowsState {
  static constexpr bool kKeyRows = true;
  float o[HEAD_DIM / 16][4];
  float col_max[2];
  float col_sum[2];
  __device__ __forceinline__ void init() {
    const float neg_inf = -__int_as_float(0x7f800000);
#pragma unroll
    for (int m = 0; m < HEAD_DIM / 16; ++m) o[m][0] = o[m][1] = o[m][2] = o[m][3] = 0.0f;
    col_max[0] = col_max[1] = neg_inf;
    col_sum[0] = col_sum[1] = 0.0f;
  }
};

// Q^T's B fragments (head quad, dims 2 t4, 2 t4 + 1 and + 8 of each k16 step), held in registers
// (HEAD_DIM / 8 of them) from the Q tile's first 8 rows; fp8 K/V: the permuted dims, 4 adjacent
// elements per lane.
template <bool KV_FP8, int HEAD_DIM>
struct KeyRowsQ {
  static constexpr int K_STEPS = HEAD_DIM / 16;
  static constexpr int ROW = paged_decode::sm80_mma::row_elements(HEAD_DIM);
  unsigned int b[K_STEPS][2];
  // After the Q tile is in shared memory (and visible to the warp).
  __device__ __forceinline__ void init(const unsigned short* q_tile) {
    const int lane = threadIdx.x % 32;
#pragma unroll
    for (int ks = 0; ks < K_STEPS; ++ks) {
      const unsigned short* row = q_tile + (lane / 4) * ROW + ks * 16;
      if constexpr (KV_FP8) {
        b[ks][0] = *reinterpret_cast<const unsigned int*>(row + 4 * (lane % 4));
        b[ks][1] = *reinterpret_cast<const unsigned int*>(row + 4 * (lane % 4) + 2);
      } else {
        b[ks][0] = *reinterpret_cast<const unsigned int*>(row + 2 * (lane % 4));
        b[ks][1] = *reinterpret_cast<const unsigned int*>(row + 8 + 2 * (lane % 4));
      }
    }
  }
};

// The warp's WARP_TOKENS keys of one block, as attend_block of sm80_mma_block.cuh (same arguments
// and masking rules) in the key-rows form.
template <int MMA_DTYPE, bool KV_FP8, int HEAD_DIM, int WARP_TOKENS, class Tile>
__device__ __forceinline__ void attend_block(const unsigned char* k_tile,
                                             const unsigned char* v_tile, int row0,
                                             const KeyRowsQ<KV_FP8, HEAD_DIM>& q, int key0,
                                             int first_key, int kv_len, float score_scale,
                                             float cap_log2, KeyRowsState<HEAD_DIM>& st) {
  constexpr int KEY_TILES = WARP_TOKENS / 16;  // m16 tiles of the warp's keys
  constexpr int K_STEPS = HEAD_DIM / 16;       // k16 steps of K.Q
  constexpr int M_TILES = HEAD_DIM / 16;       // m16 tiles of O^T
  const float kNegInf = -__int_as_float(0x7f800000);
  const int lane = threadIdx.x % 32, quad = lane / 4, t4 = lane % 4;

  // S^T = K Q^T: [WARP_TOKENS keys x 8 heads]. The even and odd k16 steps accumulate apart (two
  // chains of dependent mma instead of one; a warp may hold a single key tile).
  float s[KEY_TILES][4], s_odd[KEY_TILES][4];
#pragma unroll
  for (int kt = 0; kt < KEY_TILES; ++kt) {
#pragma unroll
    for (int e = 0; e < 4; ++e) s[kt][e] = s_odd[kt][e] = 0.0f;
  }
#pragma unroll
  for (int ks = 0; ks < K_STEPS; ++ks) {
#pragma unroll
    for (int kt = 0; kt < KEY_TILES; ++kt) {
      unsigned int a[4];  // keys kt*16 .. +15, dims ks*16 .. +15
      if constexpr (KV_FP8) {
        const int row = row0 + kt * 16 + quad;
        e4m3x4_to_f16(
            *reinterpret_cast<const unsigned int*>(k_tile + Tile::offset(row, ks * 16 + 4 * t4)),
            a[0], a[2]);
        e4m3x4_to_f16(*reinterpret_cast<const unsigned int*>(
                          k_tile + Tile::offset(row + 8, ks * 16 + 4 * t4)),
                      a[1], a[3]);
      } else {
        ldmatrix_x4(a, k_tile + Tile::offset(row0 + kt * 16 + lane % 8 + 8 * ((lane / 8) % 2),
                                             (ks * 2 + lane / 16) * 16));
      }
      mma_m16n8k16<MMA_DTYPE>(ks % 2 == 0 ? s[kt] : s_odd[kt], a, q.b[ks][0], q.b[ks][1]);
    }
  }
#pragma unroll
  for (int kt = 0; kt < KEY_TILES; ++kt) {
#pragma unroll
    for (int e = 0; e < 4; ++e) s[kt][e] += s_odd[kt][e];
  }

  // Logits (log2 domain), the masks, and this block's maximum per head.
  float tile_max[2] = {kNegInf, kNegInf};
#pragma unroll
  for (int kt = 0; kt < KEY_TILES; ++kt) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int t = key0 + kt * 16 + quad + 8 * (e / 2);
      float x = s[kt][e] * score_scale;
      if (cap_log2 > 0.0f) x = cap_log2 * tanhf(x);
      if (t >= kv_len || t < first_key) x = kNegInf;
      s[kt][e] = x;
      tile_max[e % 2] = fmaxf(tile_max[e % 2], x);
    }
  }
  float base[2], alpha[2];
  bool grew = false;
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    // The 8 lanes with one t4 hold one head's keys.
#pragma unroll
    for (int mask = 4; mask < 32; mask *= 2)
      tile_max[j] = fmaxf(tile_max[j], __shfl_xor_sync(0xffffffffu, tile_max[j], mask));
    const float new_max = fmaxf(st.col_max[j], tile_max[j]);
    base[j] = new_max == kNegInf ? 0.0f : new_max;  // no key yet: avoid -inf - -inf
    alpha[j] = exp2f(st.col_max[j] - base[j]);      // 0 while the head had no key
    grew |= new_max != st.col_max[j];
    st.col_max[j] = new_max;
    st.col_sum[j] *= alpha[j];
  }
  if (__any_sync(0xffffffffu, grew)) {
#pragma unroll
    for (int m = 0; m < M_TILES; ++m) {
      st.o[m][0] *= alpha[0];
      st.o[m][1] *= alpha[1];
      st.o[m][2] *= alpha[0];
      st.o[m][3] *= alpha[1];
    }
  }

  // P^T = 2^(S^T - max), then O^T += V^T P^T, one k16 slice (16 keys) at a time.
#pragma unroll
  for (int kt = 0; kt < KEY_TILES; ++kt) {
    float prob[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      prob[e] = exp2f(s[kt][e] - base[e % 2]);
      st.col_sum[e % 2] += prob[e];
    }
    // Keys quad (and quad + 8) x heads 2 t4, 2 t4 + 1, transposed: head quad x keys 2 t4, 2 t4 + 1
    // (and + 8), the B fragment of P^T.
    const unsigned int b0 = movmatrix_trans(pack2<MMA_DTYPE>(prob[0], prob[1]));
    const unsigned int b1 = movmatrix_trans(pack2<MMA_DTYPE>(prob[2], prob[3]));
    if constexpr (KV_FP8) {
      // V^T's A fragment: rows (dims) of tiles 2g and 2g + 1 from one 32-bit load per key of
      // keys 2 t4, 2 t4 + 1, 2 t4 + 8, 2 t4 + 9 (key_rows_dim says which dim each row is).
      const int key_row = row0 + kt * 16 + 2 * t4;
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
        for (int h = 0; h < 2; ++h) {
          unsigned int a[4];
          e4m3_pairs_to_f16(w0, w1, 2 * h, a[0], a[1]);
          e4m3_pairs_to_f16(w8, w9, 2 * h, a[2], a[3]);
          mma_m16n8k16<MMA_DTYPE>(st.o[2 * g + h], a, b0, b1);
        }
      }
      if constexpr (HEAD_DIM % 32 != 0) {
        // Head dim 80: the last 16 dims, one tile, one 16-bit load per key.
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
        unsigned int a[4];
        e4m3_pairs_to_f16(w0, w1, 0, a[0], a[1]);
        e4m3_pairs_to_f16(w8, w9, 0, a[2], a[3]);
        mma_m16n8k16<MMA_DTYPE>(st.o[2 * G], a, b0, b1);
      }
    } else {
#pragma unroll
      for (int m = 0; m < M_TILES; ++m) {
        unsigned int a[4];  // dims m*16 .. +15 x keys kt*16 .. +15, from V's rows transposed
        ldmatrix_x4_trans(a, v_tile + Tile::offset(row0 + kt * 16 + lane % 8 + 8 * (lane / 16),
                                                   (m * 2 + (lane / 8) % 2) * 16));
        mma_m16n8k16<MMA_DTYPE>(st.o[m], a, b0, b1);
      }
    }
  }
}

// The warp's state and Q fragments in the head-rows form (KEY_ROWS false, sm80_mma_block.cuh) or
// the key-rows form (groups of at most 8 heads); attend_block and the epilogue take either.
template <bool KEY_ROWS, bool KV_FP8, int HEAD_DIM>
struct BlockForm {
  using State = WarpState<HEAD_DIM>;
  using Q = QFragments<KV_FP8, HEAD_DIM>;
};
template <bool KV_FP8, int HEAD_DIM>
struct BlockForm<true, KV_FP8, HEAD_DIM> {
  using State = KeyRowsState<HEAD_DIM>;
  using Q = KeyRowsQ<KV_FP8, HEAD_DIM>;
};

}  // namespace paged_decode::sm80_mma
}  // namespace attn
