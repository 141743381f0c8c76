// blocksparse.sm80_mma_decode: block-sparse attention for one query token per sequence (seed 003's
// decode path) on the tensor cores (mma.sync m16n8k16), with the q heads of a GQA group in the M
// rows.
//
// Computes, for each sequence s (query at position kv_len - 1, layout row (kv_len - 1) /
// block_size) and q head h (kv head h / group),
//   out[s, h] = softmax_j(scale * q[s, h] . k[s, j, h / group]) v[s, j, h / group]
// over the keys j < kv_len whose block the layout of q head h keeps in that row (causality adds
// nothing for the last position). A head that sees no key writes zeros.
//
// Layout: Q and out [num_seqs, num_q_heads, head_dim]; K and V contiguous [total_kv,
// num_kv_heads, head_dim] (gathered from the paged pool once, outside the timing).
//
// Work decomposition (a 1-D grid over (sequence, kv head), heaviest first):
// - A CTA serves the `group` q heads of one kv head: they are the M rows of 16 x 8 x 16 mma tiles
//   (rows past the group are zero padding), so a K/V tile is read once for the whole group. The
//   group's heads keep different blocks (head sliding), so the host lists, per CTA, the union of
//   their kept blocks in TILE_N-key tiles, each with a bit per head saying whether that head keeps
//   it; a head's row is masked to -inf on the tiles it does not keep. Nothing else is iterated:
//   a one-token query never runs a 64-row tile, and never visits a dropped block.
// - Each warp owns TILE_N / WARPS keys of every tile and its own online-softmax state; it copies
//   exactly the rows it computes (cp.async, STAGES buffers), so the key loop has no barrier
//   between warps. The warps' states are merged once through shared memory at the end.
//
// An fp8 cache (KV_FP8): K and V are e4m3 codes ([total_kv, num_kv_heads, head_dim] bytes, the
// gather keeps them), times the kv head's scale (k_scale, v_scale). Each warp copies its rows'
// codes into the stages (plain rows, half the bytes) and, once they have landed, converts them
// into its rows of one 16-bit K and V tile (e4m3x16_to_16bit: exact, every e4m3 value is a bf16
// and an fp16), which its mma read as they read a 16-bit stage; still no barrier between warps.
// K's scale folds into the logit scale, V's into the output's normaliser.
//
// Tunables and why they exist:
//   TILE_N  keys per tile (the kv block size, dividing the layout's block): bytes in flight per
//           stage vs shared memory
//   WARPS   key slices computed in parallel vs CTAs per SM
//   STAGES  pipeline depth: tiles in flight per warp while one is computed
#pragma once

#include "kernels/blocksparse/blocksparse_params.hpp"
#include "kernels/blocksparse/sm80_mma_decode_traits.hpp"
#include "kernels/common/convert.cuh"
#include "kernels/common/cp_async.cuh"
#include "kernels/common/mma_sm80.cuh"

