// blocksparse.mma: block-sparse varlen attention (seed 003's semantics) on the sm_80-class
// tensor-core path: mma.sync m16n8k16, ldmatrix, cp.async. Runs on Ampere and on Hopper.
//
// Computes, for every sequence s (cu_seqlens), new token i at position p = context + i
// (context = kv_len - q_len) and q head h (kv head h / group),
//   out[s, i, h] = softmax_j(scale * q[s, i, h] . k[s, j, h / group]) v[s, j, h / group]
// over the keys j that workloads/visibility's key_visible admits: the layout of q head h keeps
// block (p / block_size, j / block_size), and with causal j <= p (bottom-right aligned), else
// j < kv_len. A row that sees no key writes zeros.
//
// Layout: Q and out [total_q, num_q_heads, head_dim]; K and V contiguous [total_kv, num_kv_heads,
// head_dim] (gathered from the paged pool once, outside the timing). The block layout is CSR per q
// head: crow [num_q_heads, num_blocks + 1], col [num_q_heads, max_nnz].
//
// Work decomposition (grid = query tiles of all sequences, q heads):
// - A CTA owns TILE_M positions of one sequence and one q head. Tiles are aligned to absolute
//   positions (a chunk after a context reads the block rows of the positions it occupies, as seed
//   003 does), and TILE_M divides block_size, so a tile lies in one block row of the layout: its
//   kept key blocks are that row's CSR entries, walked TILE_N keys at a time (TILE_N divides
//   block_size, so a key tile is kept or dropped whole). Only the diagonal block needs an
//   element mask (causality, and the sequence's end); key tiles past the tile's last visible key
//   are never loaded. The host lists the (sequence, tile) pairs heaviest first.
// - Inside, it is flash_fwd.sm80_mma's loop: each warp owns TILE_M / WARPS rows and their
//   online-softmax state in registers; K and V tiles stream through STAGES cp.async buffers of
//   padded rows (ldmatrix without bank conflicts); P stays in registers as the A operand of P V;
//   a warp skips the products of a diagonal tile none of its rows can see.
//
// Tunables and why they exist:
//   TILE_M  query rows per CTA (the q block size): K/V bytes re-read per row vs CTAs to fill the
//           GPU; at most the layout's block
//   TILE_N  keys per pipeline stage (the kv block size): a layout block is walked as
//           block_size / TILE_N tiles; score registers and shared memory vs barriers per key
//   WARPS   TILE_M / WARPS rows per warp (16 or 32)
//   STAGES  cp.async pipeline depth: key tiles in flight while one is computed
#pragma once

#include "kernels/blocksparse/blocksparse_params.hpp"
#include "kernels/blocksparse/mma_traits.hpp"
#include "kernels/flash_fwd/sm80_mma.cuh"  // exp2_ftz, flash_fwd_gather_kv and the helpers

