// paged_decode.tensorcore: flash-decoding on the tensor cores (mma.sync m16n8k16) over a paged KV
// cache, for GQA.
//
// Computes, for each sequence s and query head h (one query token per sequence, at position
// kv_len - 1),
//   out[s, h] = softmax(logits(q[s, h] . K[s, :, h / group]) [+ sink]) V[s, :, h / group]
// where K and V rows are read through the page table: token t of sequence s lives in page
// block_table[s, t / page_size] at slot t % page_size. logits() scales, and soft-caps when asked;
// a sliding window keeps the last w keys; a sink logit joins the denominator with no value.
//
// Work decomposition (a 1-D grid over a host-built work list):
// - A CTA owns one KV head of one split of one sequence and all `group` query heads that share
//   it: the q heads are the M rows of 16 x 8 x 16 mma tiles (rows past the group are zero
//   padding), so each K/V byte is read from memory once per KV head, whatever the GQA ratio.
// - The sequence's visible keys are cut into compute blocks of BLOCK_TOKENS keys; a block spans
//   several pages or part of one (every key row is addressed through the block table). Each
//   sequence's blocks are dealt to its own number of contiguous splits (split-KV), chosen on the
//   host so that long and short sequences give CTAs of similar work; the work list runs the
//   longest splits first. A split of a multi-split sequence writes a normalised partial output
//   and its log2-sum-exp; the last of the sequence's CTAs to finish (an atomic count per
//   sequence and KV head) merges them, so there is no second kernel. With one split the CTA
//   writes `out` itself.
// - K and V of a block stream into one of STAGES shared-memory buffers with cp.async while
//   earlier blocks are computed. Rows are padded by 16 bytes so ldmatrix is bank-conflict free.
//   Each warp copies the rows it computes, so the pipeline needs no barrier between warps.
// - Each warp owns WARP_TOKENS = BLOCK_TOKENS / WARPS keys of every block and keeps its own online
//   softmax state (row max and sum in the log2 domain, fp32 output accumulator in registers):
//   S = Q K^T with K fragments from ldmatrix (Q's stay in registers up to head dim 128), then
//   P (16-bit, from S's accumulators) times V with V fragments from ldmatrix.trans. No barrier
//   between warps inside a block; their states are merged once through shared memory at the end.
//
// Tunables and why they exist:
//   BLOCK_TOKENS  keys per compute block (per pipeline stage): bytes in flight per stage vs
//                 shared memory and registers
//   WARPS         threads per CTA: key slices computed in parallel vs CTAs per SM
//   STAGES        pipeline depth: blocks in flight while one is computed
//   num_splits    (host) split-KV count per sequence; 0 = auto, by length, to fill the GPU
#pragma once

#include "kernels/common/convert.cuh"
#include "kernels/common/cp_async.cuh"
#include "kernels/common/mma_sm80.cuh"
#include "kernels/paged_decode/tensorcore_params.hpp"
#include "kernels/paged_decode/tensorcore_traits.hpp"

namespace attn {

namespace tc {

// Four fp8 e4m3 codes (bytes of `word`, element 0 lowest) as two f16x2 registers, exactly: `lo`
// holds codes 0 and 1, `hi` codes 2 and 3 (element order kept in each half pair).
__device__ __forceinline__ void e4m3x4_to_f16(unsigned int word, unsigned int& lo,
                                              unsigned int& hi) {
#if __CUDA_ARCH__ >= 890
  asm("{\n.reg .b16 l, h;\nmov.b32 {l, h}, %2;\n"
      "cvt.rn.f16x2.e4m3x2 %0, l;\ncvt.rn.f16x2.e4m3x2 %1, h;\n}\n"
      : "=r"(lo), "=r"(hi)
      : "r"(word));
#else
  // No fp8 conversion unit: each code's sign, exponent and mantissa bits go into an f16 whose
  // exponent bias is 8 larger (exact, subnormals included), then a multiply by 2^8 restores it.
  const unsigned int scale = 0x5c005c00u;  // f16x2 {256, 256}
  const unsigned int spread[2] = {__byte_perm(word, 0, 0x1404), __byte_perm(word, 0, 0x3424)};
  unsigned int out[2];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const unsigned int bits = (spread[i] & 0x80008000u) | ((spread[i] >> 1) & 0x3f803f80u);
    asm("mul.rn.f16x2 %0, %1, %2;\n" : "=r"(out[i]) : "r"(bits), "r"(scale));
  }
  lo = out[0];
  hi = out[1];
#endif
}

// Bytes e of w0 and of w1 (two fp8 codes, w0's first) as one f16x2 register.
__device__ __forceinline__ unsigned int e4m3_pair_to_f16(unsigned int w0, unsigned int w1, int e) {
  const unsigned int pair = __byte_perm(w0, w1, e | ((4 + e) << 4));  // codes in bytes 0 and 1
  unsigned int out;
#if __CUDA_ARCH__ >= 890
  asm("{\n.reg .b16 l, h;\nmov.b32 {l, h}, %1;\ncvt.rn.f16x2.e4m3x2 %0, l;\n}\n"
      : "=r"(out)
      : "r"(pair));
#else
  unsigned int unused;
  e4m3x4_to_f16(pair, out, unused);
#endif
  return out;
}

}  // namespace tc

