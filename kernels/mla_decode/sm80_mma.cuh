// mla_decode.sm80_mma: absorbed multi-head latent attention over a paged latent cache with
// mma.sync m16n8k16 (Ampere and newer). The family's semantics: kernels/mla_decode/
// mla_decode_variants.hpp and docs/mla-decode.md; shapes and rules: sm80_mma_traits.hpp.
//
// A CTA takes ROWS = 16 x M_TILES consecutive rows of one sequence (row r is query token r / H,
// q head r % H: Q's rows [total_q, H, rank + rope] are consecutive in that order) and one split of
// the sequence's keys, BLOCK keys at a time through a STAGES-deep cp.async pipeline. Every q head
// reads the same latent row, so the block is read once for all ROWS rows:
//   1. S = Q K^T: the block's keys are dealt to the warps (BLOCK / WARPS each); a warp multiplies
//      all ROWS rows of Q (A fragments from shared memory) by its keys' latent rows over the full
//      rank + rope width. Or (QK_DIMS) the width is dealt: a warp takes its rank / WARPS output
//      columns of step 3 and its share of the rotary columns (16 at a time, round-robin), Q's
//      slice held in registers, and the warps' partial scores are summed through shared memory.
//   2. The block's row maxima are exchanged through shared memory; every warp then holds the same
//      running max, so each rescales its own part of the output and keeps a partial row sum. The
//      running max (log2 units) rises only where a block's exceeds it by more than 8
//      (raise_running_max): P stays below 2^8, and most blocks rescale nothing.
//      P = 2^(S * scale_log2 - max) goes to shared memory as 16-bit values.
//   3. O += P V: V is the first rank columns of the same latent block (ldmatrix.trans); the output
//      columns are dealt to the warps (rank / WARPS each), every warp reading all of P.
// Three barriers per block. An fp8 latent cache (KV_FP8) adds a step before 1: the block's fp8
// rows, staged by cp.async (STAGES staging buffers in flight), are converted exactly into one
// fp16 block tile, which 1 and 3 then read as they read a 16-bit stage, in fp16 mma (a bf16 Q
// converted once, q_to_scaled_f16) (one more barrier; with QK_DIMS each warp converts the columns
// only it reads, into Q's bytes once Q is in its registers, and no barrier is added). The cache's
// scale is folded into the score scale and into the output's normaliser, never applied per element.
// With one split the CTA normalises and writes its rows. With several, each writes its normalised
// rows and their log2-sum-exp to the partial buffers, and the last CTA of the (sequence, row tile)
// to finish (a counter per pair) merges them into the output.
#pragma once

#include "kernels/common/convert.cuh"
#include "kernels/common/cp_async.cuh"
#include "kernels/common/fast_math.cuh"
#include "kernels/common/mma_sm80.cuh"
#include "kernels/mla_decode/sm80_mma_params.hpp"
#include "kernels/mla_decode/sm80_mma_traits.hpp"
#include "kernels/mla_decode/split_merge.cuh"

