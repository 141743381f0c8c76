// mla_decode.sm90_wgmma_key_rows: absorbed multi-head latent attention over a paged latent cache
// on Hopper's tensor cores in the key-rows form: the block's 64 keys are wgmma's M rows and the
// CTA's TILE_ROWS (query token, q head) rows its N, so that 16 or 32 heads (DeepSeek-V3 under
// 8-way tensor parallelism) fill the tensor cores. The family's semantics:
// kernels/mla_decode/mla_decode_variants.hpp and docs/mla-decode.md; shapes and rules:
// sm90_wgmma_key_rows_traits.hpp. The work list, the split of the keys and the split merge are
// those of the other MLA kernels (mla_split_plan.hpp, sm90_latent.cuh).
//
// A CTA takes TILE_ROWS consecutive rows of one sequence (row r is query token r / H, q head
// r % H; rows past the sequence's last are zeros and never stored) and one split of its keys:
// - The producer warp loads block i (64 latent rows) into stage i % 2 (sm90_latent.cuh).
// - Consumer warpgroup w takes the blocks i = w, w + 2, ..: S^T = K Q^T (wgmma SS, both operands
//   K-major: the stage's column blocks and Q's), 36 k16 steps at DeepSeek-V3's widths. Thread t
//   holds keys (accumulator rows) of its warp's 16 and tile columns 8 j + 2 (t % 4) + e. Hidden
//   keys go to -inf; each column's block maximum is reduced over the thread's two keys, the 8
//   lanes of the same t % 4 (shuffles) and the warpgroup's 4 warps (shared memory, one named
//   barrier of the warpgroup). P = 2^(S scale - max) is written transposed to the warpgroup's
//   P^T [TILE_ROWS][64 keys] (16-bit, 128-byte swizzled: the K-major B of the next product), the
//   accumulator is rescaled per column, and O^T += V^T P^T (wgmma SS, A MN-major: V's first RANK
//   columns of the same stage, RANK / 64 M tiles of 4 k16 steps). Each warp then releases the
//   stage to the producer. Each thread keeps its columns' running maxima and partial sums (over
//   its own keys; summed over the warpgroup at the end).
// - V rows of the sequence's last block past its last key are zeroed before use (P is 0 there,
//   but 0 x NaN would poison the output).
// KV_FP8 (an fp8 e4m3 cache, one scale): the stages hold codes (as many stages as fit, taken by
// the warpgroups in turn); S^T runs on fp8 tensor cores over them, against Q written once as two
// e4m3 terms (a power of two per row folded into its column's score scale), and O^T in fp16 with
// V^T's A operand converted in registers after an ldmatrix (sm90_key_rows_fp8.cuh); the cache's
// scale multiplies the score scale and the output.
// After the loop warpgroup 1 leaves its accumulator, maxima and sums in stage 1 on; warpgroup 0
// combines the two (each rescaled to the common maximum), normalises and writes the rows
// [TILE_ROWS][RANK] to stage 0; all 256 consumer threads then store them, 16 bytes at a time, to
// the output (one split) or to the partial buffers with their log2-sum-exp (several), and the last
// CTA of a split (sequence, row tile) merges them.
#pragma once

#include "kernels/mla_decode/sm90_key_rows_fp8.cuh"
#include "kernels/mla_decode/sm90_latent.cuh"
#include "kernels/mla_decode/sm90_wgmma_key_rows_traits.hpp"

