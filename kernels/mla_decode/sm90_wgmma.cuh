// mla_decode.sm90_wgmma: absorbed multi-head latent attention over a paged latent cache on
// Hopper's tensor cores (wgmma) with the latent rows loaded by TMA. The family's semantics:
// kernels/mla_decode/mla_decode_variants.hpp and docs/mla-decode.md; shapes and rules:
// sm90_wgmma_traits.hpp. The work list, the split of the keys and the split merge are
// mla_decode.sm80_mma's (sm80_mma.cuh, mla_split_plan.hpp).
//
// A CTA takes 64 consecutive rows of one sequence (row r is query token r / H, q head r % H; rows
// past the sequence's last are zeros and never stored) and one split of its keys, BLOCK latent
// rows at a time:
// - The producer (the first warp of the CTA's last warpgroup, which gives its registers to the
//   consumers with setmaxnreg) loads block i into stage i % STAGES: lane b takes keys
//   b * BOX .. of the block (a page, or a part of one) when the first of them is a key of the
//   sequence, one TMA box of BOX rows x 64 columns per 64-column block of the latent row, all
//   completing on the stage's full mbarrier. The stage holds the block as column blocks of
//   [BLOCK][64], 128-byte swizzled: the K-major operand of Q K^T and, its first RANK columns, the
//   MN-major V of P V.
// - Each of the two consumer warpgroups waits on full, computes S = Q K^T for all 64 rows over the
//   whole RANK + ROPE width (wgmma SS, Q from shared memory), masks, runs the online softmax (each
//   row's scores lie in one quad of lanes: no shared memory), and multiplies P (registers, wgmma
//   RS) by its half of V's columns into its half of the output: the 64 x RANK fp32 accumulator
//   does not fit one warpgroup's registers, so warpgroup w holds columns w RANK / 2 .. Without
//   QK_SPLIT both compute the same S and softmax, so nothing passes between them inside the loop.
//   With QK_SPLIT warpgroup w computes the scores of keys w BLOCK / 2 .. of the block only (half
//   the Q K^T work); the row maxima of the two halves meet in shared memory (one barrier of the
//   256 consumer threads), each exponentiates its half against the common maximum, and P of the
//   whole block passes through shared memory as A fragments (a second barrier); each keeps the
//   row sums of its half, added at the end. Each warp then arrives on the stage's empty mbarrier,
//   which the producer waits on before refilling it.
// - V rows of the sequence's last block past its last key (the rest of its last page, or rows no
//   box loaded) are zeroed before use, each warpgroup its own columns: P is 0 there, but 0 x NaN
//   would poison the output.
// After the loop, as in sm80_mma.cuh: with one split the CTA normalises and writes its rows; with
// several each CTA writes its normalised rows and their log2-sum-exp to the partial buffers and
// the last CTA of the (sequence, row tile) to finish merges them, with the stage area as scratch.
#pragma once

#include "kernels/mla_decode/sm90_latent.cuh"
#include "kernels/mla_decode/sm90_wgmma_traits.hpp"