namespace attn {
namespace mla_sm80 {

// Byte offset of 16-byte chunk `chunk` of row `row` in a tile of CHUNKS chunks per row: chunks are
// XOR-swizzled by row mod 8 within each 128-byte line (CHUNKS is a multiple of 8).
template <int CHUNKS>
__device__ __forceinline__ unsigned swizzled(int row, int chunk) {
  return unsigned((row * CHUNKS + (chunk ^ (row & 7))) * 16);
}

// Copies `rows` fp8 rows of D bytes into a staging buffer (row r at r * D bytes, unswizzled), 4
// threads per row (each thread the chunks sub, sub + 4, ...: 4 neighbours read 64 contiguous
// bytes). D is a multiple of 64. source(r) is row r's global address, or null for a row to fill
// with zeros.
template <int D, int THREADS, class Source>
__device__ __forceinline__ void copy_fp8_rows(unsigned char* staging, int rows, Source source) {
  constexpr int CHUNKS = D / 16;
  constexpr int ROWS_PER_PASS = THREADS / 4;
  const int sub = threadIdx.x % 4;
  for (int r = threadIdx.x / 4; r < rows; r += ROWS_PER_PASS) {
    const unsigned char* src = source(r);
#pragma unroll
    for (int j = 0; j < CHUNKS / 4; ++j) {
      const int chunk = 4 * j + sub;
      unsigned char* dst = staging + r * D + chunk * 16;
      cp_async_16(dst, src ? src + chunk * 16 : dst, src != nullptr);
    }
  }
}

// Converts `rows` staged fp8 rows (copy_fp8_rows) into the swizzled fp16 tile the products read:
// one 16-byte chunk (8 elements) per thread and step, from 8 staged bytes. Consecutive threads take
// consecutive chunks of a row (D / 8 of them, a multiple of 8), so each quarter warp's stores fill
// one 128-byte line's 8 swizzled chunks: no bank conflict; the loads are consecutive 8-byte words.
template <int D, int THREADS>
__device__ __forceinline__ void convert_fp8_rows(unsigned char* tile, const unsigned char* staging,
                                                 int rows) {
  constexpr int CHUNKS = D / 8;
  for (int i = threadIdx.x; i < rows * CHUNKS; i += THREADS) {
    const int r = i / CHUNKS, chunk = i % CHUNKS;
    const uint2 codes = *reinterpret_cast<const uint2*>(staging + i * 8);
    *reinterpret_cast<uint4*>(tile + swizzled<CHUNKS>(r, chunk)) = e4m3x8_to_f16(codes);
  }
}

// qk_by_dims: the k-th 16-wide step of warp `warp`'s slice of the latent width (k below
// traits::max_slice_steps): its RANK / WARPS latent columns (its output columns in
// O += P V), then its rotary steps, dealt round-robin.
template <int RANK, int ROPE, int WARPS>
__device__ __forceinline__ int slice_column(int warp, int k) {
  constexpr int LATENT_STEPS = mla_decode::sm80_mma::latent_steps(RANK, WARPS);
  const int rotary = warp + WARPS * (k - LATENT_STEPS);
  // Past the warp's steps (its Q fragment is zeros there): its first column, any real one.
  return k < LATENT_STEPS     ? warp * (RANK / WARPS) + 16 * k
         : rotary < ROPE / 16 ? RANK + 16 * rotary
                              : warp * (RANK / WARPS);
}

// The running maximum a row's P is taken against (log2 units): raised to the block's maximum only
// where that is more than kLazyMax above it, so P stays at most 2^kLazyMax (fp16 and bf16 hold it;
// the sums are fp32) and most blocks rescale nothing. Returns the factor for what was accumulated
// against the old maximum: 1 where it was kept, 0 at a row's first visible key.
constexpr float kLazyMax = 8.0f;
__device__ __forceinline__ float raise_running_max(float& running, float block_max) {
  if (!(block_max > running + kLazyMax)) return 1.0f;  // -inf + 8 is -inf: a first key raises
  const float old = running;
  running = block_max;
  return exp2_ftz(old - block_max);
}

// Multiplies the rows of the output accumulator fragments (rows lane / 4 and + 8 of each m16 tile)
// by their factors.
template <int M_TILES, int OT>
__device__ __forceinline__ void rescale_accumulator(float (&acc)[M_TILES][OT][4],
                                                    const float (&factor)[M_TILES][2]) {
#pragma unroll
  for (int mt = 0; mt < M_TILES; ++mt) {
#pragma unroll
    for (int ot = 0; ot < OT; ++ot) {
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mt][ot][e] *= factor[mt][e / 2];
    }
  }
}

// qk_by_dims: one warp converts its slice (slice_column) of a block's BLOCK staged fp8 rows into
// the swizzled fp16 tile, one 16-byte chunk per lane and step. Only this warp reads those columns
// of the tile, so a __syncwarp orders the conversion and the products.
template <int RANK, int ROPE, int WARPS, int BLOCK>
__device__ __forceinline__ void convert_fp8_slice(unsigned char* tile, const unsigned char* staging,
                                                  int warp, int lane) {
  constexpr int D = RANK + ROPE;
  constexpr int LATENT = RANK / WARPS / 8;  // latent chunks of the slice
  constexpr int ROTARY = mla_decode::sm80_mma::rotary_steps(ROPE, WARPS, 0);  // most rotary steps
  auto convert = [&](int r, int chunk) {
    const uint2 codes = *reinterpret_cast<const uint2*>(staging + r * D + chunk * 8);
    *reinterpret_cast<uint4*>(tile + swizzled<D / 8>(r, chunk)) = e4m3x8_to_f16(codes);
  };
#pragma unroll
  for (int i = lane; i < BLOCK * LATENT; i += 32) convert(i / LATENT, warp * LATENT + i % LATENT);
#pragma unroll
  for (int j = 0; j < ROTARY; ++j) {
    const int step = warp + WARPS * j;  // of the rotary part's 16-wide steps (2 chunks each)
    if ((ROPE / 16) % WARPS != 0 && step >= ROPE / 16) break;
#pragma unroll
    for (int i = lane; i < BLOCK * 2; i += 32) convert(i / 2, RANK / 8 + 2 * step + i % 2);
  }
}

// KV_FP8 over a bf16 Q: converts Q's ROWS rows in place to fp16 (the products' type), each row
// times its f16_row_factors' to_f16; row_factor[r] = back goes into the row's score scale. One
// warp per row at a time.
template <int D, int ROWS, int WARPS>
__device__ __forceinline__ void q_to_scaled_f16(unsigned char* q_s, float* row_factor, int warp,
                                                int lane) {
  constexpr int CHUNKS = D / 8;
  for (int r = warp; r < ROWS; r += WARPS) {
    float most = 0.0f;
    for (int c = lane; c < CHUNKS; c += 32) {
      float v[8];
      unpack8<kDTypeBf16>(*reinterpret_cast<const uint4*>(q_s + swizzled<CHUNKS>(r, c)), v);
#pragma unroll
      for (int i = 0; i < 8; ++i) most = fmaxf(most, fabsf(v[i]));
    }
#pragma unroll
    for (int o = 16; o > 0; o /= 2) most = fmaxf(most, __shfl_xor_sync(0xffffffffu, most, o));
    float scale, back;
    f16_row_factors(most, scale, back);
    for (int c = lane; c < CHUNKS; c += 32) {
      uint4* chunk = reinterpret_cast<uint4*>(q_s + swizzled<CHUNKS>(r, c));
      float v[8];
      unpack8<kDTypeBf16>(*chunk, v);
#pragma unroll
      for (int i = 0; i < 8; ++i) v[i] *= scale;
      *chunk = pack8<kDTypeFp16>(v);
    }
    if (lane == 0) row_factor[r] = back;
  }
}

// Copies `rows` rows of D 16-bit elements into a swizzled tile, 8 threads per row (each thread
// the chunks sub, sub + 8, ...: 8 neighbours read 128 contiguous bytes). source(r) is row r's
// global address, or null for a row to fill with zeros.
template <int D, int THREADS, class Source>
__device__ __forceinline__ void copy_rows(unsigned char* tile, int rows, Source source) {
  constexpr int CHUNKS = D / 8;
  constexpr int ROWS_PER_PASS = THREADS / 8;
  const int sub = threadIdx.x % 8;
  for (int r = threadIdx.x / 8; r < rows; r += ROWS_PER_PASS) {
    const unsigned char* src = source(r);
#pragma unroll
    for (int j = 0; j < CHUNKS / 8; ++j) {
      const int chunk = 8 * j + sub;
      cp_async_16(tile + swizzled<CHUNKS>(r, chunk), src ? src + chunk * 16 : tile, src != nullptr);
    }
  }
}

}  // namespace mla_sm80