namespace attn {

// KV_FP8 last, defaulting to false: a 16-bit cache keeps its name expression.
template <int DTYPE, int HEAD_DIM, int TILE_N, int WARPS, int STAGES, bool KV_FP8 = false>
__global__ void __launch_bounds__(WARPS * 32)
    blocksparse_sm80_mma_decode(const BlockSparseDecodeParams p) {
  static_assert(
      blocksparse::sm80_mma_decode::check(HEAD_DIM, TILE_N, WARPS, STAGES, KV_FP8) ==
          blocksparse::sm80_mma_decode::kOk,
      "invalid blocksparse.sm80_mma_decode config: see blocksparse::sm80_mma_decode::check");
  constexpr int THREADS = blocksparse::sm80_mma_decode::threads(WARPS);
  constexpr int ROW =
      blocksparse::sm80_mma_decode::row_elements(HEAD_DIM);  // padded smem row (16-bit)
  constexpr int M = blocksparse::sm80_mma_decode::kMmaRows;
  constexpr int WARP_KEYS = blocksparse::sm80_mma_decode::warp_keys(TILE_N, WARPS);
  constexpr int S_TILES = WARP_KEYS / 8;  // n8 tiles of the warp's scores
  constexpr int D_TILES = HEAD_DIM / 8;   // n8 tiles of the output
  constexpr int K_STEPS = HEAD_DIM / 16;  // k16 steps of Q.K
  constexpr int CHUNKS = HEAD_DIM / 8;    // 16-byte chunks of a K/V row
  // Lanes per copied row: CHUNKS rounded up to a power of two (80, 96, 192: some lanes idle).
  constexpr int COPY_LANES = blocksparse::sm80_mma_decode::copy_lanes(HEAD_DIM);
  constexpr int ROWS_PER_PASS = 32 / COPY_LANES;
  constexpr int PASSES = WARP_KEYS / ROWS_PER_PASS;
  constexpr int KV_TILE = TILE_N * ROW;  // one K or V buffer, elements
  constexpr int STAGE_AREA =
      blocksparse::sm80_mma_decode::shared_bytes(HEAD_DIM, TILE_N, WARPS, STAGES, KV_FP8) -
      M * ROW * 2;
  // KV_FP8: one stage's codes, K [TILE_N][HEAD_DIM] then V (bytes); the converted K and V tiles
  // ([TILE_N][ROW] 16-bit values each) follow the stages.
  constexpr int FP8_STAGE = blocksparse::sm80_mma_decode::stage_bytes(HEAD_DIM, TILE_N, true);
  constexpr int ROW_UNITS = HEAD_DIM / 16;           // 16-code units of a row
  constexpr int WARP_UNITS = WARP_KEYS * ROW_UNITS;  // of the warp's K (or V) rows
  constexpr int UNIT_PASSES = (WARP_UNITS + 31) / 32;
  static_assert(32 % COPY_LANES == 0 && WARP_KEYS % ROWS_PER_PASS == 0, "copy pattern");
  const float kNegInf = -__int_as_float(0x7f800000);

  // The stage area [STAGES][K, V][TILE_N][ROW] (KV_FP8: [STAGES][K, V][TILE_N][HEAD_DIM] codes,
  // then the converted [K, V][TILE_N][ROW]; after the loop: the cross-warp merge), then Q.
  extern __shared__ __align__(16) unsigned char decode_smem[];
  unsigned short* kv_tiles = reinterpret_cast<unsigned short*>(decode_smem);
  unsigned short* converted =
      reinterpret_cast<unsigned short*>(decode_smem + STAGES * FP8_STAGE);  // KV_FP8 only
  unsigned short* q_tile = reinterpret_cast<unsigned short*>(decode_smem + STAGE_AREA);

  const int seq = p.ctas[2 * blockIdx.x], kv_head = p.ctas[2 * blockIdx.x + 1];
  const int entry_begin = p.entry_begin[blockIdx.x];
  const int n_tiles = p.entry_begin[blockIdx.x + 1] - entry_begin;
  const int* entries = p.entries + 2 * (long long)entry_begin;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int q_head0 = kv_head * p.group;
  const int kv_begin = p.cu_seqlens_kv[seq], kv_len = p.cu_seqlens_kv[seq + 1] - kv_begin;
  // The logit scale, times an fp8 cache's K scale; V's multiplies the output.
  float scale_log2 = p.scale_log2;
  float out_scale = 1.0f;
  if constexpr (KV_FP8) {
    scale_log2 *= p.k_scale[kv_head];
    out_scale = p.v_scale[kv_head];
  }

  // Each warp copies its own WARP_KEYS rows of every tile: lane copies chunk lane % COPY_LANES
  // (when the row has it) of the rows warp * WARP_KEYS + lane / COPY_LANES + i * ROWS_PER_PASS.
  // Keys past the end are zero-filled.
  const int kv_stride = p.num_kv_heads * HEAD_DIM;
  const int copy_col = (lane % COPY_LANES) * 8;
  const int copy_row = warp * WARP_KEYS + lane / COPY_LANES;
  // Compile-time true where CHUNKS is a power of two (head dims 64 and 128).
  const bool copy_lane_active = CHUNKS == COPY_LANES || lane % COPY_LANES < CHUNKS;
  const long long head_offset = (long long)kv_begin * kv_stride + kv_head * HEAD_DIM + copy_col;
  const unsigned short* k_copy = static_cast<const unsigned short*>(p.k) + head_offset;
  const unsigned short* v_copy = static_cast<const unsigned short*>(p.v) + head_offset;
  // KV_FP8: the sequence's first code of this kv head (byte offsets are element offsets).
  const long long code_offset = (long long)kv_begin * kv_stride + kv_head * HEAD_DIM;
  const unsigned char* k_codes = static_cast<const unsigned char*>(p.k) + code_offset;
  const unsigned char* v_codes = static_cast<const unsigned char*>(p.v) + code_offset;
  auto load_tile = [&](int n, int stage) {
    if constexpr (KV_FP8) {
      // The warp's rows as plain rows of codes, 16 codes a copy: unit u of the warp is code
      // chunk u % ROW_UNITS of its row u / ROW_UNITS. Keys past the end zero-filled.
      unsigned char* k_dst = reinterpret_cast<unsigned char*>(kv_tiles) + stage * FP8_STAGE +
                             warp * WARP_KEYS * HEAD_DIM;
      unsigned char* v_dst = k_dst + TILE_N * HEAD_DIM;
      const int key0 = entries[2 * n] + warp * WARP_KEYS;
#pragma unroll
      for (int i = 0; i < UNIT_PASSES; ++i) {
        const int u = lane + i * 32;
        if (WARP_UNITS % 32 != 0 && u >= WARP_UNITS) break;
        const int key = key0 + u / ROW_UNITS;
        const bool valid = key < kv_len;
        const int at = (valid ? key * kv_stride : 0) + (u % ROW_UNITS) * 16;
        cp_async_16(k_dst + u * 16, k_codes + at, valid);
        cp_async_16(v_dst + u * 16, v_codes + at, valid);
      }
      return;
    }
    unsigned short* k_dst = kv_tiles + stage * 2 * KV_TILE + copy_row * ROW + copy_col;
    unsigned short* v_dst = k_dst + KV_TILE;
    const int key0 = entries[2 * n] + copy_row;
#pragma unroll
    for (int i = 0; i < PASSES; ++i) {
      const int key = key0 + i * ROWS_PER_PASS;
      const bool valid = key < kv_len;
      const int at = valid ? key * kv_stride : 0;
      if (copy_lane_active) {
        cp_async_16(k_dst + i * ROWS_PER_PASS * ROW, k_copy + at, valid);
        cp_async_16(v_dst + i * ROWS_PER_PASS * ROW, v_copy + at, valid);
      }
    }
  };

  // Prologue: STAGES - 1 tiles in flight, Q in the first group (so the first wait covers it).
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < n_tiles) load_tile(s, s);
    if (s == 0) {
      // The group's Q rows; padding rows are zero (finite scores, masked, never written).
      for (int c = tid; c < M * CHUNKS; c += THREADS) {
        const int r = c / CHUNKS, col = (c % CHUNKS) * 8;
        const bool valid = r < p.group;
        const long long row = valid ? (long long)seq * p.num_q_heads + q_head0 + r : 0;
        cp_async_16(q_tile + r * ROW + col,
                    static_cast<const unsigned short*>(p.q) + row * HEAD_DIM + col, valid);
      }
    }
    cp_async_commit();
  }

  float o[D_TILES][4];