namespace attn {

template <int DTYPE, int HEAD_DIM, int TILE_M, int TILE_N, int WARPS, int STAGES, bool CAUSAL>
__global__ void __launch_bounds__(WARPS * 32, 1)
    blocksparse_mma_attention(const BlockSparseMmaParams p) {
  static_assert(
      blocksparse_mma::check(HEAD_DIM, TILE_M, TILE_N, WARPS, STAGES) == blocksparse_mma::kOk,
      "invalid blocksparse.mma config: see blocksparse_mma::check");
  constexpr int THREADS = flash_sm80::threads(WARPS);
  constexpr int ROW = flash_sm80::row_elements(HEAD_DIM);  // smem row, chunks swizzled, 16-bit
  constexpr int WARP_ROWS = flash_sm80::warp_rows(TILE_M, WARPS);
  constexpr int M_FRAGS = flash_sm80::m_frags(TILE_M, WARPS);
  constexpr bool Q_IN_REGS = flash_sm80::q_in_registers(HEAD_DIM, TILE_M, TILE_N, WARPS);
  constexpr int N_TILES = TILE_N / 8;     // n8 tiles of S per m16 fragment
  constexpr int D_TILES = HEAD_DIM / 8;   // n8 tiles of O per m16 fragment
  constexpr int K_STEPS = HEAD_DIM / 16;  // k16 steps of Q.K
  constexpr int CHUNKS = HEAD_DIM / 8;    // 16-byte chunks of a row
  constexpr int KV_TILE = TILE_N * ROW;   // one K or V buffer, elements
  const float kNegInf = -__int_as_float(0x7f800000);

  // Q [TILE_M][ROW], then [STAGES][K, V][TILE_N][ROW].
  extern __shared__ __align__(16) unsigned short smem[];
  unsigned short* q_tile = smem;
  unsigned short* kv_tiles = smem + TILE_M * ROW;

  const int seq = p.tiles[2 * blockIdx.x];
  const int pos0 = p.tiles[2 * blockIdx.x + 1] * TILE_M;  // position of the tile's row 0
  const int q_head = blockIdx.y, kv_head = q_head / p.group;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int q_begin = p.cu_seqlens_q[seq], q_len = p.cu_seqlens_q[seq + 1] - q_begin;
  const int kv_begin = p.cu_seqlens_kv[seq], kv_len = p.cu_seqlens_kv[seq + 1] - kv_begin;
  const int context = kv_len - q_len;  // positions [context, kv_len) are the new tokens
  // Row r of the tile is new token pos0 + r - context when context <= pos0 + r < kv_len.
  const int m0 = pos0 - context;  // query index of row 0 (negative: rows inside the context)

  // The first key no row of the tile sees, then the kept key tiles of the tile's block row.
  const int last_pos = min(pos0 + TILE_M, kv_len) - 1;
  const int key_limit = CAUSAL ? last_pos + 1 : kv_len;
  const int q_block = pos0 / p.block_size;
  const blocksparse_mma::TileWalk walk = blocksparse_mma::tile_walk(
      p.crow + (long long)q_head * (p.num_blocks + 1) + q_block,
      p.col + (long long)q_head * p.max_nnz, q_block, p.block_size, TILE_N, key_limit);
  const int n_tiles = walk.tiles;
  const int diagonal_key0 = q_block * p.block_size;  // tiles from here on may need the mask

  // This warp's positions [warp_pos0, warp_pos0 + WARP_ROWS). Keys from mask_from on are hidden
  // from at least one of its rows (causal, or past the sequence's end).
  const int warp_pos0 = pos0 + warp * WARP_ROWS;
  const int mask_from = CAUSAL ? min(kv_len, warp_pos0 + 1) : kv_len;
  const int warp_keys_end = CAUSAL ? warp_pos0 + WARP_ROWS : kv_len;  // no row sees past this
  const bool warp_has_rows = warp_pos0 + WARP_ROWS > context && warp_pos0 < kv_len;

  const long long q_row_stride = (long long)p.num_q_heads * HEAD_DIM;
  const long long kv_row_stride = (long long)p.num_kv_heads * HEAD_DIM;
  const unsigned short* q_src =
      static_cast<const unsigned short*>(p.q) + q_begin * q_row_stride + q_head * HEAD_DIM;
  const unsigned short* k_src =
      static_cast<const unsigned short*>(p.k) + kv_begin * kv_row_stride + kv_head * HEAD_DIM;
  const unsigned short* v_src =
      static_cast<const unsigned short*>(p.v) + kv_begin * kv_row_stride + kv_head * HEAD_DIM;

  // Copy pattern: thread t copies 16-byte chunk t % CHUNKS of rows t / CHUNKS + i * ROWS_PER_PASS.
  // Offsets within a sequence are 32-bit element counts (the host checks they fit). Rows outside
  // the new tokens and keys past the end are zero-filled without a read.
  constexpr int ROWS_PER_PASS = THREADS / CHUNKS;
  static_assert(THREADS % CHUNKS == 0, "copy pattern");
  const int copy_row = tid / CHUNKS, copy_col = (tid % CHUNKS) * 8;
  // Shared-memory rows as flash_fwd.sm80_mma's (flash_sm80::swizzled_chunk); pass i writes row
  // copy_row + i * ROWS_PER_PASS (flash_sm80::copy_address).
  const int copy_dst =
      copy_row * ROW + flash_sm80::swizzled_chunk(HEAD_DIM, copy_row, tid % CHUNKS) * 8;
  auto copy_address = [&](unsigned short* tile, int i) {
    return flash_sm80::copy_address<HEAD_DIM>(tile, copy_dst, i, ROWS_PER_PASS);
  };
  const int q_stride = p.num_q_heads * HEAD_DIM, kv_stride = p.num_kv_heads * HEAD_DIM;
#pragma unroll
  for (int i = 0; i < (TILE_M + ROWS_PER_PASS - 1) / ROWS_PER_PASS; ++i) {
    const int r = copy_row + i * ROWS_PER_PASS;
    if (TILE_M % ROWS_PER_PASS != 0 && r >= TILE_M) break;
    const bool valid = m0 + r >= 0 && m0 + r < q_len;
    cp_async_16(copy_address(q_tile, i), q_src + (valid ? (m0 + r) * q_stride : 0) + copy_col,
                valid);
  }
  cp_async_commit();
  const unsigned short* k_copy = k_src + copy_col;
  const unsigned short* v_copy = v_src + copy_col;
  auto load_kv = [&](int n, int stage) {
    unsigned short* k_dst = kv_tiles + stage * 2 * KV_TILE;
    unsigned short* v_dst = k_dst + KV_TILE;
    const int key0 = blocksparse_mma::tile_key0(walk, n, TILE_N);
#pragma unroll
    for (int i = 0; i < (TILE_N + ROWS_PER_PASS - 1) / ROWS_PER_PASS; ++i) {
      const int r = copy_row + i * ROWS_PER_PASS;
      if (TILE_N % ROWS_PER_PASS != 0 && r >= TILE_N) break;
      const int key = key0 + r;
      const bool valid = key < kv_len;
      const int at = valid ? key * kv_stride : 0;
      cp_async_16(copy_address(k_dst, i), k_copy + at, valid);
      cp_async_16(copy_address(v_dst, i), v_copy + at, valid);
    }
  };
  // Prologue: STAGES - 1 key tiles in flight. Every stage commits a group (possibly empty) so the
  // wait counts below stay exact.
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < n_tiles) load_kv(s, s);
    cp_async_commit();
  }

  // ldmatrix row addresses (lane l names row l % 8 of matrix l / 8).
  // Each row's index mod 8 is lane % 8; k16 step ks XORs 16 ks elements into the address.
  const int q_frag = (warp * WARP_ROWS + lane % 16) * ROW +
                     flash_sm80::swizzled_chunk(HEAD_DIM, lane, lane / 16) * 8;
  const int k_frag = ((lane / 16) * 8 + lane % 8) * ROW +
                     flash_sm80::swizzled_chunk(HEAD_DIM, lane, (lane / 8) % 2) * 8;
  const int v_frag = (lane % 16) * ROW + flash_sm80::swizzled_chunk(HEAD_DIM, lane, lane / 16) * 8;

  cp_async_wait<STAGES - 1>();  // Q landed (the key tiles may still be in flight)
  __syncthreads();
  unsigned int q_regs[Q_IN_REGS ? M_FRAGS : 1][Q_IN_REGS ? K_STEPS : 1][4];
  if constexpr (Q_IN_REGS) {
#pragma unroll
    for (int m = 0; m < M_FRAGS; ++m) {
#pragma unroll
      for (int ks = 0; ks < K_STEPS; ++ks)
        ldmatrix_x4(q_regs[m][ks],
                    flash_sm80::fragment_address<HEAD_DIM>(q_tile, q_frag, m * 16 * ROW, ks * 16));
    }
  }

  // Accumulator element e of n8 tile j of fragment m: row m * 16 + lane / 4 + 8 * (e / 2),
  // column j * 8 + 2 * (lane % 4) + e % 2 of the warp's block. Statistics per row r = 2m + e / 2.
  float o[M_FRAGS][D_TILES][4];