// The launch bounds ask for one resident CTA per SM at least, so ptxas may use up to 255
// registers: without that minimum it held some configs (an fp8 cache split by keys) at 128 and
// spilled, and others ran a little slower (the fp8 TP8 preset 2-3%, 128 heads 1.7%; H200,
// 2026-12-01). Where registers allow, an SM still holds more (the split plan counts them).
template <int DTYPE, int RANK, int ROPE, int M_TILES, int BLOCK, int WARPS, int STAGES,
          bool QK_DIMS, bool KV_FP8>
__global__ void __launch_bounds__(WARPS * 32, 1) mla_decode_sm80_mma(const MlaSm80Params p) {
  namespace traits = mla_decode::sm80_mma;
  static_assert(
      traits::check(RANK, ROPE, M_TILES, BLOCK, WARPS, STAGES, QK_DIMS, KV_FP8) == traits::kOk,
      "mla_decode.sm80_mma config breaks a rule of sm80_mma_traits.hpp");
  constexpr int D = RANK + ROPE;
  constexpr int CHUNKS = D / 8;
  constexpr int ROWS = traits::tile_rows(M_TILES);
  constexpr int THREADS = traits::threads(WARPS);
  constexpr int KW = BLOCK / WARPS;  // keys of a block per warp in S = Q K^T
  constexpr int NT = KW / 8;         // n8 tiles of the warp's scores
  constexpr int CW = RANK / WARPS;   // output columns per warp in O += P V
  constexpr int OT = CW / 8;         // n8 tiles of the warp's output
  constexpr int P_STRIDE = BLOCK + 8;
  // The pipeline's stage: a 16-bit block, or (KV_FP8) a staged fp8 block.
  constexpr int STAGE_BYTES =
      KV_FP8 ? traits::fp8_stage_bytes(RANK, ROPE, BLOCK) : traits::stage_bytes(RANK, ROPE, BLOCK);
  // qk_by_dims: the most k16 steps of a warp's slice of the width (slice_column), the block's score
  // tiles, the partial scores' row stride, and the softmax's columns per warp, lanes per row,
  // scores per lane.
  constexpr int DK = traits::max_slice_steps(RANK, ROPE, WARPS);
  constexpr int SNT = BLOCK / 8;
  constexpr int S_STRIDE = BLOCK + 8;
  constexpr int CB = BLOCK / WARPS;
  constexpr int LPR = QK_DIMS ? traits::lanes_per_row(M_TILES) : 1;
  constexpr int E = QK_DIMS ? traits::scores_per_lane(M_TILES, BLOCK, WARPS) : 4;
  constexpr int VEC = E == 2 ? 2 : 4;  // partial scores read per load
  const float kNegInf = -__int_as_float(0x7f800000);

  // KV_FP8: the products run in fp16 (an e4m3 code becomes an f16 in one instruction per pair),
  // a bf16 Q converted once (q_to_scaled_f16); with QK_DIMS each warp converts its own columns of
  // the tile, in Q's bytes.
  constexpr int MMA = KV_FP8 ? kDTypeFp16 : DTYPE;
  constexpr bool Q_TO_F16 = KV_FP8 && DTYPE != kDTypeFp16;
  constexpr bool WARP_TILE = KV_FP8 && QK_DIMS;
  // A 16-bit cache split by width: Q's rows in the last stage's bytes (traits::q_in_pipeline).
  constexpr bool Q_IN_STAGE = !KV_FP8 && traits::q_in_pipeline(M_TILES, BLOCK, QK_DIMS, false);

  extern __shared__ __align__(128) unsigned char smem[];
  unsigned char* kv_s = smem + traits::stages_offset(RANK, ROPE, M_TILES, BLOCK, QK_DIMS, KV_FP8);
  unsigned char* q_s = Q_IN_STAGE ? kv_s + (STAGES - 1) * STAGE_BYTES : smem;
  // KV_FP8: the 16-bit block tile the staged fp8 block is converted into, after the stages (or in
  // Q's bytes).
  unsigned char* tile_s = WARP_TILE ? smem : kv_s + STAGES * STAGE_BYTES;
  unsigned short* p_s = reinterpret_cast<unsigned short*>(
      smem + traits::q_and_pipeline_bytes(RANK, ROPE, M_TILES, BLOCK, STAGES, QK_DIMS, KV_FP8));
  float* max_s = reinterpret_cast<float*>(reinterpret_cast<unsigned char*>(p_s) +
                                          traits::p_bytes(M_TILES, BLOCK));  // [WARPS][ROWS]
  float* sum_s = max_s + WARPS * ROWS;                                       // [WARPS][ROWS]
  float* factor_s = sum_s + WARPS * ROWS;  // [ROWS] (Q_TO_F16: the rows' factors)
  // qk_by_dims: the warps' partial scores, [WARPS][ROWS][S_STRIDE].
  float* red_s = factor_s + traits::factor_bytes(M_TILES) / 4;

  const MlaWorkItem work = mla_split::load_work_item(p);
  const int seq = work.seq, split = work.split, splits = work.splits;
  const int key_begin = work.key_begin, key_end = work.key_end;
  const int q0 = work.q0, q_len = work.q_len;
  const int seq_rows = q_len * p.num_q_heads;
  const int row0 = blockIdx.y * ROWS;
  if (row0 >= seq_rows) return;
  const int kv_len = work.kv_len;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  // qk_by_dims: this warp's k16 steps of the width (DK, or one fewer where the rotary steps do not
  // go evenly to the warps).
  constexpr bool EVEN_SLICES = (ROPE / 16) % WARPS == 0;
  const int SLICE_STEPS =
      traits::latent_steps(RANK, WARPS) + traits::rotary_steps(ROPE, WARPS, warp);
  // An fp8 cache holds code = value / kv_scale: scores and outputs of the codes times kv_scale.
  const float score_scale = KV_FP8 ? p.scale_log2 * p.kv_scale : p.scale_log2;
  const float out_scale = KV_FP8 ? p.kv_scale : 1.0f;

  // Q's rows (zeros past the sequence's last row), as the first cp.async group.
  const unsigned char* q_rows = static_cast<const unsigned char*>(p.q) +
                                (static_cast<long long>(q0) * p.num_q_heads + row0) * D * 2;
  mla_sm80::copy_rows<D, THREADS>(q_s, ROWS, [&](int r) -> const unsigned char* {
    return row0 + r < seq_rows ? q_rows + static_cast<long long>(r) * D * 2 : nullptr;
  });
  cp_async_commit();

  const int* table = p.block_table + static_cast<long long>(seq) * p.max_pages_per_seq;
  const unsigned char* latent = static_cast<const unsigned char*>(p.latent);
  constexpr int ELEMENT_BYTES = KV_FP8 ? 1 : 2;
  auto load_block = [&](int block) {
    const int key0 = key_begin + block * BLOCK;
    auto source = [&](int k) -> const unsigned char* {
      const int key = key0 + k;
      if (key >= key_end) return nullptr;
      const long long slot =
          static_cast<long long>(__ldg(table + key / p.page_size)) * p.page_size +
          key % p.page_size;
      return latent + slot * D * ELEMENT_BYTES;
    };
    if constexpr (KV_FP8) {
      mla_sm80::copy_fp8_rows<D, THREADS>(kv_s + (block % STAGES) * STAGE_BYTES, BLOCK, source);
    } else {
      mla_sm80::copy_rows<D, THREADS>(kv_s + (block % STAGES) * STAGE_BYTES, BLOCK, source);
    }
  };

  // The visible keys of the tile's row r end before limit(r): the causal diagonal of its query
  // token, or kv_len. Rows past the sequence's end are computed against zeros and never stored.
  const int causal_base = kv_len - q_len + 1;
  auto limit = [&](int r) { return p.causal ? causal_base + (row0 + r) / p.num_q_heads : kv_len; };
  const int first_limit = min(limit(0), key_end);

  float acc[M_TILES][OT][4];
  float row_max[M_TILES][2], row_sum[M_TILES][2];
#pragma unroll
  for (int mt = 0; mt < M_TILES; ++mt) {
#pragma unroll
    for (int ot = 0; ot < OT; ++ot) {
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mt][ot][e] = 0.0f;
    }
    row_max[mt][0] = row_max[mt][1] = kNegInf;
    row_sum[mt][0] = row_sum[mt][1] = 0.0f;
  }
  // qk_by_dims: Q's slice as A fragments, and the running max and partial sum of the row whose
  // scores this lane takes in the softmax.
  unsigned q_frag[QK_DIMS ? M_TILES : 1][QK_DIMS ? DK : 1][4];
  float soft_max = kNegInf, soft_sum = 0.0f;

  const unsigned q_addr = shared_address(q_s);
  const unsigned p_addr = shared_address(p_s);
  const int blocks = key_end > key_begin ? (key_end - key_begin + BLOCK - 1) / BLOCK : 0;