#pragma unroll
  for (int d = 0; d < D_TILES; ++d) o[d][0] = o[d][1] = o[d][2] = o[d][3] = 0.0f;
  float row_max[2] = {kNegInf, kNegInf};  // log2 domain; rows lane / 4 and lane / 4 + 8
  float row_sum[2] = {0.0f, 0.0f};        // this lane's columns only; summed over the quad
  const int r0 = lane / 4;

  const unsigned short* q_frag = q_tile + (lane % 16) * ROW + (lane / 16) * 8;
  const int k_frag = ((lane / 16) * 8 + lane % 8) * ROW + ((lane / 8) % 2) * 8;
  const int v_frag = (lane % 16) * ROW + (lane / 16) * 8;
  unsigned int q_a[K_STEPS][4];  // Q's A fragments, loaded once

  for (int n = 0; n < n_tiles; ++n) {
    cp_async_wait<STAGES - 2>();
    if (n == 0) {
      __syncthreads();  // Q, copied by every warp, visible to all
#pragma unroll
      for (int ks = 0; ks < K_STEPS; ++ks) ldmatrix_x4(q_a[ks], q_frag + ks * 16);
    } else {
      __syncwarp();  // the warp's copies of tile n visible to its lanes; tile n - 1 consumed
    }
    if (n + STAGES - 1 < n_tiles) load_tile(n + STAGES - 1, (n + STAGES - 1) % STAGES);
    cp_async_commit();
    if constexpr (KV_FP8) {
      // The warp's rows of tile n's codes into its rows of the 16-bit K and V tiles (the barrier
      // above: every lane done with tile n - 1's), published to the warp's lanes.
      const unsigned char* k_stage = reinterpret_cast<const unsigned char*>(kv_tiles) +
                                     (n % STAGES) * FP8_STAGE + warp * WARP_KEYS * HEAD_DIM;
      unsigned short* k_rows = converted + warp * WARP_KEYS * ROW;
#pragma unroll
      for (int i = 0; i < UNIT_PASSES; ++i) {
        const int u = lane + i * 32;
        if (WARP_UNITS % 32 != 0 && u >= WARP_UNITS) break;
        const int at = (u / ROW_UNITS) * ROW + (u % ROW_UNITS) * 16;
        uint4 lo, hi;
        e4m3x16_to_16bit<DTYPE>(*reinterpret_cast<const uint4*>(k_stage + u * 16), lo, hi);
        *reinterpret_cast<uint4*>(k_rows + at) = lo;
        *reinterpret_cast<uint4*>(k_rows + at + 8) = hi;
        e4m3x16_to_16bit<DTYPE>(
            *reinterpret_cast<const uint4*>(k_stage + TILE_N * HEAD_DIM + u * 16), lo, hi);
        *reinterpret_cast<uint4*>(k_rows + KV_TILE + at) = lo;
        *reinterpret_cast<uint4*>(k_rows + KV_TILE + at + 8) = hi;
      }
      __syncwarp();
    }

    const int key0 = entries[2 * n] + warp * WARP_KEYS;
    const unsigned int heads = unsigned(entries[2 * n + 1]);  // bit r: q head r keeps the tile
    const bool keep_lo = (heads >> r0) & 1u, keep_hi = (heads >> (r0 + 8)) & 1u;
    const unsigned short* k_tile =
        (KV_FP8 ? converted : kv_tiles + (n % STAGES) * 2 * KV_TILE) + warp * WARP_KEYS * ROW;
    const unsigned short* v_tile = k_tile + KV_TILE;

    // S = Q K^T over the warp's keys: [16 heads x WARP_KEYS keys].
    float s[S_TILES][4];
#pragma unroll
    for (int j = 0; j < S_TILES; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
#pragma unroll
    for (int ks = 0; ks < K_STEPS; ++ks) {
#pragma unroll
      for (int pair = 0; pair < S_TILES / 2; ++pair) {
        unsigned int b[4];  // keys pair*16 .. +7 and +8 .. +15, dims ks*16 .. +15
        ldmatrix_x4(b, k_tile + pair * 16 * ROW + k_frag + ks * 16);
        mma_m16n8k16<DTYPE>(s[2 * pair], q_a[ks], b[0], b[1]);
        mma_m16n8k16<DTYPE>(s[2 * pair + 1], q_a[ks], b[2], b[3]);
      }
    }

    // Logits in the log2 domain; the head mask and the end of the sequence.
    float tile_max[2] = {kNegInf, kNegInf};
#pragma unroll
    for (int j = 0; j < S_TILES; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int key = key0 + j * 8 + 2 * (lane % 4) + (e & 1);
        const bool keep = (e < 2 ? keep_lo : keep_hi) && key < kv_len;
        const float x = keep ? s[j][e] * scale_log2 : kNegInf;
        s[j][e] = x;
        tile_max[e / 2] = fmaxf(tile_max[e / 2], x);
      }
    }
    float base[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 1));
      tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 2));
      const float new_max = fmaxf(row_max[r], tile_max[r]);
      base[r] = new_max == kNegInf ? 0.0f : new_max;    // no key yet: avoid -inf - -inf
      const float alpha = exp2f(row_max[r] - base[r]);  // 0 while the row had no key
      row_max[r] = new_max;
      row_sum[r] *= alpha;