namespace attn {

template <int DTYPE, int RANK, int ROPE, int TILE_ROWS, int BOX, bool KV_FP8 = false>
__global__ void __launch_bounds__(mla_decode::sm90_wgmma_key_rows::kThreads, 1)
    mla_decode_sm90_wgmma_key_rows(const __grid_constant__ MlaSm90Params params) {
  namespace traits = mla_decode::sm90_wgmma_key_rows;
  static_assert(traits::check(RANK, ROPE, TILE_ROWS, BOX, KV_FP8) == traits::kOk,
                "mla_decode.sm90_wgmma_key_rows config breaks a rule of its traits");
  constexpr int D = RANK + ROPE;
  // A stage's column blocks: 64 16-bit elements or 128 fp8 codes of each key row.
  constexpr int CB =
      KV_FP8 ? traits::fp8_column_blocks(RANK, ROPE) : traits::column_blocks(RANK, ROPE);
  constexpr int BLOCK = traits::kBlock;
  constexpr int N = TILE_ROWS;
  constexpr int MT = RANK / 64;  // M tiles of O^T
  constexpr int COLS = N / 4;    // tile columns of one thread: 8 j + 2 (t % 4) + e
  constexpr int CHAINS = traits::score_chains(TILE_ROWS);
  constexpr int STAGES = traits::stages(RANK, ROPE, TILE_ROWS, KV_FP8);
  constexpr int STAGE = traits::stage_bytes(RANK, ROPE, KV_FP8);
  constexpr int COLUMN_BLOCK = BLOCK * traits::kRowBytes;  // 128 bytes per row either way
  constexpr int OUT_STRIDE = traits::out_stride(RANK);
  constexpr int MMA = KV_FP8 ? kDTypeFp16 : DTYPE;  // the products' type
  const MlaSm80Params& p = params.base;
  const float kNegInf = -__int_as_float(0x7f800000);

  extern __shared__ __align__(16) unsigned char smem_raw[];
  unsigned char* smem = reinterpret_cast<unsigned char*>(
      (reinterpret_cast<unsigned long long>(smem_raw) + traits::kAlignment - 1) &
      ~static_cast<unsigned long long>(traits::kAlignment - 1));
  unsigned char* q_s = smem;  // 16-bit: D / 64 column blocks of [N][64]; fp8: hi, then lo
  unsigned char* kv_s = smem + traits::stages_offset(RANK, ROPE, N, KV_FP8);
  unsigned char* p_s = smem + traits::p_offset(RANK, ROPE, N, KV_FP8);  // [2][N][64] 16-bit
  float* x_s = reinterpret_cast<float*>(smem + traits::exchange_offset(RANK, ROPE, N, KV_FP8));
  float* factor_s = reinterpret_cast<float*>(smem + traits::factor_offset(RANK, ROPE, N, KV_FP8));
  unsigned long long* full =
      reinterpret_cast<unsigned long long*>(smem + traits::barrier_offset(RANK, ROPE, N, KV_FP8));
  unsigned long long* empty = full + STAGES;

  const MlaWorkItem work = mla_split::load_work_item(p);
  const int seq = work.seq, splits = work.splits;
  const int key_begin = work.key_begin, key_end = work.key_end;
  const int q0 = work.q0, q_len = work.q_len;
  const int seq_rows = q_len * p.num_q_heads;
  const int row0 = blockIdx.y * N;
  if (row0 >= seq_rows) return;
  const int kv_len = work.kv_len;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int blocks = key_end > key_begin ? (key_end - key_begin + BLOCK - 1) / BLOCK : 0;

  if (tid == 0) {
    for (int s = 0; s < STAGES; ++s) {
      sm90::mbarrier_init(&full[s], 1);
      sm90::mbarrier_init(&empty[s], traits::kWarpsPerGroup);  // the warps of one warpgroup
    }
    sm90::fence_barrier_init();
  }
  __syncthreads();

  if (warp >= 4 * traits::kConsumers) {
    sm90::setmaxnreg_dec<traits::kProducerRegisters>();
    if (warp != 4 * traits::kConsumers) return;
    if constexpr (KV_FP8) mla_sm90_fp8::wait_q_issued();
    mla_sm90::load_latent_blocks<CB, BLOCK, STAGES, BOX>(params, seq, key_begin, blocks, kv_len,
                                                         kv_s, full, empty, lane);
    return;  // the consumers synchronise among themselves from here on (named barriers)
  }

  sm90::setmaxnreg_inc<traits::kConsumerRegisters>();
  const int wg = warp / 4, t = tid % 128, wq = t / 32;

  // Q's rows as D / 64 column blocks of [N][64], 128-byte swizzled, zeros past the sequence's
  // last (KV_FP8: two e4m3 terms, scaled per row).
  constexpr int Q_TERM = traits::q_bytes(RANK, ROPE, TILE_ROWS, true) / 2;
  if constexpr (KV_FP8) {
    mla_sm90_fp8::load_q_rows_e4m3<DTYPE, D, N>(q_s, q_s + Q_TERM, factor_s, p, q0, row0, seq_rows,
                                                tid);
  } else {
    mla_sm90::load_q_rows<D, N>(q_s, p, q0, row0, seq_rows, tid);
  }

  // Column slot x = 2 j + e of the thread: tile column 8 j + 2 (t % 4) + e, accumulator
  // registers 4 j + e (key row t / 4 of the warp's 16) and 4 j + 2 + e (8 keys below).
  auto column = [&](int x) { return 8 * (x / 2) + 2 * (t % 4) + x % 2; };
  // Keys before limit[x] are visible to the column's row: the causal diagonal of its query token,
  // or kv_len; and the split's end.
  const int causal_base = kv_len - q_len + 1;
  int limit[COLS];
#pragma unroll
  for (int x = 0; x < COLS; ++x) {
    const int r = row0 + column(x);
    limit[x] = min(key_end, p.causal ? causal_base + r / p.num_q_heads : kv_len);
  }
  int first_limit = limit[0];
#pragma unroll
  for (int x = 1; x < COLS; ++x) first_limit = min(first_limit, limit[x]);
  // Each column's score scale (an fp8 code is the value over kv_scale; KV_FP8's Q rows carry a
  // power of two) and the output's (the codes' V).
  float col_scale[COLS];
#pragma unroll
  for (int x = 0; x < COLS; ++x) {
    col_scale[x] = KV_FP8 ? p.scale_log2 * p.kv_scale * factor_s[column(x)] : p.scale_log2;
  }
  const float out_scale = KV_FP8 ? p.kv_scale : 1.0f;

  float o[MT][N / 2];
#pragma unroll
  for (int m = 0; m < MT; ++m) {
#pragma unroll
    for (int i = 0; i < N / 2; ++i) o[m][i] = 0.0f;
  }
  float s[N / 2];
  float chain[CHAINS - 1][N / 2];      // S^T's other partial sums
  float col_max[COLS], col_sum[COLS];  // raw scores' maxima; sums over this thread's keys
#pragma unroll
  for (int x = 0; x < COLS; ++x) {
    col_max[x] = kNegInf;
    col_sum[x] = 0.0f;
  }
  unsigned char* pt = p_s + wg * traits::p_bytes(N);
  const int key_row = sm90_attention::accumulator_row(t, 0);  // and key_row + 8

  for (int i = wg; i < blocks; i += traits::kConsumers) {
    const int key0 = key_begin + i * BLOCK;
    // The block's stage: 16-bit, one per warpgroup (wg); fp8, the warpgroups' blocks in turn.
    const int stage_index = STAGES == traits::kConsumers ? wg : i % STAGES;
    unsigned char* kv = kv_s + stage_index * STAGE;
    // The descriptors, rebuilt each block from bases the compiler cannot hoist: every operand of
    // the loop is invariant (one stage per warpgroup), and ptxas would otherwise keep the
    // ~100 64-bit descriptors of the block's wgmmas live across the loop and spill.
    const unsigned long long q_desc = sm90::descriptor(q_s) + mla_sm90::opaque_zero();
    const unsigned long long p_desc = sm90::descriptor(pt) + mla_sm90::opaque_zero();
    sm90::mbarrier_wait(&full[stage_index], (i / STAGES) & 1);
    if (key0 + BLOCK > kv_len) {
      // The sequence's last block: V rows past kv_len to zero (the column blocks V's dims lie in:
      // RANK elements of 1 or 2 bytes in 128-byte rows).
      constexpr int VB = (RANK * (KV_FP8 ? 1 : 2) + traits::kRowBytes - 1) / traits::kRowBytes;
      const int first = kv_len - key0;
      for (int j = t; j < (BLOCK - first) * VB * 8; j += 128) {
        const int r = first + j / (VB * 8), b = (j / 8) % VB, chunk = j % 8;
        *reinterpret_cast<uint4*>(kv + b * COLUMN_BLOCK + r * 128 + chunk * 16) =
            make_uint4(0u, 0u, 0u, 0u);
      }
      sm90::fence_proxy_async_shared();  // before wgmma (and TMA, later) access these bytes
      mla_sm90::warpgroup_sync(wg);
    }

    // S^T = K Q^T: k16 steps (fp8: k32), both operands K-major, dealt in turn to CHAINS
    // accumulators (a wgmma of N = 16 is short: one chain of 36 dependent steps would wait on
    // each), summed.
    unsigned int v_first[4];  // KV_FP8: O^T's first codes, loaded before the softmax
    const unsigned long long k_desc = sm90::descriptor(kv) + mla_sm90::opaque_zero();
    if constexpr (KV_FP8) {
      // S^T 2^e = K hi^T + K lo^T / 16 over k32 steps of codes: the hi term's steps in turn to
      // the first half of the chains, the lo term's to the second.
      const unsigned long long lo_desc = sm90::descriptor(q_s + Q_TERM) + mla_sm90::opaque_zero();
      constexpr int HALF = CHAINS / 2;
      sm90::wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < D / 32; ++kk) {
        const unsigned long long k_step =
            sm90::descriptor_advance(k_desc, sm90_attention::k_major_step_offset(kk, BLOCK));
        const int q_step = sm90_attention::k_major_step_offset(kk, N);
        const int c = kk % HALF;
        sm90::wgmma_ss_e4m3<N>(c == 0 ? s : chain[c - 1], k_step,
                               sm90::descriptor_advance(q_desc, q_step), kk >= HALF ? 1 : 0);
        sm90::wgmma_ss_e4m3<N>(chain[HALF + c - 1], k_step,
                               sm90::descriptor_advance(lo_desc, q_step), kk >= HALF ? 1 : 0);
      }
      sm90::wgmma_commit();
      mla_sm90_fp8::v_codes<COLUMN_BLOCK>(
          mla_sm90_fp8::v_lane_address(shared_address(kv), wq, lane), 0, 0, v_first);
      sm90::wgmma_wait<0>();
#pragma unroll
      for (int j = 0; j < N / 2; ++j) {
        float hi = s[j], lo = chain[HALF - 1][j];
#pragma unroll
        for (int c = 1; c < HALF; ++c) {
          hi += chain[c - 1][j];
          lo += chain[HALF + c - 1][j];
        }
        s[j] = fmaf(lo, 1.0f / 16.0f, hi);
      }
    } else {
      sm90::wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {
        sm90::wgmma_ss<DTYPE, N>(
            kk % CHAINS == 0 ? s : chain[kk % CHAINS - 1],
            sm90::descriptor_advance(k_desc, sm90_attention::k_major_step_offset(kk, BLOCK)),
            sm90::descriptor_advance(q_desc, sm90_attention::k_major_step_offset(kk, N)),
            kk >= CHAINS ? 1 : 0);
      }
      sm90::wgmma_commit();
      sm90::wgmma_wait<0>();
#pragma unroll
      for (int j = 0; j < N / 2; ++j) {
#pragma unroll
        for (int c = 0; c < CHAINS - 1; ++c) s[j] += chain[c][j];
      }
    }

    // Hidden keys at -inf, then each column's maximum over the block.
    if (key0 + BLOCK > first_limit) {
#pragma unroll
      for (int x = 0; x < COLS; ++x) {
        const int j = 4 * (x / 2) + x % 2;
        if (key0 + key_row >= limit[x]) s[j] = kNegInf;
        if (key0 + key_row + 8 >= limit[x]) s[j + 2] = kNegInf;
      }
    }
    float* exchange = x_s + ((wg * 2 + (i / traits::kConsumers) % 2) * 4) * N;  // [4 warps][N]
#pragma unroll
    for (int x = 0; x < COLS; ++x) {
      const int j = 4 * (x / 2) + x % 2;
      float v = fmaxf(s[j], s[j + 2]);
      v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 4));
      v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 8));
      v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 16));
      if (lane < 4) exchange[wq * N + column(x)] = v;
    }
    mla_sm90::warpgroup_sync(wg);

    // A column's running maximum moves only where the block's exceeds it by more than
    // traits::kMaxSlack (log2 units: P stays below 2^kMaxSlack), so that most blocks leave the
    // accumulator as it is (a warp rescales it only where one of its columns moved).
    float alpha[COLS];
    bool moved = false;