template <int DTYPE, bool KV_FP8, int HEAD_DIM, int WARPS, int BLOCK_TOKENS, int STAGES>
__global__ void __launch_bounds__(WARPS * 32) paged_decode_tensorcore(const TensorCoreParams p) {
  constexpr int KV_BYTES = KV_FP8 ? 1 : 2;
  static_assert(
      tensorcore::check(HEAD_DIM, WARPS, BLOCK_TOKENS, STAGES, KV_BYTES) == tensorcore::kOk,
      "invalid paged_decode.tensorcore config: see tensorcore::check");
  // fp8 K/V codes are converted exactly to f16, so the products run in f16 (Q converted once).
  constexpr int MMA_DTYPE = KV_FP8 ? kDTypeFp16 : DTYPE;
  constexpr int THREADS = tensorcore::threads(WARPS);
  constexpr int ROW_BYTES = tensorcore::row_bytes(HEAD_DIM, KV_BYTES);  // padded K/V smem row
  constexpr int ROW = tensorcore::row_elements(HEAD_DIM);  // padded Q smem row, 16-bit elements
  constexpr int M = tensorcore::kMmaRows;
  constexpr int WARP_TOKENS = tensorcore::warp_tokens(WARPS, BLOCK_TOKENS);
  constexpr int S_TILES = WARP_TOKENS / 8;          // n8 tiles of the warp's scores
  constexpr int D_TILES = HEAD_DIM / 8;             // n8 tiles of the output
  constexpr int K_STEPS = HEAD_DIM / 16;            // k16 steps of Q.K
  constexpr int CHUNKS = HEAD_DIM * KV_BYTES / 16;  // 16-byte chunks of a K/V row
  constexpr int ROWS_PER_PASS = 32 / CHUNKS;        // rows one warp copies per pass
  constexpr int PASSES = WARP_TOKENS / ROWS_PER_PASS;
  constexpr int TILE_BYTES = BLOCK_TOKENS * ROW_BYTES;  // one K or V buffer
  constexpr bool Q_IN_REGISTERS = HEAD_DIM <= tensorcore::kMaxHeadDimQInRegisters;
  constexpr int Q_STEPS = Q_IN_REGISTERS ? K_STEPS : 1;
  static_assert(32 % CHUNKS == 0 && WARP_TOKENS % ROWS_PER_PASS == 0, "copy pattern");
  const float kNegInf = -__int_as_float(0x7f800000);

  // The stage area [STAGES][K, V][BLOCK_TOKENS][ROW_BYTES], then Q [M][ROW] (16-bit). After the
  // key loop the stage area holds the cross-warp merge: outputs [WARPS][M][HEAD_DIM], maxima and
  // sums [WARPS][M] (floats), and after that the split merge's weights.
  extern __shared__ __align__(16) unsigned char smem[];
  unsigned short* q_tile = reinterpret_cast<unsigned short*>(
      smem + tensorcore::stage_area_bytes(HEAD_DIM, WARPS, BLOCK_TOKENS, STAGES, KV_BYTES));
  __shared__ int merge_here;

  const int item = blockIdx.x / p.num_kv_heads, kv_head = blockIdx.x % p.num_kv_heads;
  const int seq = p.work[2 * item], split = p.work[2 * item + 1];
  const int num_splits = p.seq_splits[seq];
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int q_head0 = kv_head * p.group;

  // Visible keys [first_key, kv_len): the window keeps the last sliding_window of them. Blocks
  // start at first_key, so no key before it is ever loaded.
  const int kv_len = p.kv_lens[seq];
  const int first_key =
      (p.sliding_window > 0 && kv_len > p.sliding_window) ? kv_len - p.sliding_window : 0;
  const int blocks = max(0, kv_len - first_key + BLOCK_TOKENS - 1) / BLOCK_TOKENS;
  const int blocks_per_split = (blocks + num_splits - 1) / num_splits;
  const int block_begin = min(blocks, split * blocks_per_split);
  const int block_end = min(blocks, block_begin + blocks_per_split);

  // Copy pattern: each warp copies its own WARP_TOKENS rows of every block (the rows it computes),
  // so a stage needs no barrier between warps: lane copies chunk (lane % CHUNKS) of the warp's
  // rows lane / CHUNKS + i * ROWS_PER_PASS. Page numbers of the block after next are fetched from
  // the block table one iteration ahead (their latency hides behind the current block's compute),
  // and the row's page and slot advance by increments instead of a division per row.
  const int* pages = p.block_table + (long long)seq * p.max_pages_per_seq;
  const int copy_col = (lane % CHUNKS) * 16;  // bytes
  const int copy_row = warp * WARP_TOKENS + lane / CHUNKS;
  const char* k_head =
      static_cast<const char*>(p.k_pool) + kv_head * p.head_stride * KV_BYTES + copy_col;
  const char* v_head =
      static_cast<const char*>(p.v_pool) + kv_head * p.head_stride * KV_BYTES + copy_col;
  // Rows of a block: page and slot advance from the first row's by increments (one division).
  // Page numbers of the next block to copy are held in registers where that costs few of them.
  constexpr bool PREFETCH = PASSES <= 8;
  int next_page[PASSES];
  auto fetch_pages = [&](int block) {
    const int t0 = first_key + block * BLOCK_TOKENS + copy_row;
    int page = t0 / p.page_size, slot = t0 - page * p.page_size;
#pragma unroll
    for (int i = 0; i < PASSES; ++i) {
      next_page[i] = t0 + i * ROWS_PER_PASS < kv_len ? pages[page] : 0;
      slot += ROWS_PER_PASS;
      while (slot >= p.page_size) {
        slot -= p.page_size;
        ++page;
      }
    }
  };
  auto load_block = [&](int block, int stage) {
    unsigned char* k_dst = smem + stage * 2 * TILE_BYTES + copy_row * ROW_BYTES + copy_col;
    unsigned char* v_dst = k_dst + TILE_BYTES;
    const int t0 = first_key + block * BLOCK_TOKENS + copy_row;
    int page = t0 / p.page_size, slot = t0 - page * p.page_size;
#pragma unroll
    for (int i = 0; i < PASSES; ++i) {
      const bool valid = t0 + i * ROWS_PER_PASS < kv_len;
      long long offset = 0;  // invalid rows: an in-bounds address that is not read
      if (valid) {
        const int physical = PREFETCH ? next_page[i] : pages[page];
        offset = (long long)physical * p.page_stride + (long long)slot * p.token_stride;
      }
      // The lanes of a row read it together (256 bytes at head dim 128 in bf16): 128-byte L2
      // fetches instead of 32-byte sectors (1.8% faster on 64 x 4096 on an H200).
      cp_async_16_prefetch<128>(k_dst + i * ROWS_PER_PASS * ROW_BYTES, k_head + offset * KV_BYTES,
                                valid);
      cp_async_16_prefetch<128>(v_dst + i * ROWS_PER_PASS * ROW_BYTES, v_head + offset * KV_BYTES,
                                valid);
      slot += ROWS_PER_PASS;
      while (slot >= p.page_size) {
        slot -= p.page_size;
        ++page;
      }
    }
  };

  // Prologue: STAGES - 1 blocks in flight, then Q (in the first group, so the first wait covers
  // it). Every stage commits a group (possibly empty) so the wait count below stays exact.
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (block_begin + s < block_end) {
      if (PREFETCH) fetch_pages(block_begin + s);
      load_block(block_begin + s, s);
    }
    if (s == 0) {
      // Q rows of the group; padding rows are zero (their scores are 0, finite, never written).
      constexpr int Q_CHUNKS = HEAD_DIM / 8;
      for (int c = tid; c < M * Q_CHUNKS; c += THREADS) {
        const int r = c / Q_CHUNKS, col = (c % Q_CHUNKS) * 8;
        const bool valid = r < p.group;
        const long long row = valid ? (long long)seq * p.num_q_heads + q_head0 + r : 0;
        cp_async_16(q_tile + r * ROW + col,
                    static_cast<const char*>(p.q) + (row * HEAD_DIM + col) * 2, valid);
      }
    }
    cp_async_commit();
  }
  if (PREFETCH && block_begin + STAGES - 1 < block_end) fetch_pages(block_begin + STAGES - 1);

  // This lane's rows of the accumulators: r0 = lane / 4 and r0 + 8.
  float o[D_TILES][4];