#pragma unroll
      for (int d = 0; d < D_TILES; ++d) {
        o[d][2 * r] *= alpha;
        o[d][2 * r + 1] *= alpha;
      }
    }

    // P = 2^(S - max), then O += P V (two n8 tiles of S make one k16 slice of P).
#pragma unroll
    for (int kc = 0; kc < S_TILES / 2; ++kc) {
      float prob[2][4];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          prob[h][e] = exp2f(s[2 * kc + h][e] - base[e / 2]);
          row_sum[e / 2] += prob[h][e];
        }
      }
      unsigned int a[4];
      a[0] = pack2<DTYPE>(prob[0][0], prob[0][1]);
      a[1] = pack2<DTYPE>(prob[0][2], prob[0][3]);
      a[2] = pack2<DTYPE>(prob[1][0], prob[1][1]);
      a[3] = pack2<DTYPE>(prob[1][2], prob[1][3]);
#pragma unroll
      for (int dp = 0; dp < D_TILES / 2; ++dp) {
        unsigned int b[4];  // keys kc*16 .. +15, dims dp*16 .. +7 and +8 .. +15
        ldmatrix_x4_trans(b, v_tile + kc * 16 * ROW + v_frag + dp * 16);
        mma_m16n8k16<DTYPE>(o[2 * dp], a, b[0], b[1]);
        mma_m16n8k16<DTYPE>(o[2 * dp + 1], a, b[2], b[3]);
      }
    }
  }
  cp_async_wait<0>();
  __syncthreads();  // every warp done with the stage buffers: they become the merge area

  float* merge_out = reinterpret_cast<float*>(decode_smem);  // [WARPS][M][HEAD_DIM]
  float* merge_max = merge_out + WARPS * M * HEAD_DIM;       // [WARPS][M]
  float* merge_sum = merge_max + WARPS * M;                  // [WARPS][M]
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    row_sum[r] += __shfl_xor_sync(0xffffffffu, row_sum[r], 1);
    row_sum[r] += __shfl_xor_sync(0xffffffffu, row_sum[r], 2);
    float* dst = merge_out + (warp * M + r0 + 8 * r) * HEAD_DIM;