#pragma unroll
    for (int x = 0; x < COLS; ++x) {
      const int c = column(x);
      const float block_max = fmaxf(fmaxf(exchange[c], exchange[N + c]),
                                    fmaxf(exchange[2 * N + c], exchange[3 * N + c]));
      const bool up = block_max * col_scale[x] > col_max[x] * col_scale[x] + traits::kMaxSlack;
      const float ref = up ? block_max : col_max[x];
      // A column that has seen no key yet keeps -inf; a finite base keeps -inf - -inf away.
      const float base = ref == kNegInf ? 0.0f : ref * col_scale[x];
      alpha[x] = up ? exp2_ftz(col_max[x] * col_scale[x] - base) : 1.0f;
      moved = moved || up;
      col_max[x] = ref;
      const int j = 4 * (x / 2) + x % 2;
      s[j] = exp2_ftz(fmaf(s[j], col_scale[x], -base));
      s[j + 2] = exp2_ftz(fmaf(s[j + 2], col_scale[x], -base));
      col_sum[x] = fmaf(col_sum[x], alpha[x], s[j] + s[j + 2]);
      // P^T [column][key], 128-byte swizzled: key k's 16-byte chunk k / 8 at k / 8 ^ (c % 8).
      unsigned char* row = pt + c * 128 + (key_row % 8) * 2;
      *reinterpret_cast<unsigned short*>(row + (((key_row / 8)) ^ (c % 8)) * 16) =
          static_cast<unsigned short>(pack2<MMA>(s[j], 0.0f));
      *reinterpret_cast<unsigned short*>(row + (((key_row / 8) + 1) ^ (c % 8)) * 16) =
          static_cast<unsigned short>(pack2<MMA>(s[j + 2], 0.0f));
    }
    if (__any_sync(0xffffffffu, moved)) {
#pragma unroll
      for (int m = 0; m < MT; ++m) {
#pragma unroll
        for (int j = 0; j < N / 2; ++j) o[m][j] *= alpha[2 * (j / 4) + j % 2];
      }
    }
    sm90::fence_proxy_async_shared();  // P^T's generic writes, before wgmma reads them
    mla_sm90::warpgroup_sync(wg);

    if constexpr (KV_FP8) {
      // O^T += V^T P^T, A from registers: tile m's dims 16 (4 m + wq) .. of the codes, the
      // block's 64 keys in two transposed ldmatrix, one fence per tile.
      const unsigned v_lane = mla_sm90_fp8::v_lane_address(shared_address(kv), wq, lane);
      constexpr int PAIRS = BLOCK / 32;
      unsigned int codes[4], next[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) codes[e] = v_first[e];
#pragma unroll
      for (int m = 0; m < MT; ++m) {
#pragma unroll
        for (int kp = 0; kp < PAIRS; ++kp) {
          const int step = m * PAIRS + kp + 1;  // the next (m, kp)'s codes in flight meanwhile
          if (step < MT * PAIRS) {
            mla_sm90_fp8::v_codes<COLUMN_BLOCK>(v_lane, step / PAIRS, step % PAIRS, next);
          }
          unsigned int a[2][4];
          mla_sm90_fp8::v_fragments(codes, a);
#pragma unroll
          for (int e = 0; e < 4; ++e) codes[e] = next[e];
          sm90::wgmma_fence();
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            sm90::wgmma_rs<MMA, N, 0>(o[m], a[h],
                                      sm90::descriptor_advance(p_desc, (2 * kp + h) * 32));
          }
          sm90::wgmma_commit();
          sm90::wgmma_wait<1>();
        }
      }
      sm90::wgmma_wait<0>();
    } else {
      // O^T += V^T P^T: A MN-major (V's column block m: 64 dims x 16 keys per step), B P^T
      // K-major.
      const unsigned long long v_base =
          sm90::descriptor(kv, COLUMN_BLOCK, sm90_attention::kSwizzleAtomBytes) +
          mla_sm90::opaque_zero();
      sm90::wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < BLOCK / 16; ++kk) {
#pragma unroll
        for (int m = 0; m < MT; ++m) {
          const unsigned long long v_desc = sm90::descriptor_advance(
              v_base, m * COLUMN_BLOCK + sm90_attention::mn_major_step_offset(kk));
          sm90::wgmma_ss<DTYPE, N, 1>(o[m], v_desc, sm90::descriptor_advance(p_desc, kk * 32), 1);
        }
      }
      sm90::wgmma_commit();
      sm90::wgmma_wait<0>();
    }
    __syncwarp();
    if (lane == 0) sm90::mbarrier_arrive(&empty[stage_index]);
  }

  // Each column's sum over the warp's keys (the 8 lanes of the same t % 4), then over the
  // warpgroup's warps: the exchange's first buffer of the warpgroup (its last read of the maxima
  // preceded the last block's P^T barrier, which every warp of the warpgroup has passed).
  float* sums = x_s + wg * 2 * 4 * N;  // [4 warps][N]