namespace attn {

template <int DTYPE, int RANK, int ROPE, int BLOCK, int STAGES, int BOX, bool QK_SPLIT>
__global__ void __launch_bounds__(mla_decode::sm90_wgmma::kThreads, 1)
    mla_decode_sm90_wgmma(const __grid_constant__ MlaSm90Params params) {
  namespace traits = mla_decode::sm90_wgmma;
  static_assert(
      traits::check(RANK, ROPE, BLOCK, STAGES, BOX, QK_SPLIT) == traits::kOk && BLOCK % BOX == 0,
      "mla_decode.sm90_wgmma config breaks a rule of sm90_wgmma_traits.hpp");
  constexpr int D = RANK + ROPE;
  constexpr int CB = traits::column_blocks(RANK, ROPE);
  constexpr int ROWS = traits::kRows;
  constexpr int CW = traits::consumer_columns(RANK);  // output columns per warpgroup
  constexpr int NC = traits::pv_chunk(RANK);          // N of one P V wgmma
  constexpr int CHUNKS = CW / NC;
  constexpr int STAGE = traits::stage_bytes(RANK, ROPE, BLOCK);
  constexpr int COLUMN_BLOCK = BLOCK * sm90_attention::kBlockRowBytes;  // [BLOCK][64] of a stage
  constexpr int CONSUMER_WARPS = 4 * traits::kConsumers;
  // Keys of the block whose scores a warpgroup computes: all, or (QK_SPLIT) warpgroup w's half
  // from key w BLOCK / 2.
  constexpr int SN = QK_SPLIT ? BLOCK / 2 : BLOCK;
  const MlaSm80Params& p = params.base;
  const float kNegInf = -__int_as_float(0x7f800000);

  extern __shared__ __align__(16) unsigned char smem_raw[];
  unsigned char* smem = reinterpret_cast<unsigned char*>(
      (reinterpret_cast<unsigned long long>(smem_raw) + traits::kAlignment - 1) &
      ~static_cast<unsigned long long>(traits::kAlignment - 1));
  unsigned char* q_s = smem;  // CB column blocks of [ROWS][64]
  unsigned char* kv_s = smem + traits::stages_offset(RANK, ROPE);
  // QK_SPLIT: [2][ROWS] row maxima (then sums) and P's A fragments [BLOCK / 16][4][128].
  float* x_s = reinterpret_cast<float*>(smem + traits::exchange_offset(RANK, ROPE, BLOCK, STAGES));
  unsigned int* p_x = reinterpret_cast<unsigned int*>(x_s + traits::kConsumers * ROWS);
  unsigned long long* full = reinterpret_cast<unsigned long long*>(
      smem + traits::barrier_offset(RANK, ROPE, BLOCK, STAGES, QK_SPLIT));
  unsigned long long* empty = full + STAGES;

  const MlaWorkItem work = mla_split::load_work_item(p);
  const int seq = work.seq, split = work.split, splits = work.splits;
  const int key_begin = work.key_begin, key_end = work.key_end;
  const int q0 = work.q0, q_len = work.q_len;
  const int seq_rows = q_len * p.num_q_heads;
  const int row0 = blockIdx.y * ROWS;
  if (row0 >= seq_rows) return;
  const int kv_len = work.kv_len;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  // Blocks start at multiples of BLOCK from key 0 (the plan cuts splits at whole blocks).
  const int blocks = key_end > key_begin ? (key_end - key_begin + BLOCK - 1) / BLOCK : 0;

  if (tid == 0) {
    for (int s = 0; s < STAGES; ++s) {
      sm90::mbarrier_init(&full[s], 1);
      sm90::mbarrier_init(&empty[s], CONSUMER_WARPS);  // one arrival per consumer warp
    }
    sm90::fence_barrier_init();
  }
  __syncthreads();

  if (warp >= CONSUMER_WARPS) {
    sm90::setmaxnreg_dec<traits::kProducerRegisters>();
    if (warp != CONSUMER_WARPS) return;
    // Producer: the warpgroup's first warp.
    mla_sm90::load_latent_blocks<CB, BLOCK, STAGES, BOX>(params, seq, key_begin, blocks, kv_len,
                                                         kv_s, full, empty, lane);
    return;  // the consumers synchronise among themselves from here on (named barriers)
  }

  sm90::setmaxnreg_inc<traits::kConsumerRegisters>();
  const int wg = warp / 4, t = tid % 128;

  // Q's rows as CB column blocks of [ROWS][64], 128-byte swizzled, zeros past the sequence's last.
  mla_sm90::load_q_rows<D, ROWS>(q_s, p, q0, row0, seq_rows, tid);

  // The thread's two rows (accumulator rows t / 32 * 16 + t % 32 / 4 and 8 below) see keys before
  // limit[h]: the causal diagonal of the row's query token, or kv_len; and the split's end.
  const int causal_base = kv_len - q_len + 1;
  int limit[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int r = sm90_attention::accumulator_row(t, 2 * h);
    limit[h] = min(key_end, p.causal ? causal_base + (row0 + r) / p.num_q_heads : kv_len);
  }
  const int first_limit = min(limit[0], limit[1]);
  const float score_scale = p.scale_log2;

  float o[CHUNKS][NC / 2];
#pragma unroll
  for (int c = 0; c < CHUNKS; ++c) {
#pragma unroll
    for (int i = 0; i < NC / 2; ++i) o[c][i] = 0.0f;
  }
  float s[SN / 2];
  unsigned int pa[BLOCK / 16][4];
  float row_max[2] = {kNegInf, kNegInf};  // raw scores (score_scale > 0 keeps the order)
  float row_sum[2] = {0.0f, 0.0f};        // this lane's columns; summed over the quad at the end
  const unsigned long long q_desc = sm90::descriptor(q_s);

  for (int i = 0; i < blocks; ++i) {
    const int stage = i % STAGES;
    unsigned char* kv = kv_s + stage * STAGE;
    const int key0 = key_begin + i * BLOCK;
    sm90::mbarrier_wait(&full[stage], (i / STAGES) & 1);
    if (key0 + BLOCK > kv_len) {
      // The sequence's last block: V rows past kv_len to zero, in this warpgroup's columns.
      constexpr int V_BLOCKS = CW / 64;
      const int first = kv_len - key0;
      for (int j = t; j < (BLOCK - first) * V_BLOCKS * 8; j += 128) {
        const int r = first + j / (V_BLOCKS * 8), b = (j / 8) % V_BLOCKS, chunk = j % 8;
        *reinterpret_cast<uint4*>(kv + (wg * V_BLOCKS + b) * COLUMN_BLOCK + r * 128 + chunk * 16) =
            make_uint4(0u, 0u, 0u, 0u);
      }
      sm90::fence_proxy_async_shared();  // before wgmma (and TMA, later) access these bytes
      mla_sm90::warpgroup_sync(wg);
    }

    // S = Q K^T: (RANK + ROPE) / 16 k16 steps, K-major operands; SN keys from key0 + skey.
    const int skey = QK_SPLIT ? wg * SN : 0;
    const unsigned long long k_desc = sm90::descriptor(kv + skey * sm90_attention::kBlockRowBytes);
    sm90::wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      sm90::wgmma_ss<DTYPE, SN>(
          s, sm90::descriptor_advance(q_desc, sm90_attention::k_major_step_offset(kk, ROWS)),
          sm90::descriptor_advance(k_desc, sm90_attention::k_major_step_offset(kk, BLOCK)),
          kk > 0 ? 1 : 0);
    }
    sm90::wgmma_commit();
    sm90::wgmma_wait<0>();

    // Hidden keys at -inf (the split's end, the causal diagonal), then the online softmax.
    if (key0 + BLOCK > first_limit) {
#pragma unroll
      for (int j = 0; j < SN / 2; ++j) {
        const int key = key0 + skey + sm90_attention::accumulator_column(t, j);
        if (key >= limit[(j / 2) % 2]) s[j] = kNegInf;
      }
    }
    float tile_max[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      tile_max[h] = kNegInf;
#pragma unroll
      for (int j = 0; j < SN / 8; ++j) {
        tile_max[h] = fmaxf(tile_max[h], fmaxf(s[4 * j + 2 * h], s[4 * j + 2 * h + 1]));
      }
      tile_max[h] = fmaxf(tile_max[h], __shfl_xor_sync(0xffffffffu, tile_max[h], 1));
      tile_max[h] = fmaxf(tile_max[h], __shfl_xor_sync(0xffffffffu, tile_max[h], 2));
    }
    if constexpr (QK_SPLIT) {
      // The other warpgroup's maxima of the same rows over the other half of the keys. (Its
      // previous read of x_s preceded the P exchange barrier of the last block, which this
      // warpgroup has passed.)
      if (t % 4 == 0) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          x_s[wg * ROWS + sm90_attention::accumulator_row(t, 2 * h)] = tile_max[h];
        }
      }
      mla_sm90::consumers_sync();
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        tile_max[h] =
            fmaxf(tile_max[h], x_s[(1 - wg) * ROWS + sm90_attention::accumulator_row(t, 2 * h)]);
      }
    }
    float alpha[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float ref = fmaxf(row_max[h], tile_max[h]);
      // A row that has seen no key yet keeps -inf; a finite base keeps -inf - -inf away.
      const float base = ref == kNegInf ? 0.0f : ref * score_scale;
      alpha[h] = exp2_ftz(row_max[h] * score_scale - base);
      row_max[h] = ref;
      float sum = 0.0f;
#pragma unroll
      for (int j = 0; j < SN / 8; ++j) {
        s[4 * j + 2 * h] = exp2_ftz(fmaf(s[4 * j + 2 * h], score_scale, -base));
        s[4 * j + 2 * h + 1] = exp2_ftz(fmaf(s[4 * j + 2 * h + 1], score_scale, -base));
        sum += s[4 * j + 2 * h] + s[4 * j + 2 * h + 1];
      }
      row_sum[h] = fmaf(row_sum[h], alpha[h], sum);
    }
