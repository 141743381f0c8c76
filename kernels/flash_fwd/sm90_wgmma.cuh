// flash_fwd.sm90_wgmma: dense flash attention forward on Hopper (sm_90a), FlashAttention-3 style:
// TMA loads completing on mbarriers, wgmma from shared memory, a producer warpgroup and one or two
// consumer warpgroups, and each tile's softmax overlapped with the tensor cores.
//
// Computes, for every sequence s of a variable-length batch (cu_seqlens), query i < q_len and q
// head h (kv head h / group),
//   out[s, i, h] = softmax_j(scale * q[s, i, h] . k[s, j, h / group]) v[s, j, h / group]
//   lse[s, i, h] = log(sum_j exp(scale * q . k_j))            (natural log, optional)
// over the keys j < kv_len the mask lets through: all of them, or with CAUSAL j <= i + (kv_len -
// q_len) (aligned to the bottom right when the lengths differ). A row that sees no key writes
// zeros and lse = -inf. The same semantics as flash_fwd.sm80_mma.
//
// Layout: Q and out [total_q, num_q_heads, head_dim]; K and V contiguous [total_kv, num_kv_heads,
// head_dim] (flash_fwd_gather_kv makes them so from the paged pool, once, outside the timing).
// The TMA maps view each as a 2-D tensor [tokens, heads * head_dim]: a box of rows x 64 columns
// at column head * head_dim + 64 c is column block c of one head's rows. Rows past the end of the
// tensor are zero-filled by TMA; rows past the end of a sequence (the next sequence's tokens) are
// loaded but masked (keys) or never stored (queries).
//
// Work decomposition (grid = query tiles of all sequences, q heads; block = 128 x (1 + CONSUMERS)):
// - A CTA owns TILE_M = 64 x CONSUMERS query rows of one sequence and one q head; the host lists
//   the (sequence, tile) pairs heaviest first, as for sm80_mma.
// - Warpgroup 0 is the producer: after setmaxnreg.dec, one thread issues TMA loads of Q (once)
//   and of K and V for each key tile of TILE_N keys into STAGES buffers each. K and V have their
//   own full barriers (TMA completes its bytes on them) and empty barriers (one arrival per
//   consumer warp once its wgmmas reading the buffer are done), so S = Q K^T can start before V
//   has landed.
// - Warpgroups 1..CONSUMERS are consumers (setmaxnreg.inc): each owns 64 query rows, their fp32
//   output accumulator and online-softmax statistics in registers.
// - Per key tile n, a consumer issues S_n = Q K_n^T (wgmma SS, both from shared memory), then
//   O += P_{n-1} V_{n-1} (wgmma RS: P from registers as the A operand, V from shared memory),
//   waits for S_n only, and runs the masking and softmax of S_n while the P V product runs on the
//   tensor cores (FA3's intra-warpgroup overlap); then waits for P V, rescales O and converts S_n
//   into the next P.
// - Causal: key tiles past the CTA's last visible key are never loaded; a consumer whose rows see
//   fewer tiles skips the products of the rest (it only passes their barriers). The mask is
//   applied only on tiles that reach a hidden key of the warpgroup's rows.
//
// Shared memory (from a 1024-byte boundary, the period of the 128-byte swizzle):
//   Q [HEAD_DIM / 64][TILE_M][64], K [STAGES][HEAD_DIM / 64][TILE_N][64], V likewise, barriers.
// Every [rows][64] column block is what a TMA box with CU_TENSOR_MAP_SWIZZLE_128B writes: rows of
// 128 bytes, 16-byte chunks XOR-swizzled by (row % 8), 8-row atoms 1024 bytes apart.
// - Q (A of S = Q K^T, K-major) and K (B of S, K-major: B is [N = keys, K = dims]): descriptor
//   K-major, SBO = 1024; k16 step kk reads column block kk / 4 at byte (kk % 4) x 32.
// - V (B of O = P V, [K = keys, N = dims]): its rows are keys with dims contiguous, i.e. B is
//   MN-major. wgmma reads it through a descriptor with the transpose bit (imm-trans-b = 1, allowed
//   for 16-bit types): SBO = 1024 (8 keys of 128 bytes), LBO = TILE_N x 128 (the next column block
//   of 64 dims); k16 step kk starts at key 16 kk, byte 2048 kk. One wgmma m64nHEAD_DIMk16 covers
//   every dim (N <= 256).
//
// Tunables and why they exist:
//   TILE_M     64 x CONSUMERS query rows per CTA: K/V traffic per query row
//   TILE_N     keys per stage: scores in registers (64 or 128; 128 only where they fit beside the
//              head_dim accumulators, see the traits) vs barrier and softmax overhead per key
//   STAGES     TMA buffers of K and of V in flight
//   CONSUMERS  1 or 2 consumer warpgroups: two share each K/V tile (half the loads per row) and
//              hide each other's softmax
#pragma once