#pragma unroll
  for (int x = 0; x < COLS; ++x) {
    float v = col_sum[x];
    v += __shfl_xor_sync(0xffffffffu, v, 4);
    v += __shfl_xor_sync(0xffffffffu, v, 8);
    v += __shfl_xor_sync(0xffffffffu, v, 16);
    col_sum[x] = v;
  }
  // Both buffers of the exchange may still be read by a slow warp's last block: wait for all.
  mla_sm90::warpgroup_sync(wg);
#pragma unroll
  for (int x = 0; x < COLS; ++x) {
    if (lane < 4) sums[wq * N + column(x)] = col_sum[x];
  }
  mla_sm90::warpgroup_sync(wg);
#pragma unroll
  for (int x = 0; x < COLS; ++x) {
    const int c = column(x);
    col_sum[x] = sums[c] + sums[N + c] + sums[2 * N + c] + sums[3 * N + c];
  }

  // Warpgroup 1's state from stage 1 on (the producer loads nothing more: every block has been
  // loaded; where the warpgroups share the stages, once both have consumed their last): the
  // accumulator in register order, thread-major, and each column's maximum and sum.
  if constexpr (STAGES > traits::kConsumers) mla_sm90::consumers_sync();
  float* state = reinterpret_cast<float*>(kv_s + traits::state_offset(RANK, ROPE, N, KV_FP8));
  float* rows_s = reinterpret_cast<float*>(kv_s);  // [N][OUT_STRIDE], then [N] log2-sum-exp
  float* lse_s = rows_s + N * OUT_STRIDE;
  if (wg == 1) {
#pragma unroll
    for (int m = 0; m < MT; ++m) {
#pragma unroll
      for (int j = 0; j < N / 2; ++j) state[(m * (N / 2) + j) * 128 + t] = o[m][j];
    }
    if (wq == 0 && lane < 4) {
#pragma unroll
      for (int x = 0; x < COLS; ++x) {
        state[RANK * N + column(x)] = col_max[x];
        state[RANK * N + N + column(x)] = col_sum[x];
      }
    }
  }
  mla_sm90::consumers_sync();
  if (wg == 0) {
    float w0[COLS], w1[COLS];
#pragma unroll
    for (int x = 0; x < COLS; ++x) {
      const int c = column(x);
      const float m1 = state[RANK * N + c], l1 = state[RANK * N + N + c];
      const float ref = fmaxf(col_max[x], m1);
      const float base = ref == kNegInf ? 0.0f : ref * col_scale[x];
      const float a0 = exp2_ftz(col_max[x] * col_scale[x] - base);
      const float a1 = exp2_ftz(m1 * col_scale[x] - base);
      const float l = col_sum[x] * a0 + l1 * a1;
      const float inv = l > 0.0f ? out_scale / l : 0.0f;
      w0[x] = a0 * inv;
      w1[x] = a1 * inv;
      if (wq == 0 && lane < 4) lse_s[c] = l > 0.0f ? base + log2f(l) : kNegInf;
    }
#pragma unroll
    for (int m = 0; m < MT; ++m) {
#pragma unroll
      for (int j = 0; j < N / 2; ++j) {
        const int x = 2 * (j / 4) + j % 2;
        const int row = sm90_attention::accumulator_row(t, j);
        const int dim = 64 * m + (KV_FP8 ? mla_sm90_fp8::fp8_v_dim(row) : row);
        const int c = sm90_attention::accumulator_column(t, j);
        rows_s[c * OUT_STRIDE + dim] = o[m][j] * w0[x] + state[(m * (N / 2) + j) * 128 + t] * w1[x];
      }
    }
  }
  mla_sm90::consumers_sync();

  // The rows to the output (one split) or the partial buffers, 8 elements per thread and step.
  const int rows = min(N, seq_rows - row0);
  const long long out_row0 = static_cast<long long>(q0) * p.num_q_heads + row0;
  const int slot = splits > 1 ? p.seq_partial[seq] + work.split : 0;
  for (int i = tid; i < rows * (RANK / 8); i += mla_sm90::kConsumerThreads) {
    const int r = i / (RANK / 8), c = (i % (RANK / 8)) * 8;
    const float* v = rows_s + r * OUT_STRIDE + c;
    if (splits == 1) {
      uint4 packed;
      packed.x = pack2<DTYPE>(v[0], v[1]);
      packed.y = pack2<DTYPE>(v[2], v[3]);
      packed.z = pack2<DTYPE>(v[4], v[5]);
      packed.w = pack2<DTYPE>(v[6], v[7]);
      *reinterpret_cast<uint4*>(static_cast<unsigned short*>(p.out) + (out_row0 + r) * RANK + c) =
          packed;
    } else {
      float* dst =
          p.partial_out + (static_cast<long long>(slot) * p.max_rows + row0 + r) * RANK + c;
      *reinterpret_cast<float4*>(dst) = make_float4(v[0], v[1], v[2], v[3]);
      *reinterpret_cast<float4*>(dst + 4) = make_float4(v[4], v[5], v[6], v[7]);
    }
  }
  if (splits == 1) return;
  for (int r = tid; r < rows; r += mla_sm90::kConsumerThreads) {
    p.partial_lse[static_cast<long long>(slot) * p.max_rows + row0 + r] = lse_s[r];
  }
  mla_split::merge_splits<DTYPE, RANK, mla_sm90::kConsumerThreads>(
      p, seq, splits, row0, rows, out_row0, tid, [] { mla_sm90::consumers_sync(); });
}

}  // namespace attn