#pragma unroll
    for (int d = 0; d < D_TILES; ++d) {
      *reinterpret_cast<float2*>(dst + d * 8 + 2 * (lane % 4)) =
          make_float2(o[d][2 * r], o[d][2 * r + 1]);
    }
    if (lane % 4 == 0) {
      merge_max[warp * M + r0 + 8 * r] = row_max[r];
      merge_sum[warp * M + r0 + 8 * r] = row_sum[r];
    }
  }
  __syncthreads();

  // Two output elements per thread and step, over the group's rows only.
  for (int idx = tid; idx < p.group * (HEAD_DIM / 2); idx += THREADS) {
    const int r = idx / (HEAD_DIM / 2), d = (idx % (HEAD_DIM / 2)) * 2;
    float top = kNegInf;
#pragma unroll
    for (int w = 0; w < WARPS; ++w) top = fmaxf(top, merge_max[w * M + r]);
    const float top_base = top == kNegInf ? 0.0f : top;
    float sum = 0.0f, x0 = 0.0f, x1 = 0.0f;
#pragma unroll
    for (int w = 0; w < WARPS; ++w) {
      const float factor = exp2f(merge_max[w * M + r] - top_base);
      const float2 part = *reinterpret_cast<const float2*>(merge_out + (w * M + r) * HEAD_DIM + d);
      sum = fmaf(merge_sum[w * M + r], factor, sum);
      x0 = fmaf(part.x, factor, x0);
      x1 = fmaf(part.y, factor, x1);
    }
    const float inv = sum > 0.0f ? out_scale / sum : 0.0f;  // no visible key: zeros
    const long long row = (long long)seq * p.num_q_heads + q_head0 + r;
    *reinterpret_cast<unsigned int*>(static_cast<unsigned short*>(p.out) + row * HEAD_DIM + d) =
        pack2<DTYPE>(x0 * inv, x1 * inv);
  }
}

}  // namespace attn