#pragma unroll
  for (int b = 0; b < STAGES - 1; ++b) {
    if (b < blocks) load_block(b);
    cp_async_commit();
  }
  // The score scale of the rows this lane holds scores of (QK_DIMS: its softmax row; else the rows
  // of its accumulator fragments): times the row's factor where Q went to fp16.
  float row_scale[QK_DIMS ? 1 : M_TILES][2];
  if constexpr (Q_TO_F16) {
    cp_async_wait<STAGES - 1>();  // Q's group, the first
    __syncthreads();
    mla_sm80::q_to_scaled_f16<D, ROWS, WARPS>(q_s, factor_s, warp, lane);
    __syncthreads();
  }
#pragma unroll
  for (int mt = 0; mt < (QK_DIMS ? 1 : M_TILES); ++mt) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = QK_DIMS ? lane / LPR : mt * 16 + lane / 4 + 8 * h;
      row_scale[mt][h] = Q_TO_F16 ? score_scale * factor_s[r] : score_scale;
    }
  }
  for (int b = 0; b < blocks; ++b) {
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    if constexpr (QK_DIMS) {
      // Q K^T split by width: the warp's slice of Q stays in registers, loaded once (before the
      // load below refills the last stage, where Q_IN_STAGE puts Q).
      if (b == 0) {
#pragma unroll
        for (int mt = 0; mt < M_TILES; ++mt) {
#pragma unroll
          for (int k = 0; k < DK; ++k) {
            if (!EVEN_SLICES && k >= SLICE_STEPS) {
              q_frag[mt][k][0] = q_frag[mt][k][1] = q_frag[mt][k][2] = q_frag[mt][k][3] = 0u;
              continue;
            }
            ldmatrix_x4(
                q_frag[mt][k],
                q_addr + mla_sm80::swizzled<CHUNKS>(
                             mt * 16 + lane % 16,
                             mla_sm80::slice_column<RANK, ROPE, WARPS>(warp, k) / 8 + lane / 16));
          }
        }
        if constexpr (Q_IN_STAGE) __syncthreads();
      }
    }
    if (b + STAGES - 1 < blocks) load_block(b + STAGES - 1);
    cp_async_commit();
    if constexpr (WARP_TILE) {
      // The barrier above: block b has landed. The warp's columns of the tile (Q's, at b = 0) are
      // read by this warp only, and it is done with them.
      __syncwarp();
      mla_sm80::convert_fp8_slice<RANK, ROPE, WARPS, BLOCK>(
          tile_s, kv_s + (b % STAGES) * STAGE_BYTES, warp, lane);
      __syncwarp();
    } else if constexpr (KV_FP8) {
      // The barrier above: block b has landed and every warp is done with block b - 1's tile.
      mla_sm80::convert_fp8_rows<D, THREADS>(tile_s, kv_s + (b % STAGES) * STAGE_BYTES, BLOCK);
      __syncthreads();
    }
    const unsigned stage = shared_address(KV_FP8 ? tile_s : kv_s + (b % STAGES) * STAGE_BYTES);
    const int key0 = key_begin + b * BLOCK;

    if constexpr (QK_DIMS) {
      // 1. S = Q K^T split by width: the warp's slice of Q multiplies the same slice of every key
      // of the block; the warps' partial scores meet in shared memory.
      float part[M_TILES][SNT][4];
#pragma unroll
      for (int mt = 0; mt < M_TILES; ++mt) {
#pragma unroll
        for (int nt = 0; nt < SNT; ++nt) {
#pragma unroll
          for (int e = 0; e < 4; ++e) part[mt][nt][e] = 0.0f;
        }
      }
      // Every warp runs DK steps: where the rotary steps do not go evenly to the warps, a warp
      // short of one multiplies zeros in Q's fragment for it (a loop bound the compiler knows lets
      // it run later steps' loads under earlier products).
#pragma unroll
      for (int k = 0; k < DK; ++k) {
#pragma unroll
        for (int np = 0; np < SNT / 2; ++np) {
          unsigned k_frag[4];
          ldmatrix_x4(k_frag, stage + mla_sm80::swizzled<CHUNKS>(
                                          np * 16 + lane % 8 + 8 * (lane / 16),
                                          mla_sm80::slice_column<RANK, ROPE, WARPS>(warp, k) / 8 +
                                              (lane / 8) % 2));
#pragma unroll
          for (int mt = 0; mt < M_TILES; ++mt) {
            mma_m16n8k16<MMA>(part[mt][2 * np], q_frag[mt][k], k_frag[0], k_frag[1]);
            mma_m16n8k16<MMA>(part[mt][2 * np + 1], q_frag[mt][k], k_frag[2], k_frag[3]);
          }
        }
      }
      float* mine = red_s + warp * ROWS * S_STRIDE;
#pragma unroll
      for (int mt = 0; mt < M_TILES; ++mt) {
#pragma unroll
        for (int nt = 0; nt < SNT; ++nt) {
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            *reinterpret_cast<float2*>(mine + (mt * 16 + lane / 4 + 8 * h) * S_STRIDE + nt * 8 +
                                       2 * (lane % 4)) =
                make_float2(part[mt][nt][2 * h], part[mt][nt][2 * h + 1]);
          }
        }
      }
      __syncthreads();

      // 2. The warp's CB columns of the block: LPR lanes per row, E scores each, summed over the
      // warps' partials; the row maxima through shared memory, then P as 16-bit values.
      const int sr = lane / LPR, sc = warp * CB + (lane % LPR) * E;
      const bool masked = key0 + BLOCK > first_limit;
      const int end = masked ? min(limit(sr), key_end) : 0;
      float x[E];
      float m = kNegInf;
#pragma unroll
      for (int i = 0; i < E; i += VEC) {
        float v[VEC];
#pragma unroll
        for (int w = 0; w < WARPS; ++w) {
          const float* part = red_s + (w * ROWS + sr) * S_STRIDE + sc + i;
          float u[VEC];
          if constexpr (VEC == 4) {
            const float4 f = *reinterpret_cast<const float4*>(part);
            u[0] = f.x, u[1] = f.y, u[2] = f.z, u[3] = f.w;
          } else {
            const float2 f = *reinterpret_cast<const float2*>(part);
            u[0] = f.x, u[1] = f.y;
          }
#pragma unroll
          for (int j = 0; j < VEC; ++j) v[j] = w == 0 ? u[j] : v[j] + u[j];
        }
#pragma unroll
        for (int j = 0; j < VEC; ++j) {
          float logit = v[j] * row_scale[0][0];
          if (masked && key0 + sc + i + j >= end) logit = kNegInf;
          x[i + j] = logit;
          m = fmaxf(m, logit);
        }
      }
      if constexpr (LPR == 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
      if (lane % LPR == 0) max_s[warp * ROWS + sr] = m;
      __syncthreads();
      {
        float top = kNegInf;
#pragma unroll
        for (int w = 0; w < WARPS; ++w) top = fmaxf(top, max_s[w * ROWS + sr]);
        const float rescale = mla_sm80::raise_running_max(soft_max, top);
        const float base = soft_max == kNegInf ? 0.0f : soft_max;
        float sum = 0.0f;
        unsigned packed[E / 2];
#pragma unroll
        for (int i = 0; i < E; i += 2) {
          const float p0 = exp2_ftz(x[i] - base), p1 = exp2_ftz(x[i + 1] - base);
          sum += p0 + p1;
          packed[i / 2] = pack2<MMA>(p0, p1);
        }
        soft_sum = soft_sum * rescale + sum;
        unsigned short* dst = p_s + sr * P_STRIDE + sc;
        if constexpr (E == 2) {
          *reinterpret_cast<unsigned*>(dst) = packed[0];
        } else {
#pragma unroll
          for (int i = 0; i < E / 2; i += 2) {
            *reinterpret_cast<uint2*>(dst + 2 * i) = make_uint2(packed[i], packed[i + 1]);
          }
        }
      }
      // The same running maxima for the rows of this thread's accumulator fragments.
      float rescale[M_TILES][2];
      bool any = false;
#pragma unroll
      for (int mt = 0; mt < M_TILES; ++mt) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int r = mt * 16 + lane / 4 + 8 * h;
          float top = kNegInf;
#pragma unroll
          for (int w = 0; w < WARPS; ++w) top = fmaxf(top, max_s[w * ROWS + r]);
          rescale[mt][h] = mla_sm80::raise_running_max(row_max[mt][h], top);
          any |= rescale[mt][h] != 1.0f;
        }
      }
      if (__any_sync(0xffffffffu, any)) mla_sm80::rescale_accumulator(acc, rescale);
      __syncthreads();
    } else {
      // 1. S = Q K^T for the warp's KW keys, k16 at a time. Each score accumulates over the whole
      // width (rank + rope, 36 k16 steps at DeepSeek's 576): consecutive k16 steps go to CHAINS
      // independent accumulators, summed at the end, so the mma latency is not paid 36 times in a
      // row where the warp has few score tiles.
      constexpr int CHAINS = M_TILES * NT >= 4 ? 1 : (M_TILES * NT >= 2 ? 2 : 4);
      float chain[CHAINS][M_TILES][NT][4];
#pragma unroll
      for (int c = 0; c < CHAINS; ++c) {
#pragma unroll
        for (int mt = 0; mt < M_TILES; ++mt) {
#pragma unroll
          for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
            for (int e = 0; e < 4; ++e) chain[c][mt][nt][e] = 0.0f;
          }
        }
      }