#pragma unroll
    for (int c = 0; c < CHUNKS; ++c) {
#pragma unroll
      for (int j = 0; j < NC / 2; ++j) o[c][j] *= alpha[(j / 2) % 2];
    }
    if constexpr (QK_SPLIT) {
      // P of the whole block through shared memory: this warpgroup's k16 steps of its half, then
      // every step back (thread t of both warpgroups holds the same rows and columns of a
      // fragment: [step][register][thread], no bank conflict).
#pragma unroll
      for (int kk = 0; kk < SN / 16; ++kk) {
#pragma unroll
        for (int x = 0; x < 4; ++x) {
          p_x[((wg * (SN / 16) + kk) * 4 + x) * 128 + t] =
              pack2<DTYPE>(s[sm90_attention::a_fragment_accumulator(kk, x, 0)],
                           s[sm90_attention::a_fragment_accumulator(kk, x, 1)]);
        }
      }
      mla_sm90::consumers_sync();
#pragma unroll
      for (int kk = 0; kk < BLOCK / 16; ++kk) {
#pragma unroll
        for (int x = 0; x < 4; ++x) pa[kk][x] = p_x[(kk * 4 + x) * 128 + t];
      }
    } else {
#pragma unroll
      for (int kk = 0; kk < BLOCK / 16; ++kk) {
#pragma unroll
        for (int x = 0; x < 4; ++x) {
          pa[kk][x] = pack2<DTYPE>(s[sm90_attention::a_fragment_accumulator(kk, x, 0)],
                                   s[sm90_attention::a_fragment_accumulator(kk, x, 1)]);
        }
      }
    }

    // O += P V over this warpgroup's columns: V MN-major (LBO one column block of the stage).
    sm90::wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < BLOCK / 16; ++kk) {
#pragma unroll
      for (int c = 0; c < CHUNKS; ++c) {
        const unsigned long long v_desc =
            sm90::descriptor(kv + (wg * CW + c * NC) / 64 * COLUMN_BLOCK, COLUMN_BLOCK,
                             sm90_attention::kSwizzleAtomBytes);
        sm90::wgmma_rs<DTYPE, NC, 1>(
            o[c], pa[kk],
            sm90::descriptor_advance(v_desc, sm90_attention::mn_major_step_offset(kk)));
      }
    }
    sm90::wgmma_commit();
    sm90::wgmma_wait<0>();
    __syncwarp();
    if (lane == 0) sm90::mbarrier_arrive(&empty[stage]);
  }

  // Each row's sum over its quad; the normaliser and the log2-sum-exp.
  float l[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    l[h] = row_sum[h];
    l[h] += __shfl_xor_sync(0xffffffffu, l[h], 1);
    l[h] += __shfl_xor_sync(0xffffffffu, l[h], 2);
  }
  if constexpr (QK_SPLIT) {
    // Each warpgroup summed P over its half of the keys (against the same maxima): add the other
    // half. (The other warpgroup's last read of x_s preceded the last block's P exchange barrier.)
    if (t % 4 == 0) {
#pragma unroll
      for (int h = 0; h < 2; ++h) x_s[wg * ROWS + sm90_attention::accumulator_row(t, 2 * h)] = l[h];
    }
    mla_sm90::consumers_sync();
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      l[h] += x_s[(1 - wg) * ROWS + sm90_attention::accumulator_row(t, 2 * h)];
    }
  }
  const long long out_row0 = static_cast<long long>(q0) * p.num_q_heads + row0;
  const int slot = splits > 1 ? p.seq_partial[seq] + split : 0;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int r = sm90_attention::accumulator_row(t, 2 * h);
    if (row0 + r >= seq_rows) continue;
    const float inv = l[h] > 0.0f ? 1.0f / l[h] : 0.0f;
    const long long prow = static_cast<long long>(slot) * p.max_rows + row0 + r;