#pragma unroll
  for (int m = 0; m < M_FRAGS; ++m) {
#pragma unroll
    for (int d = 0; d < D_TILES; ++d) o[m][d][0] = o[m][d][1] = o[m][d][2] = o[m][d][3] = 0.0f;
  }
  float row_max[2 * M_FRAGS];  // raw scores (scale_log2 > 0 keeps the order)
  float row_sum[2 * M_FRAGS];  // this lane's columns only; summed over the quad at the end
#pragma unroll
  for (int r = 0; r < 2 * M_FRAGS; ++r) row_max[r] = kNegInf, row_sum[r] = 0.0f;

  for (int n = 0; n < n_tiles; ++n) {
    cp_async_wait<STAGES - 2>();
    __syncthreads();  // tile n visible to every warp; tile n - 1's buffer free
    if (n + STAGES - 1 < n_tiles) load_kv(n + STAGES - 1, (n + STAGES - 1) % STAGES);
    cp_async_commit();

    const int key0 = blocksparse_mma::tile_key0(walk, n, TILE_N);
    if (!warp_has_rows || key0 >= warp_keys_end) continue;  // no row of this warp sees the tile
    const unsigned short* k_tile = kv_tiles + (n % STAGES) * 2 * KV_TILE;
    const unsigned short* v_tile = k_tile + KV_TILE;

    // S = Q K^T: [WARP_ROWS x TILE_N] per warp; each K fragment serves every m16 fragment.
    float s[M_FRAGS][N_TILES][4];
#pragma unroll
    for (int m = 0; m < M_FRAGS; ++m) {
#pragma unroll
      for (int j = 0; j < N_TILES; ++j) s[m][j][0] = s[m][j][1] = s[m][j][2] = s[m][j][3] = 0.0f;
    }
    // Q from shared memory: at most two k16 steps unrolled, or the compiler hoists every step's
    // Q fragments at once and spills.
#pragma unroll(Q_IN_REGS ? K_STEPS : 2)
    for (int ks = 0; ks < K_STEPS; ++ks) {
      unsigned int a[M_FRAGS][4];  // Q's A fragments of this k16 step
#pragma unroll
      for (int m = 0; m < M_FRAGS; ++m) {
        if constexpr (Q_IN_REGS) {
#pragma unroll
          for (int x = 0; x < 4; ++x) a[m][x] = q_regs[m][ks][x];
        } else {
          ldmatrix_x4(
              a[m], flash_sm80::fragment_address<HEAD_DIM>(q_tile, q_frag, m * 16 * ROW, ks * 16));
        }
      }
#pragma unroll
      for (int pair = 0; pair < N_TILES / 2; ++pair) {
        unsigned int b[4];  // keys pair*16 .. +7 and +8 .. +15, dims ks*16 .. +15
        ldmatrix_x4(
            b, flash_sm80::fragment_address<HEAD_DIM>(k_tile, k_frag, pair * 16 * ROW, ks * 16));
#pragma unroll
        for (int m = 0; m < M_FRAGS; ++m) {
          mma_m16n8k16<DTYPE>(s[m][2 * pair], a[m], b[0], b[1]);
          mma_m16n8k16<DTYPE>(s[m][2 * pair + 1], a[m], b[2], b[3]);
        }
      }
    }

    // The element mask, only on diagonal-block tiles that reach a key hidden from some row of this
    // warp. Earlier kept blocks lie wholly before every row's position and inside the sequence.
    if (key0 >= diagonal_key0 && key0 + TILE_N > mask_from) {
#pragma unroll
      for (int m = 0; m < M_FRAGS; ++m) {
#pragma unroll
        for (int j = 0; j < N_TILES; ++j) {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int pos = warp_pos0 + m * 16 + lane / 4 + 8 * (e / 2);
            const int key = key0 + j * 8 + 2 * (lane % 4) + (e & 1);
            if (key >= kv_len || (CAUSAL && key > pos)) s[m][j][e] = kNegInf;
          }
        }
      }
    }

    // Online softmax: new row maxima, rescale the running state, P = 2^(S * scale_log2 - max).