#pragma unroll 1
      for (int kk = 0; kk < D / 64; ++kk) {  // 64 dims: two k32 halves, four k16 steps
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int k32 = 2 * kk + half;
          unsigned a[M_TILES][2][4];
#pragma unroll
          for (int mt = 0; mt < M_TILES; ++mt) {
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              ldmatrix_x4(a[mt][h], q_addr + mla_sm80::swizzled<CHUNKS>(
                                                 mt * 16 + lane % 16, k32 * 4 + 2 * h + lane / 16));
            }
          }
#pragma unroll
          for (int nt = 0; nt < NT; ++nt) {
            unsigned k_frag[4];
            ldmatrix_x4(k_frag, stage + mla_sm80::swizzled<CHUNKS>(warp * KW + nt * 8 + lane % 8,
                                                                   k32 * 4 + lane / 8));
#pragma unroll
            for (int mt = 0; mt < M_TILES; ++mt) {
#pragma unroll
              for (int h = 0; h < 2; ++h) {
                mma_m16n8k16<MMA>(chain[(2 * half + h) % CHAINS][mt][nt], a[mt][h], k_frag[2 * h],
                                  k_frag[2 * h + 1]);
              }
            }
          }
        }
      }
      float s[M_TILES][NT][4];
#pragma unroll
      for (int mt = 0; mt < M_TILES; ++mt) {
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            float sum = chain[0][mt][nt][e];
#pragma unroll
            for (int c = 1; c < CHAINS; ++c) sum += chain[c][mt][nt][e];
            s[mt][nt][e] = sum;
          }
        }
      }

      // 2. Logits in base 2, hidden keys at -inf; the block's row maxima through shared memory.
      const bool masked = key0 + BLOCK > first_limit;