#pragma unroll
    for (int c = 0; c < CHUNKS; ++c) {
#pragma unroll
      for (int j = 0; j < NC / 8; ++j) {
        const int col = wg * CW + c * NC + sm90_attention::accumulator_column(t, 4 * j + 2 * h);
        const float x0 = o[c][4 * j + 2 * h] * inv, x1 = o[c][4 * j + 2 * h + 1] * inv;
        if (splits == 1) {
          *reinterpret_cast<unsigned int*>(static_cast<unsigned short*>(p.out) +
                                           (out_row0 + r) * RANK + col) = pack2<DTYPE>(x0, x1);
        } else {
          *reinterpret_cast<float2*>(p.partial_out + prow * RANK + col) = make_float2(x0, x1);
        }
      }
    }
    if (splits > 1 && wg == 0 && t % 4 == 0) {
      p.partial_lse[prow] = l[h] > 0.0f ? row_max[h] * score_scale + log2f(l[h]) : kNegInf;
    }
  }
  if (splits == 1) return;

  // The last split of this (sequence, row tile) to finish merges them all.
  mla_split::merge_splits<DTYPE, RANK, mla_sm90::kConsumerThreads>(
      p, seq, splits, row0, min(ROWS, seq_rows - row0), out_row0, tid,
      [] { mla_sm90::consumers_sync(); });
}

}  // namespace attn