#pragma unroll
  for (int n = 0; n < D_TILES; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
  float row_max[2] = {kNegInf, kNegInf};  // log2 domain
  float row_sum[2] = {0.0f, 0.0f};        // this lane's columns only; summed over lanes at the end

  // 16-bit K/V: ldmatrix row addresses in bytes (lane l names a row of matrix l / 8).
  const unsigned short* q_frag = q_tile + (lane % 16) * ROW + (lane / 16) * 8;
  const int k_frag = (((lane / 16) * 8 + lane % 8) * ROW + ((lane / 8) % 2) * 8) * 2;
  const int v_frag = ((lane % 16) * ROW + (lane / 16) * 8) * 2;
  // fp8 K/V: 32-bit loads of 4 codes each, no ldmatrix. The dims are permuted, identically in Q
  // and K (a dot product does not care), so that a lane's 4 dims of a k16 step are 4 adjacent
  // bytes: logical dims {2t, 2t+1, 2t+8, 2t+9} of the mma fragment (t = lane % 4) are physical
  // dims 4t .. 4t+3. For P V the output dims are permuted: column n of output tile m is
  // physical dim 32 (m / 4) + 4 n + m % 4, so that one 32-bit load gives a lane (n = lane / 4)
  // the 4 tiles' values of one key; the cross-warp merge writes them back in order.
  const int quad = lane / 4, t4 = lane % 4;
  unsigned int q_a[Q_STEPS][4];  // Q's A fragments, loaded once (head dims up to 128)
  // Q's A fragment of k16 step ks: ldmatrix for 16-bit K/V; for fp8 K/V, the permuted f16 words.
  auto load_q_fragment = [&](unsigned int(&a)[4], int ks) {
    if constexpr (KV_FP8) {
      const unsigned short* row = q_tile + quad * ROW + ks * 16 + 4 * t4;
      a[0] = *reinterpret_cast<const unsigned int*>(row);
      a[1] = *reinterpret_cast<const unsigned int*>(row + 8 * ROW);
      a[2] = *reinterpret_cast<const unsigned int*>(row + 2);
      a[3] = *reinterpret_cast<const unsigned int*>(row + 8 * ROW + 2);
    } else {
      ldmatrix_x4(a, q_frag + ks * 16);
    }
  };
  // fp8 dequantisation, folded into the logits' scale and the output.
  const float score_scale = KV_FP8 ? p.score_scale * p.k_scale[kv_head] : p.score_scale;
  const float v_scale = KV_FP8 ? p.v_scale[kv_head] : 1.0f;

  for (int block = block_begin; block < block_end; ++block) {
    const int i = block - block_begin;
    cp_async_wait<STAGES - 2>();
    if (i == 0) {
      __syncthreads();  // Q, copied by every warp, visible to all
      if constexpr (KV_FP8 && DTYPE != kDTypeFp16) {
        // The products run in f16: convert Q in place (exact for |q| < 65504).
        unsigned int* words = reinterpret_cast<unsigned int*>(q_tile);
        for (int w = tid; w < M * ROW / 2; w += THREADS) {
          const float2 v = unpack2<DTYPE>(words[w]);
          words[w] = pack2<kDTypeFp16>(v.x, v.y);
        }
        __syncthreads();
      }
      if constexpr (Q_IN_REGISTERS) {
#pragma unroll
        for (int ks = 0; ks < K_STEPS; ++ks) load_q_fragment(q_a[ks], ks);
      }
    } else {
      __syncwarp();  // the warp's copies of this block visible to all its lanes; block - 1 consumed
    }
    if (block + STAGES - 1 < block_end) load_block(block + STAGES - 1, (i + STAGES - 1) % STAGES);
    cp_async_commit();
    if (PREFETCH && block + STAGES < block_end) fetch_pages(block + STAGES);

    const unsigned char* k_tile =
        smem + (i % STAGES) * 2 * TILE_BYTES + warp * WARP_TOKENS * ROW_BYTES;
    const unsigned char* v_tile = k_tile + TILE_BYTES;

    // S = Q K^T over the warp's keys: [16 heads x WARP_TOKENS keys].
    float s[S_TILES][4];
#pragma unroll
    for (int j = 0; j < S_TILES; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
#pragma unroll
    for (int ks = 0; ks < K_STEPS; ++ks) {
      unsigned int a_reread[4];
      if constexpr (!Q_IN_REGISTERS) load_q_fragment(a_reread, ks);
      const unsigned int(&a)[4] = Q_IN_REGISTERS ? q_a[ks % Q_STEPS] : a_reread;
      if constexpr (KV_FP8) {
#pragma unroll
        for (int j = 0; j < S_TILES; ++j) {  // key j*8 + quad, physical dims ks*16 + 4 t4 ..
          unsigned int b0, b1;
          tc::e4m3x4_to_f16(*reinterpret_cast<const unsigned int*>(
                                k_tile + (j * 8 + quad) * ROW_BYTES + ks * 16 + 4 * t4),
                            b0, b1);
          mma_m16n8k16<MMA_DTYPE>(s[j], a, b0, b1);
        }
      } else {
#pragma unroll
        for (int pair = 0; pair < S_TILES / 2; ++pair) {
          unsigned int b[4];  // keys pair*16 .. +7 and +8 .. +15, dims ks*16 .. +15
          ldmatrix_x4(b, k_tile + pair * 16 * ROW_BYTES + k_frag + ks * 32);
          mma_m16n8k16<MMA_DTYPE>(s[2 * pair], a, b[0], b[1]);
          mma_m16n8k16<MMA_DTYPE>(s[2 * pair + 1], a, b[2], b[3]);
        }
      }
    }

    // Logits (log2 domain), the end-of-sequence mask, and this block's row maxima.
    const int warp_key0 = first_key + block * BLOCK_TOKENS + warp * WARP_TOKENS;
    float tile_max[2] = {kNegInf, kNegInf};
#pragma unroll
    for (int j = 0; j < S_TILES; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int t = warp_key0 + j * 8 + 2 * (lane % 4) + (e & 1);
        float x = s[j][e] * score_scale;
        if (p.cap_log2 > 0.0f) x = p.cap_log2 * tanhf(x);
        if (t >= kv_len) x = kNegInf;
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
      const float new_max = fmaxf(row_max[r], tile_max[r]);
      base[r] = new_max == kNegInf ? 0.0f : new_max;  // no key yet: avoid -inf - -inf
      alpha[r] = exp2f(row_max[r] - base[r]);         // 0 while the row had no key
      grew |= new_max != row_max[r];
      row_max[r] = new_max;
      row_sum[r] *= alpha[r];
    }
    // Rescale the output only when some row's maximum grew (after the first blocks it rarely
    // does); the test is warp-uniform, so the lanes stay converged.
    if (__any_sync(0xffffffffu, grew)) {
#pragma unroll
      for (int n = 0; n < D_TILES; ++n) {
        o[n][0] *= alpha[0];
        o[n][1] *= alpha[0];
        o[n][2] *= alpha[1];
        o[n][3] *= alpha[1];
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
          row_sum[e / 2] += prob[h][e];
        }
      }
      unsigned int a[4];
      a[0] = pack2<MMA_DTYPE>(prob[0][0], prob[0][1]);
      a[1] = pack2<MMA_DTYPE>(prob[0][2], prob[0][3]);
      a[2] = pack2<MMA_DTYPE>(prob[1][0], prob[1][1]);
      a[3] = pack2<MMA_DTYPE>(prob[1][2], prob[1][3]);
      if constexpr (KV_FP8) {
        // Keys kc*16 + 2 t4 + {0, 1, 8, 9}; physical dims 32 g + 4 quad .. +3 are tiles 4g .. 4g+3.
        const unsigned char* keys = v_tile + (kc * 16 + 2 * t4) * ROW_BYTES + 4 * quad;
#pragma unroll
        for (int g = 0; g < HEAD_DIM / 32; ++g) {
          const unsigned int w0 = *reinterpret_cast<const unsigned int*>(keys + g * 32);
          const unsigned int w1 = *reinterpret_cast<const unsigned int*>(keys + ROW_BYTES + g * 32);
          const unsigned int w8 =
              *reinterpret_cast<const unsigned int*>(keys + 8 * ROW_BYTES + g * 32);
          const unsigned int w9 =
              *reinterpret_cast<const unsigned int*>(keys + 9 * ROW_BYTES + g * 32);
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            mma_m16n8k16<MMA_DTYPE>(o[4 * g + e], a, tc::e4m3_pair_to_f16(w0, w1, e),
                                    tc::e4m3_pair_to_f16(w8, w9, e));
          }
        }
      } else {
#pragma unroll
        for (int dp = 0; dp < D_TILES / 2; ++dp) {
          unsigned int b[4];  // keys kc*16 .. +15, dims dp*16 .. +7 and +8 .. +15
          ldmatrix_x4_trans(b, v_tile + kc * 16 * ROW_BYTES + v_frag + dp * 32);
          mma_m16n8k16<MMA_DTYPE>(o[2 * dp], a, b[0], b[1]);
          mma_m16n8k16<MMA_DTYPE>(o[2 * dp + 1], a, b[2], b[3]);
        }
      }
    }
  }
  cp_async_wait<0>();
  __syncthreads();  // the stage buffers become the merge area

  // Merge the warps' states: each warp's output, max and sum per row into shared memory.
  float* merge_out = reinterpret_cast<float*>(smem);    // [WARPS][M][HEAD_DIM]
  float* merge_max = merge_out + WARPS * M * HEAD_DIM;  // [WARPS][M]
  float* merge_sum = merge_max + WARPS * M;             // [WARPS][M]
  const int r0 = lane / 4;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    row_sum[r] += __shfl_xor_sync(0xffffffffu, row_sum[r], 1);
    row_sum[r] += __shfl_xor_sync(0xffffffffu, row_sum[r], 2);
    float* dst = merge_out + (warp * M + r0 + 8 * r) * HEAD_DIM;