#include "kernels/common/convert.cuh"
#include "kernels/common/fast_math.cuh"
#include "kernels/common/sm90.cuh"
#include "kernels/flash_fwd/gather_kv.cuh"
#include "kernels/flash_fwd/sm90_wgmma_params.hpp"
#include "kernels/flash_fwd/sm90_wgmma_traits.hpp"

namespace attn {

namespace flash_sm90 {

// Key tiles the query rows [0, row_end) of a sequence need: all of its keys, or with CAUSAL those
// up to the last row's last visible key (none when row_end <= 0).
__device__ __forceinline__ int key_tiles(int row_end, int q_len, int kv_len, int tile_n,
                                         bool causal) {
  if (row_end <= 0) return 0;
  int keys = kv_len;
  if (causal) keys = max(0, min(kv_len, min(row_end, q_len) + kv_len - q_len));
  return (keys + tile_n - 1) / tile_n;
}

}  // namespace flash_sm90

template <int DTYPE, int HEAD_DIM, int TILE_M, int TILE_N, int STAGES, int CONSUMERS, bool CAUSAL>
__global__ void __launch_bounds__(flash_sm90::threads(CONSUMERS), 1)
    flash_fwd_sm90_wgmma(const __grid_constant__ FlashFwdSm90Params p) {
  static_assert(flash_sm90::check(HEAD_DIM, TILE_M, TILE_N, STAGES, CONSUMERS) == flash_sm90::kOk,
                "invalid flash_fwd.sm90_wgmma config: see flash_sm90::check");
  constexpr int Q_BYTES = flash_sm90::q_bytes(HEAD_DIM, TILE_M);
  constexpr int KV_BYTES = flash_sm90::kv_tile_bytes(HEAD_DIM, TILE_N);
  constexpr int BLOCKS = flash_sm90::column_blocks(HEAD_DIM);
  constexpr int ROW_BYTES = flash_sm90::kBlockRowBytes;  // 128
  constexpr int Q_BLOCK = TILE_M * ROW_BYTES;            // one column block of Q, bytes
  constexpr int KV_BLOCK = TILE_N * ROW_BYTES;           // one column block of K or V, bytes
  static_assert(
      flash_sm90::accumulator_row(0, 2) == 8 && flash_sm90::accumulator_column(1, 5) == 11,
      "accumulator layout");
  constexpr int ROWS = flash_sm90::kConsumerRows;  // 64 rows per consumer warpgroup
  const float kNegInf = -__int_as_float(0x7f800000);

  extern __shared__ unsigned char shared_raw[];
  unsigned char* shared = reinterpret_cast<unsigned char*>(
      (reinterpret_cast<unsigned long long>(shared_raw) + 1023) & ~1023ull);
  unsigned char* q_tile = shared;                        // [BLOCKS][TILE_M][64]
  unsigned char* k_tiles = shared + Q_BYTES;             // [STAGES][BLOCKS][TILE_N][64]
  unsigned char* v_tiles = k_tiles + STAGES * KV_BYTES;  // [STAGES][BLOCKS][TILE_N][64]
  unsigned long long* q_full = reinterpret_cast<unsigned long long*>(v_tiles + STAGES * KV_BYTES);
  unsigned long long* k_full = q_full + 1;
  unsigned long long* k_empty = k_full + STAGES;
  unsigned long long* v_full = k_empty + STAGES;
  unsigned long long* v_empty = v_full + STAGES;

  const int seq = p.tiles[2 * blockIdx.x], m0 = p.tiles[2 * blockIdx.x + 1] * TILE_M;
  const int q_head = blockIdx.y, kv_head = q_head / p.group;
  const int q_begin = p.cu_seqlens_q[seq], q_len = p.cu_seqlens_q[seq + 1] - q_begin;
  const int kv_begin = p.cu_seqlens_kv[seq], kv_len = p.cu_seqlens_kv[seq + 1] - kv_begin;
  const int offset = kv_len - q_len;  // causal: query i sees keys j <= i + offset
  // Key tiles the CTA loads: those its last valid row needs (with CAUSAL the most of any row).
  const int n_tiles = flash_sm90::key_tiles(min(m0 + TILE_M, q_len), q_len, kv_len, TILE_N, CAUSAL);

  if (threadIdx.x == 0) {
    sm90::mbarrier_init(q_full, 1);
    for (int s = 0; s < STAGES; ++s) {
      sm90::mbarrier_init(&k_full[s], 1);  // the producer's arrive.expect_tx
      sm90::mbarrier_init(&v_full[s], 1);
      sm90::mbarrier_init(&k_empty[s], CONSUMERS * 4);  // one arrival per consumer warp
      sm90::mbarrier_init(&v_empty[s], CONSUMERS * 4);
    }
    sm90::fence_barrier_init();
  }
  __syncthreads();

  const int warpgroup = threadIdx.x / 128;
  if (warpgroup == 0) {
    // Producer: one thread issues every load. Stage s = n % STAGES is refilled for tile n once
    // every consumer warp released tile n - STAGES (a fresh empty barrier passes parity 1).
    sm90::setmaxnreg_dec<flash_sm90::kProducerRegisters>();
    if (threadIdx.x == 0 && n_tiles > 0) {
      sm90::mbarrier_expect_bytes(q_full, Q_BYTES);
#pragma unroll
      for (int c = 0; c < BLOCKS; ++c) {
        sm90::tma_load_2d(q_tile + c * Q_BLOCK, &p.q_map, q_head * HEAD_DIM + c * 64, q_begin + m0,
                          q_full);
      }
      for (int n = 0; n < n_tiles; ++n) {
        const int s = n % STAGES;
        const unsigned int parity = ((n / STAGES) & 1) ^ 1;
        const int row = kv_begin + n * TILE_N;
        sm90::mbarrier_wait(&k_empty[s], parity);
        sm90::mbarrier_expect_bytes(&k_full[s], KV_BYTES);
#pragma unroll
        for (int c = 0; c < BLOCKS; ++c) {
          sm90::tma_load_2d(k_tiles + s * KV_BYTES + c * KV_BLOCK, &p.k_map,
                            kv_head * HEAD_DIM + c * 64, row, &k_full[s]);
        }
        sm90::mbarrier_wait(&v_empty[s], parity);
        sm90::mbarrier_expect_bytes(&v_full[s], KV_BYTES);
#pragma unroll
        for (int c = 0; c < BLOCKS; ++c) {
          sm90::tma_load_2d(v_tiles + s * KV_BYTES + c * KV_BLOCK, &p.v_map,
                            kv_head * HEAD_DIM + c * 64, row, &v_full[s]);
        }
      }
    }
    return;
  }

  // ---- Consumers ----
  sm90::setmaxnreg_inc<flash_sm90::kConsumerRegisters>();
  const int consumer = warpgroup - 1;
  const int tid = threadIdx.x % 128, lane = tid % 32;
  const int wg_row0 = m0 + consumer * ROWS;  // the warpgroup's first row in the sequence
  const int my_tiles = wg_row0 < q_len ? flash_sm90::key_tiles(min(wg_row0 + ROWS, q_len), q_len,
                                                               kv_len, TILE_N, CAUSAL)
                                       : 0;
  // Keys from mask_from on are hidden from at least one row of the warpgroup (causal, or past the
  // sequence's end): tiles reaching it are masked element by element, the others not at all.
  const int mask_from = CAUSAL ? max(0, min(kv_len, wg_row0 + offset + 1)) : kv_len;
  // This thread's two rows (accumulator layout, sm90.cuh): row0 and row0 + 8.
  const int row0 = wg_row0 + flash_sm90::accumulator_row(tid, 0);
  const unsigned char* q_rows = q_tile + consumer * ROWS * ROW_BYTES;

  // Accumulator register i of a 64 x N wgmma tile: row row0 + 8 * ((i / 2) % 2), column
  // 8 * (i / 4) + 2 * (lane % 4) + i % 2. Statistics per row h = 0, 1.
  float o[HEAD_DIM / 2];
#pragma unroll
  for (int i = 0; i < HEAD_DIM / 2; ++i) o[i] = 0.0f;
  float s[TILE_N / 2];                    // scores of the tile being softmaxed, then its 2^(...)
  unsigned int pa[TILE_N / 16][4];        // P of the previous tile: A fragments of its k16 steps
  float row_max[2] = {kNegInf, kNegInf};  // raw scores (scale_log2 > 0 keeps the order)
  float row_sum[2] = {0.0f, 0.0f};  // this lane's columns only; summed over the quad at the end
  float alpha[2];

  // S = Q K_n^T: HEAD_DIM / 16 k16 steps, the first overwriting S.
  auto issue_scores = [&](int n) {
    const unsigned char* k = k_tiles + (n % STAGES) * KV_BYTES;
    sm90::wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < HEAD_DIM / 16; ++kk) {
      sm90::wgmma_ss<DTYPE, TILE_N>(
          s, sm90::descriptor(q_rows + flash_sm90::k_major_step_offset(kk, TILE_M)),
          sm90::descriptor(k + flash_sm90::k_major_step_offset(kk, TILE_N)), kk > 0 ? 1 : 0);
    }
    sm90::wgmma_commit();
  };
  // O += P V_n: TILE_N / 16 k16 steps over keys, V MN-major (transposed B).
  auto issue_values = [&](int n) {
    const unsigned char* v = v_tiles + (n % STAGES) * KV_BYTES;
    sm90::wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < TILE_N / 16; ++kk) {
      sm90::wgmma_rs<DTYPE, HEAD_DIM, 1>(
          o, pa[kk],
          sm90::descriptor(v + flash_sm90::mn_major_step_offset(kk),
                           flash_sm90::v_leading_bytes(TILE_N), flash_sm90::kSwizzleAtomBytes));
    }
    sm90::wgmma_commit();
  };
  // Mask S_n, update the row statistics and turn S_n into 2^(S * scale_log2 - max) in place;
  // alpha rescales what O and the sums held before.
  auto softmax = [&](int n) {
    const int key0 = n * TILE_N;
    if (key0 + TILE_N > mask_from) {
#pragma unroll
      for (int i = 0; i < TILE_N / 2; ++i) {
        const int row = wg_row0 + flash_sm90::accumulator_row(tid, i);
        const int key = key0 + flash_sm90::accumulator_column(tid, i);
        if (key >= kv_len || (CAUSAL && key > row + offset)) s[i] = kNegInf;
      }
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float tile_max = kNegInf;
#pragma unroll
      for (int j = 0; j < TILE_N / 8; ++j)
        tile_max = fmaxf(tile_max, fmaxf(s[4 * j + 2 * h], s[4 * j + 2 * h + 1]));
      // The 4 lanes of a quad hold one row.
      tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
      tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 2));
      const float new_max = fmaxf(row_max[h], tile_max);
      // No visible key yet: a finite base, so that -inf - -inf never happens.
      const float base = new_max == kNegInf ? 0.0f : new_max * p.scale_log2;
      alpha[h] = exp2_ftz(row_max[h] * p.scale_log2 - base);  // 0 while no key
      row_max[h] = new_max;
      float sum = 0.0f;