#pragma unroll
      for (int mt = 0; mt < M_TILES; ++mt) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int r = mt * 16 + lane / 4 + 8 * h;
          const int end = masked ? min(limit(r), key_end) : 0;
          float m = kNegInf;
#pragma unroll
          for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              float x = s[mt][nt][2 * h + e] * row_scale[mt][h];
              if (masked && key0 + warp * KW + nt * 8 + 2 * (lane % 4) + e >= end) x = kNegInf;
              s[mt][nt][2 * h + e] = x;
              m = fmaxf(m, x);
            }
          }
          m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
          m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
          if (lane % 4 == 0) max_s[warp * ROWS + r] = m;
        }
      }
      __syncthreads();
      float rescale[M_TILES][2];
      bool any = false;
#pragma unroll
      for (int mt = 0; mt < M_TILES; ++mt) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int r = mt * 16 + lane / 4 + 8 * h;
          float m = kNegInf;
#pragma unroll
          for (int w = 0; w < WARPS; ++w) m = fmaxf(m, max_s[w * ROWS + r]);
          rescale[mt][h] = mla_sm80::raise_running_max(row_max[mt][h], m);
          any |= rescale[mt][h] != 1.0f;
          // A row that has seen no key yet keeps max -inf; its P is then 0.
          const float base = row_max[mt][h] == kNegInf ? 0.0f : row_max[mt][h];
          float sum = 0.0f;