#pragma unroll
    for (int n = 0; n < D_TILES; ++n) {
      if constexpr (KV_FP8) {  // column c of tile n is physical dim 32 (n / 4) + 4 c + n % 4
        dst[32 * (n / 4) + 4 * (2 * t4) + n % 4] = o[n][2 * r];
        dst[32 * (n / 4) + 4 * (2 * t4 + 1) + n % 4] = o[n][2 * r + 1];
      } else {
        *reinterpret_cast<float2*>(dst + n * 8 + 2 * t4) =
            make_float2(o[n][2 * r], o[n][2 * r + 1]);
      }
    }
    if (lane % 4 == 0) {
      merge_max[warp * M + r0 + 8 * r] = row_max[r];
      merge_sum[warp * M + r0 + 8 * r] = row_sum[r];
    }
  }
  __syncthreads();

  // Two output elements per thread and step, over the group's rows only.
  const long long split_rows = p.seq_partial[seq] + split;
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
    x0 *= v_scale;
    x1 *= v_scale;
    const int q_head = q_head0 + r;
    const long long head_row = (long long)seq * p.num_q_heads + q_head;
    if (num_splits == 1) {
      // The sink joins the denominator: sum * 2^top + 2^sink, computed relative to the larger.
      float inv = 0.0f;  // no visible key: zero, even with a sink
      if (sum > 0.0f) {
        if (p.sink_log2 != nullptr) {
          const float sink = p.sink_log2[q_head];
          const float both = fmaxf(top, sink);
          const float keep = exp2f(top - both);
          inv = keep / (sum * keep + exp2f(sink - both));
        } else {
          inv = 1.0f / sum;
        }
      }
      *reinterpret_cast<unsigned int*>(static_cast<char*>(p.out) + (head_row * HEAD_DIM + d) * 2) =
          pack2<DTYPE>(x0 * inv, x1 * inv);
    } else {
      const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
      const long long row = split_rows * p.num_q_heads + q_head;
      *reinterpret_cast<float2*>(p.partial_out + row * HEAD_DIM + d) =
          make_float2(x0 * inv, x1 * inv);
      if (d == 0) p.partial_lse[row] = sum > 0.0f ? top + log2f(sum) : kNegInf;
    }
  }
  if (num_splits == 1) return;

  // Split merge: the last CTA of this (sequence, KV head) to finish combines the splits' partial
  // results, out = sum_s w_s partial_s / (sum_s w_s + w_sink) with w_s = 2^(lse_s - top) and
  // w_sink = 2^(sink - top), top the largest of them (the threadFenceReduction pattern: each CTA
  // publishes its rows, then counts itself in; the one that completes the count reads them all).
  __threadfence();
  __syncthreads();  // every thread's rows published; the cross-warp merge area is free
  int* counter = p.split_counters + (long long)seq * p.num_kv_heads + kv_head;
  if (tid == 0) merge_here = atomicAdd(counter, 1) == num_splits - 1;
  __syncthreads();
  if (!merge_here) return;
  __threadfence();  // the other splits' rows are read after their count was seen
  float* weight = reinterpret_cast<float*>(smem);        // [kMaxSplits][M], normalised
  float* row_top = weight + tensorcore::kMaxSplits * M;  // [M]
  float* row_inv = row_top + M;                          // [M]
  const long long first_row = (long long)p.seq_partial[seq] * p.num_q_heads + q_head0;
  for (int idx = tid; idx < num_splits * p.group; idx += THREADS) {
    const int s = idx / p.group, r = idx % p.group;
    weight[s * M + r] = __ldcg(p.partial_lse + first_row + (long long)s * p.num_q_heads + r);
  }
  __syncthreads();
  if (tid < p.group) {
    float top = kNegInf;
    for (int s = 0; s < num_splits; ++s) top = fmaxf(top, weight[s * M + tid]);
    float total = 0.0f;
    if (top != kNegInf) {  // else no visible key: zero, even with a sink
      if (p.sink_log2 != nullptr) {
        const float sink = p.sink_log2[q_head0 + tid];
        const float both = fmaxf(top, sink);
        total = exp2f(sink - both);
        top = both;
      }
      for (int s = 0; s < num_splits; ++s) total += exp2f(weight[s * M + tid] - top);
    }
    row_top[tid] = top;
    row_inv[tid] = total > 0.0f ? 1.0f / total : 0.0f;
  }
  __syncthreads();
  for (int idx = tid; idx < num_splits * p.group; idx += THREADS) {
    const int s = idx / p.group, r = idx % p.group;
    weight[s * M + r] =
        row_inv[r] > 0.0f ? exp2f(weight[s * M + r] - row_top[r]) * row_inv[r] : 0.0f;
  }
  __syncthreads();
  // Four output elements per thread and step; the splits' loads are independent (unrolled).
  for (int idx = tid; idx < p.group * (HEAD_DIM / 4); idx += THREADS) {
    const int r = idx / (HEAD_DIM / 4), d = (idx % (HEAD_DIM / 4)) * 4;
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    const float* src = p.partial_out + (first_row + r) * HEAD_DIM + d;
#pragma unroll 8
    for (int s = 0; s < num_splits; ++s) {
      const float w = weight[s * M + r];
      const float4 part =
          __ldcg(reinterpret_cast<const float4*>(src + (long long)s * p.num_q_heads * HEAD_DIM));
      acc.x = fmaf(w, part.x, acc.x);
      acc.y = fmaf(w, part.y, acc.y);
      acc.z = fmaf(w, part.z, acc.z);
      acc.w = fmaf(w, part.w, acc.w);
    }
    const long long head_row = (long long)seq * p.num_q_heads + q_head0 + r;
    uint2 packed;
    packed.x = pack2<DTYPE>(acc.x, acc.y);
    packed.y = pack2<DTYPE>(acc.z, acc.w);
    *reinterpret_cast<uint2*>(static_cast<char*>(p.out) + (head_row * HEAD_DIM + d) * 2) = packed;
  }
  if (tid == 0) *counter = 0;  // ready for the next launch
}

}  // namespace attn