#pragma unroll
    for (int m = 0; m < M_FRAGS; ++m) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = 2 * m + h;
        float tile_max = kNegInf;
#pragma unroll
        for (int j = 0; j < N_TILES; ++j)
          tile_max = fmaxf(tile_max, fmaxf(s[m][j][2 * h], s[m][j][2 * h + 1]));
        // The 4 lanes of a quad hold one row.
        tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
        tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 2));
        const float new_max = fmaxf(row_max[r], tile_max);
        // No visible key yet: a finite base, so that -inf - -inf never happens.
        const float base = new_max == kNegInf ? 0.0f : new_max * p.scale_log2;
        const float alpha = exp2_ftz(row_max[r] * p.scale_log2 - base);  // 0 while no key
        row_max[r] = new_max;
        float sum = 0.0f;
#pragma unroll
        for (int j = 0; j < N_TILES; ++j) {
          s[m][j][2 * h] = exp2_ftz(fmaf(s[m][j][2 * h], p.scale_log2, -base));
          s[m][j][2 * h + 1] = exp2_ftz(fmaf(s[m][j][2 * h + 1], p.scale_log2, -base));
          sum += s[m][j][2 * h] + s[m][j][2 * h + 1];
        }
        row_sum[r] = fmaf(row_sum[r], alpha, sum);