#pragma unroll
          for (int nt = 0; nt < NT; ++nt) {
            const float p0 = exp2_ftz(s[mt][nt][2 * h] - base);
            const float p1 = exp2_ftz(s[mt][nt][2 * h + 1] - base);
            sum += p0 + p1;
            *reinterpret_cast<unsigned*>(p_s + r * P_STRIDE + warp * KW + nt * 8 + 2 * (lane % 4)) =
                pack2<MMA>(p0, p1);
          }
          row_sum[mt][h] = row_sum[mt][h] * rescale[mt][h] + sum;
        }
      }
      if (__any_sync(0xffffffffu, any)) mla_sm80::rescale_accumulator(acc, rescale);
      __syncthreads();
    }

    // 3. O += P V over the warp's CW output columns, k16 keys at a time.
#pragma unroll
    for (int k16 = 0; k16 < BLOCK / 16; ++k16) {
      unsigned a[M_TILES][4];
#pragma unroll
      for (int mt = 0; mt < M_TILES; ++mt) {
        ldmatrix_x4(
            a[mt],
            p_addr + unsigned(((mt * 16 + lane % 16) * P_STRIDE + k16 * 16 + (lane / 16) * 8) * 2));
      }
#pragma unroll
      for (int np = 0; np < OT / 2; ++np) {
        unsigned v_frag[4];
        ldmatrix_x4_trans(
            v_frag, stage + mla_sm80::swizzled<CHUNKS>(k16 * 16 + lane % 8 + 8 * ((lane / 8) % 2),
                                                       (warp * CW + np * 16) / 8 + lane / 16));
#pragma unroll
        for (int mt = 0; mt < M_TILES; ++mt) {
          mma_m16n8k16<MMA>(acc[mt][2 * np], a[mt], v_frag[0], v_frag[1]);
          mma_m16n8k16<MMA>(acc[mt][2 * np + 1], a[mt], v_frag[2], v_frag[3]);
        }
      }
    }
  }
  cp_async_wait<0>();

  // Row sums over the warps; each row's normaliser and log2-sum-exp.
  if constexpr (QK_DIMS) {
    float l = soft_sum;
    if constexpr (LPR == 2) l += __shfl_xor_sync(0xffffffffu, l, 1);
    if (lane % LPR == 0) sum_s[warp * ROWS + lane / LPR] = l;
  } else {
#pragma unroll
    for (int mt = 0; mt < M_TILES; ++mt) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float l = row_sum[mt][h];
        l += __shfl_xor_sync(0xffffffffu, l, 1);
        l += __shfl_xor_sync(0xffffffffu, l, 2);
        if (lane % 4 == 0) sum_s[warp * ROWS + mt * 16 + lane / 4 + 8 * h] = l;
      }
    }
  }
  __syncthreads();
  const long long out_row0 = static_cast<long long>(q0) * p.num_q_heads + row0;
  const int slot = splits > 1 ? p.seq_partial[seq] + split : 0;