#pragma unroll
      for (int j = 0; j < TILE_N / 8; ++j) {
        s[4 * j + 2 * h] = exp2_ftz(fmaf(s[4 * j + 2 * h], p.scale_log2, -base));
        s[4 * j + 2 * h + 1] = exp2_ftz(fmaf(s[4 * j + 2 * h + 1], p.scale_log2, -base));
        sum += s[4 * j + 2 * h] + s[4 * j + 2 * h + 1];
      }
      row_sum[h] = fmaf(row_sum[h], alpha[h], sum);
    }
  };
  // Rescale O by alpha and pack S_n into the A fragments of the next P V: accumulator registers
  // 8 kk .. 8 kk + 7 are keys 16 kk .. 16 kk + 15 in exactly the A-fragment order.
  auto rescale_and_pack = [&]() {
#pragma unroll
    for (int i = 0; i < HEAD_DIM / 2; ++i) o[i] *= alpha[(i / 2) % 2];
#pragma unroll
    for (int kk = 0; kk < TILE_N / 16; ++kk) {
#pragma unroll
      for (int x = 0; x < 4; ++x) {
        pa[kk][x] = pack2<DTYPE>(s[flash_sm90::a_fragment_accumulator(kk, x, 0)],
                                 s[flash_sm90::a_fragment_accumulator(kk, x, 1)]);
      }
    }
  };
  auto release = [&](unsigned long long* bar) {
    if (lane == 0) sm90::mbarrier_arrive(bar);
  };

  if (my_tiles > 0) {
    sm90::mbarrier_wait(q_full, 0);
    sm90::mbarrier_wait(&k_full[0], 0);
    issue_scores(0);
    sm90::wgmma_wait<0>();
    release(&k_empty[0]);
    softmax(0);
    rescale_and_pack();
    for (int n = 1; n < my_tiles; ++n) {
      const int s_now = n % STAGES, s_prev = (n - 1) % STAGES;
      sm90::mbarrier_wait(&k_full[s_now], (n / STAGES) & 1);
      issue_scores(n);
      sm90::mbarrier_wait(&v_full[s_prev], ((n - 1) / STAGES) & 1);
      issue_values(n - 1);
      sm90::wgmma_wait<1>();  // S_n done (groups complete in order); P V may still run
      release(&k_empty[s_now]);
      softmax(n);
      sm90::wgmma_wait<0>();  // O += P_{n-1} V_{n-1} done: O and P may be rewritten
      release(&v_empty[s_prev]);
      rescale_and_pack();
    }
    const int last = my_tiles - 1;
    sm90::mbarrier_wait(&v_full[last % STAGES], (last / STAGES) & 1);
    issue_values(last);
    sm90::wgmma_wait<0>();
    release(&v_empty[last % STAGES]);
  }
  // Tiles the CTA loads for another warpgroup's rows: pass their barriers so the producer's
  // accounting (every consumer warp releases every tile) holds.
  for (int n = my_tiles; n < n_tiles; ++n) {
    const int st = n % STAGES;
    const unsigned int parity = (n / STAGES) & 1;
    sm90::mbarrier_wait(&k_full[st], parity);
    release(&k_empty[st]);
    sm90::mbarrier_wait(&v_full[st], parity);
    release(&v_empty[st]);
  }

  // Normalise and store this thread's two rows straight from registers (4 bytes per column pair).
  const long long row_stride = (long long)p.num_q_heads * HEAD_DIM;
  unsigned short* out =
      static_cast<unsigned short*>(p.out) + q_begin * row_stride + q_head * HEAD_DIM;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    row_sum[h] += __shfl_xor_sync(0xffffffffu, row_sum[h], 1);
    row_sum[h] += __shfl_xor_sync(0xffffffffu, row_sum[h], 2);
    const int row = row0 + 8 * h;
    if (row >= q_len) continue;
    const float inv = row_sum[h] > 0.0f ? 1.0f / row_sum[h] : 0.0f;  // no key: zeros
    unsigned short* out_row = out + row * row_stride;
#pragma unroll
    for (int j = 0; j < HEAD_DIM / 8; ++j) {
      const int i = 4 * j + 2 * h;  // registers i, i + 1: row `row`, adjacent columns
      *reinterpret_cast<unsigned int*>(out_row + flash_sm90::accumulator_column(tid, i)) =
          pack2<DTYPE>(o[i] * inv, o[i + 1] * inv);
    }
    if (p.lse != nullptr && lane % 4 == 0) {
      const float kLn2 = 0.69314718055994531f;
      p.lse[(long long)(q_begin + row) * p.num_q_heads + q_head] =
          row_sum[h] > 0.0f ? (row_max[h] * p.scale_log2 + log2f(row_sum[h])) * kLn2 : kNegInf;
    }
  }
}

}  // namespace attn