#pragma unroll
        for (int d = 0; d < D_TILES; ++d) {
          o[m][d][2 * h] *= alpha;
          o[m][d][2 * h + 1] *= alpha;
        }
      }
    }

    // O += P V: two n8 tiles of P make one k16 A fragment; V's B fragments come transposed.
#pragma unroll
    for (int kc = 0; kc < TILE_N / 16; ++kc) {
      unsigned int a[M_FRAGS][4];
#pragma unroll
      for (int m = 0; m < M_FRAGS; ++m) {
        a[m][0] = pack2<DTYPE>(s[m][2 * kc][0], s[m][2 * kc][1]);
        a[m][1] = pack2<DTYPE>(s[m][2 * kc][2], s[m][2 * kc][3]);
        a[m][2] = pack2<DTYPE>(s[m][2 * kc + 1][0], s[m][2 * kc + 1][1]);
        a[m][3] = pack2<DTYPE>(s[m][2 * kc + 1][2], s[m][2 * kc + 1][3]);
      }
#pragma unroll
      for (int dp = 0; dp < D_TILES / 2; ++dp) {
        unsigned int b[4];  // keys kc*16 .. +15, dims dp*16 .. +7 and +8 .. +15
        ldmatrix_x4_trans(
            b, flash_sm80::fragment_address<HEAD_DIM>(v_tile, v_frag, kc * 16 * ROW, dp * 16));
#pragma unroll
        for (int m = 0; m < M_FRAGS; ++m) {
          mma_m16n8k16<DTYPE>(o[m][2 * dp], a[m], b[0], b[1]);
          mma_m16n8k16<DTYPE>(o[m][2 * dp + 1], a[m], b[2], b[3]);
        }
      }
    }
  }
  cp_async_wait<0>();  // no copy may land in shared memory after the CTA exits
  if (!warp_has_rows) return;

    // Normalise, stage the warp's rows through its own Q rows (only this warp reads them), then
    // store 16 bytes per lane along each row of a new token.
#pragma unroll
  for (int m = 0; m < M_FRAGS; ++m) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = 2 * m + h;
      row_sum[r] += __shfl_xor_sync(0xffffffffu, row_sum[r], 1);
      row_sum[r] += __shfl_xor_sync(0xffffffffu, row_sum[r], 2);
      const float inv = row_sum[r] > 0.0f ? 1.0f / row_sum[r] : 0.0f;  // no key: zeros
      const int row = warp * WARP_ROWS + m * 16 + lane / 4 + 8 * h;    // in the CTA's tile
      __syncwarp();  // every lane's last ldmatrix of Q done before the rows are overwritten
#pragma unroll
      for (int d = 0; d < D_TILES; ++d) {
        *reinterpret_cast<unsigned int*>(
            q_tile + row * ROW + flash_sm80::swizzled_chunk(HEAD_DIM, row, d) * 8 +
            2 * (lane % 4)) = pack2<DTYPE>(o[m][d][2 * h] * inv, o[m][d][2 * h + 1] * inv);
      }
    }
  }
  __syncwarp();
  unsigned short* out =
      static_cast<unsigned short*>(p.out) + q_begin * q_row_stride + q_head * HEAD_DIM;
#pragma unroll
  for (int i = 0; i < WARP_ROWS * CHUNKS / 32; ++i) {
    const int c = lane + i * 32;
    const int r = warp * WARP_ROWS + c / CHUNKS, col = (c % CHUNKS) * 8;
    if (m0 + r >= 0 && m0 + r < q_len) {
      *reinterpret_cast<uint4*>(out + (m0 + r) * q_stride + col) = *reinterpret_cast<const uint4*>(
          q_tile + r * ROW + flash_sm80::swizzled_chunk(HEAD_DIM, r, c % CHUNKS) * 8);
    }
  }
}

}  // namespace attn