#pragma unroll
  for (int mt = 0; mt < M_TILES; ++mt) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = mt * 16 + lane / 4 + 8 * h;
      float l = 0.0f;
#pragma unroll
      for (int w = 0; w < WARPS; ++w) l += sum_s[w * ROWS + r];
      const float inv = l > 0.0f ? out_scale / l : 0.0f;
      if (row0 + r >= seq_rows) continue;
      if (splits == 1) {
        unsigned short* out =
            static_cast<unsigned short*>(p.out) + (out_row0 + r) * RANK + warp * CW;
#pragma unroll
        for (int ot = 0; ot < OT; ++ot) {
          *reinterpret_cast<unsigned*>(out + ot * 8 + 2 * (lane % 4)) =
              pack2<DTYPE>(acc[mt][ot][2 * h] * inv, acc[mt][ot][2 * h + 1] * inv);
        }
      } else {
        const long long prow = static_cast<long long>(slot) * p.max_rows + row0 + r;
        float* out = p.partial_out + prow * RANK + warp * CW;
#pragma unroll
        for (int ot = 0; ot < OT; ++ot) {
          *reinterpret_cast<float2*>(out + ot * 8 + 2 * (lane % 4)) =
              make_float2(acc[mt][ot][2 * h] * inv, acc[mt][ot][2 * h + 1] * inv);
        }
        if (warp == 0 && lane % 4 == 0) {
          p.partial_lse[prow] = l > 0.0f ? row_max[mt][h] + log2f(l) : kNegInf;
        }
      }
    }
  }
  if (splits == 1) return;

  // The last split of this (sequence, row tile) to finish merges them all.
  mla_split::merge_splits<DTYPE, RANK, THREADS>(p, seq, splits, row0, min(ROWS, seq_rows - row0),
                                                out_row0, threadIdx.x, [] { __syncthreads(); });
}

}  // namespace attn
