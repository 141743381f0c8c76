// The FlashAttention-2 style loop of the sm_80-class tensor-core kernels (flash_fwd.sm80_mma,
// blocksparse.sm80_mma): one CTA's TILE_M query rows of one sequence and one q head against the key
// tiles its family lets them see, with mma.sync m16n8k16, ldmatrix and cp.async. Runs on Ampere
// and on Hopper. What differs between the kernels stays in them: which key tiles the CTA visits
// (all of the sequence's up to the causal limit, or a block-sparse layout row's kept blocks),
// which of those can hold a masked key, and whether the tile's rows may start before the
// sequence's first query (blocksparse aligns tiles to absolute positions); each kernel's KeyTiles
// class says them (below). Everything else, the part that is the same math, is here: a kernel is
// its config rule's static_assert and one call of sm80_attention::attend.
//
// Computes, for the tile's query rows i (query index m0 + r of its sequence) and the keys j the
// family's key tiles hold,
//   out[i, h] = softmax_j(scale * q[i, h] . k[j, h / group]) v[j, h / group]
//   lse[i, h] = log(sum_j exp(scale * q . k_j))            (natural log, optional)
// where a key is hidden when j >= kv_len or, with CAUSAL, j > i + (kv_len - q_len) (aligned to
// the bottom right). A row that sees no key writes zeros and lse = -inf.
//
// Layout: Q [total_q, num_q_heads, head_dim] and out [total_q, num_q_heads, v_head_dim]; K and V
// contiguous [total_kv, num_kv_heads, head_dim] and [total_kv, num_kv_heads, v_head_dim]
// (gathered from the paged pool once, outside the timing). v_head_dim is model.v_head_dim (at most
// head_dim), else head_dim.
//
// - Each of the WARPS warps owns TILE_M / WARPS rows (one or two m16 fragments) and keeps their
//   online-softmax state in registers: the fp32 output accumulator, row max and row sum. Q's A
//   fragments stay in registers when they fit (traits: q_in_registers).
// - K and V of one key tile (TILE_N rows) stream into one of STAGES shared-memory buffers with
//   cp.async while earlier tiles are computed. Rows are padded by 16 bytes (head_dim 64, 80, 96)
//   or, at head_dim 128, 192 and 256, their 16-byte chunks are XOR-swizzled by the row's index mod
//   8 (sm80_attention::swizzled_chunk): either way ldmatrix (K) and ldmatrix.trans (V) are
//   bank-conflict free, and with the swizzle every 128-byte line a copy writes is one aligned line
//   of shared memory. One barrier per key tile.
// - STAGES = 1 is a split pipeline instead (FlashAttention-2's: one K buffer and one V buffer,
//   two barriers per key tile, half the shared memory of two stages), with the second barrier
//   after the softmax: V_n loads while S_n = Q K_n^T and its softmax are computed, K_{n+1} while
//   P V_n is.
// - S = Q K^T per warp (fp32), then P = 2^(S * scale_log2 - max) in registers is the A operand of
//   O += P V: P never goes through shared memory.
// - The element mask runs only on tiles that reach a key hidden from some row of the warp (and
//   that the family says can hold one), and a warp skips the products of a tile none of its rows
//   can see.
//
// - KV_FP8 (flash_fwd.sm80_mma and blocksparse.sm80_mma over an fp8 cache): K and V are fp8
//   e4m3 codes ([total_kv, num_kv_heads, head_dim] bytes), times the kv head's scale (Params'
//   k_scale and v_scale, per kv head). The stages hold the codes as copied (plain rows, half the
//   bytes); once tile n has landed every thread converts its share into one 16-bit K and V tile
//   laid out as the stages of a 16-bit cache are (exact: every e4m3 value is a bf16 and an
//   fp16), and a second barrier publishes it, while the copies of the tiles after it fly. K's
//   scale folds into the logit scale, V's into the output's normaliser. The split pipeline
//   (STAGES 1) has no fp8 form.
//
// The kernels' shapes, shared memory and register model: kernels/common/sm80_attention_traits.hpp.
#pragma once

#include "kernels/common/convert.cuh"
#include "kernels/common/cp_async.cuh"
#include "kernels/common/fast_math.cuh"
#include "kernels/common/mma_sm80.cuh"
#include "kernels/common/sm80_attention_traits.hpp"

namespace attn {
namespace sm80_attention {

// KV_FP8: a tile of fp8 codes (plain rows of W codes, as copied) into a 16-bit tile of DTYPE laid
// out as the loop's K or V buffers (rows of row_elements(W), chunks swizzled where W is), by the
// CTA's threads, 16 codes a thread at a time.
template <int DTYPE, int W, int TILE_N, int THREADS>
__device__ __forceinline__ void convert_fp8_tile(const unsigned char* codes, unsigned short* tile,
                                                 int tid) {
  constexpr int CHUNKS = W / 16;  // 16-code units of a row
  constexpr int R = row_elements(W);
  for (int u = tid; u < TILE_N * CHUNKS; u += THREADS) {
    const int r = u / CHUNKS, c = 2 * (u % CHUNKS);  // row, its first 8-element chunk
    uint4 lo, hi;
    e4m3x16_to_16bit<DTYPE>(*reinterpret_cast<const uint4*>(codes + u * 16), lo, hi);
    *reinterpret_cast<uint4*>(tile + r * R + swizzled_chunk(W, r, c) * 8) = lo;
    *reinterpret_cast<uint4*>(tile + r * R + swizzled_chunk(W, r, c + 1) * 8) = hi;
  }
}

// What a kernel of the loop decides, as its KeyTiles class (flash_fwd.sm80_mma's
// flash_fwd::sm80_mma::DenseKeyTiles, blocksparse.sm80_mma's blocksparse::sm80_mma::KeyTiles):
//   static constexpr bool kRowsBeforeQueries: the tile's first rows may lie before the sequence's
//     first query (m0 < 0: rows inside the context); they load zeros and store nothing
//   static constexpr bool kConsecutive: key tile n holds keys n * TILE_N .. + TILE_N - 1
//   static constexpr bool kAdmitsSpills: the family's config rule admits a few spilled registers
//     where they measured fastest (flash_fwd.sm80_mma), or none (blocksparse.sm80_mma); Q K^T's
//     grouped k16 steps only where it does
//   static constexpr bool kTensorRowSums: P's row sums on the tensor cores where
//     sm80_attention::tensor_row_sums allows them (flash_fwd.sm80_mma), or always in the softmax
//     (blocksparse.sm80_mma, where they measured slower)
//   static KeyTiles of(const Params& p, int row0, int q_head, int q_len, int kv_len): the CTA's
//     key tiles, from its tile's first row row0 (the schedule's tile index x TILE_M)
//   static float* lse(const Params& p): where the log-sum-exp goes, or null
//   int m0: the sequence's query index of the tile's row 0
//   int count() const: the key tiles the CTA visits
//   int key0(int n) const: the first key (sequence-local) of tile n < count() (not asked when
//     kConsecutive)
//   bool may_mask(int key0) const: whether the tile at key0 can hold a key the element mask hides
//     (asked only of tiles that reach a warp's first hidden key)
//
// Params is the kernel's parameter struct; the loop reads these fields of it, which both kernels'
// structs name alike: q, k, v, out, cu_seqlens_q, cu_seqlens_kv, tiles ([num_tiles][2]: the
// (sequence, query tile) of each CTA column, heaviest first), num_q_heads, num_kv_heads, group and
// scale_log2.
//
// V_HEAD_DIM: the width of V's rows and of the output's (model.v_head_dim), at most HEAD_DIM (the
// output is staged in Q's rows); P V and the accumulator run over it. Where it equals HEAD_DIM
// the K and V copies share one pattern and one loop, as they always did.
template <int DTYPE, int HEAD_DIM, int V_HEAD_DIM, int TILE_M, int TILE_N, int WARPS, int STAGES,
          bool CAUSAL, class KeyTiles, bool KV_FP8 = false, class Params>
__device__ __forceinline__ void attend(const Params& p) {
  static_assert(V_HEAD_DIM <= HEAD_DIM && V_HEAD_DIM % 16 == 0 && HEAD_DIM % 16 == 0,
                "V's rows are staged in Q's: at most head_dim, whole k16 steps");
  constexpr int THREADS = sm80_attention::threads(WARPS);
  constexpr int ROW = sm80_attention::row_elements(HEAD_DIM);      // Q, K smem row, 16-bit elements
  constexpr int V_ROW = sm80_attention::row_elements(V_HEAD_DIM);  // V smem row
  constexpr bool SAME_V = V_HEAD_DIM == HEAD_DIM;
  constexpr int WARP_ROWS = sm80_attention::warp_rows(TILE_M, WARPS);
  constexpr int M_FRAGS = sm80_attention::m_frags(TILE_M, WARPS);
  constexpr bool Q_IN_REGS =
      sm80_attention::q_in_registers(HEAD_DIM, V_HEAD_DIM, TILE_M, TILE_N, WARPS);
  constexpr int N_TILES = TILE_N / 8;                   // n8 tiles of S per m16 fragment
  constexpr int D_TILES = V_HEAD_DIM / 8;               // n8 tiles of O per m16 fragment
  constexpr int K_STEPS = HEAD_DIM / 16;                // k16 steps of Q.K
  constexpr int CHUNKS = HEAD_DIM / 8;                  // 16-byte chunks of a Q or K row
  constexpr int V_CHUNKS = V_HEAD_DIM / 8;              // of a V or output row
  constexpr int KV_TILE = TILE_N * ROW;                 // one K buffer, elements
  constexpr int STAGE_TILE = KV_TILE + TILE_N * V_ROW;  // one K and one V buffer
  constexpr bool SPLIT = STAGES == 1;                   // one K and one V buffer, loaded in turn
  static_assert(!KV_FP8 || !SPLIT, "fp8 K/V: the stage pipeline (stages 2 to 4)");
  // KV_FP8: one stage's codes, K [TILE_N][HEAD_DIM] then V [TILE_N][V_HEAD_DIM] bytes, in 16-bit
  // units; the converted tile (one K and one V buffer) follows the stages.
  constexpr int FP8_STAGE = TILE_N * (HEAD_DIM + V_HEAD_DIM) / 2;
  const float kNegInf = -__int_as_float(0x7f800000);

  // Q [TILE_M][ROW], then [STAGES][K [TILE_N][ROW], V [TILE_N][V_ROW]] (SPLIT: one K and one V
  // buffer); KV_FP8: [STAGES][FP8_STAGE], then one K and one V buffer of 16-bit values.
  extern __shared__ __align__(16) unsigned short smem[];
  unsigned short* q_tile = smem;
  unsigned short* kv_tiles = smem + TILE_M * ROW;
  unsigned short* converted = kv_tiles + STAGES * FP8_STAGE;  // KV_FP8 only

  // The CTA's tile (its first row: row0) of one sequence, and its q head.
  const int seq = p.tiles[2 * blockIdx.x], row0 = p.tiles[2 * blockIdx.x + 1] * TILE_M;
  const int q_head = blockIdx.y, kv_head = q_head / p.group;
  // The logit scale, times an fp8 cache's K scale; V's multiplies the output.
  float scale_log2 = p.scale_log2;
  float out_scale = 1.0f;
  if constexpr (KV_FP8) {
    scale_log2 *= p.k_scale[kv_head];
    out_scale = p.v_scale[kv_head];
  }
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int q_begin = p.cu_seqlens_q[seq], q_len = p.cu_seqlens_q[seq + 1] - q_begin;
  const int kv_begin = p.cu_seqlens_kv[seq], kv_len = p.cu_seqlens_kv[seq + 1] - kv_begin;
  const KeyTiles tiles = KeyTiles::of(p, row0, q_head, q_len, kv_len);
  const int m0 = tiles.m0, n_tiles = tiles.count();
  const int offset = kv_len - q_len;  // causal: query i sees keys j <= i + offset
  // Whether a row is one of the sequence's queries (i < q_len, and i >= 0 where the family's tiles
  // start before them) and the first key of key tile n (n * TILE_N for consecutive tiles) are
  // written out where they are asked, the family's constants folded at compile time. Through a
  // function, even a __forceinline__ one, the compiler kept the split pipeline's K/V copy
  // addresses and the row tests otherwise (12 registers fewer at head_dim 64, another schedule
  // from ptxas); written out, flash_fwd.sm80_mma's machine code is what it was before this loop
  // was shared.
  constexpr bool ROWS_BEFORE = KeyTiles::kRowsBeforeQueries;
  constexpr bool CONSECUTIVE = KeyTiles::kConsecutive;

  // This warp's rows [warp_row0, warp_row0 + WARP_ROWS) of the sequence's queries. Keys from
  // mask_from on are hidden from at least one of them (causal or past the end): tiles that reach
  // it are masked element by element, the others not at all.
  const int warp_row0 = m0 + warp * WARP_ROWS;
  const int mask_from = CAUSAL ? min(kv_len, warp_row0 + offset + 1) : kv_len;
  const int warp_keys_end = CAUSAL ? warp_row0 + WARP_ROWS + offset : kv_len;  // none past this
  const bool warp_has_rows = (!ROWS_BEFORE || warp_row0 + WARP_ROWS > 0) && warp_row0 < q_len;

  // The sequence's first row of this head in each tensor.
  const long long q_row_stride = (long long)p.num_q_heads * HEAD_DIM;
  const long long kv_row_stride = (long long)p.num_kv_heads * HEAD_DIM;
  const unsigned short* q_src =
      static_cast<const unsigned short*>(p.q) + q_begin * q_row_stride + q_head * HEAD_DIM;
  const unsigned short* k_src =
      static_cast<const unsigned short*>(p.k) + kv_begin * kv_row_stride + kv_head * HEAD_DIM;
  // SAME_V: K's own values, so the power-of-two widths compile to what they did.
  const long long v_row_stride = SAME_V ? kv_row_stride : (long long)p.num_kv_heads * V_HEAD_DIM;
  const unsigned short* v_src =
      static_cast<const unsigned short*>(p.v) + kv_begin * v_row_stride + kv_head * V_HEAD_DIM;

  // Copy pattern: thread t copies 16-byte chunk t % SLOTS of rows t / SLOTS + i * ROWS_PER_PASS,
  // SLOTS the row's chunks rounded up to a power of two (sm80_attention::copy_slots: at head dims
  // 64, 128 and 256 every thread copies; at 80, 96 and 192 the threads of the slots past the row's
  // chunks idle). Offsets within a sequence are 32-bit element counts (the host checks they fit),
  // so a row's address costs one multiply-add and few registers stay live across the key loop.
  // Rows that are not queries and keys past the sequence's end are zero-filled without a read:
  // finite, and masked or never stored.
  constexpr int SLOTS = sm80_attention::copy_slots(HEAD_DIM);
  constexpr int ROWS_PER_PASS = THREADS / SLOTS;
  static_assert(THREADS % SLOTS == 0, "copy pattern");
  const int copy_row = tid / SLOTS, copy_col = (tid % SLOTS) * 8;
  const bool copies = SLOTS == CHUNKS || tid % SLOTS < CHUNKS;  // not an idle slot
  // Pass i writes row copy_row + i * ROWS_PER_PASS (sm80_attention::copy_address).
  const int copy_dst =
      copy_row * ROW + sm80_attention::swizzled_chunk(HEAD_DIM, copy_row, tid % SLOTS) * 8;
  auto copy_address = [&](unsigned short* tile, int i) {
    return sm80_attention::copy_address<HEAD_DIM>(tile, copy_dst, i, ROWS_PER_PASS);
  };
  const int q_stride = p.num_q_heads * HEAD_DIM, kv_stride = p.num_kv_heads * HEAD_DIM;
  if (copies) {
#pragma unroll
    for (int i = 0; i < (TILE_M + ROWS_PER_PASS - 1) / ROWS_PER_PASS; ++i) {
      const int r = copy_row + i * ROWS_PER_PASS;
      if (TILE_M % ROWS_PER_PASS != 0 && r >= TILE_M) break;
      const bool valid = (!ROWS_BEFORE || m0 + r >= 0) && m0 + r < q_len;
      cp_async_16(copy_address(q_tile, i), q_src + (valid ? (m0 + r) * q_stride : 0) + copy_col,
                  valid);
    }
  }
  cp_async_commit();
  const unsigned short* k_copy = k_src + copy_col;
  // V's own copy pattern where its rows are narrower (SAME_V: K's).
  constexpr int V_SLOTS = sm80_attention::copy_slots(V_HEAD_DIM);
  constexpr int V_ROWS_PER_PASS = THREADS / V_SLOTS;
  static_assert(THREADS % V_SLOTS == 0, "copy pattern");
  const int v_copy_row = SAME_V ? copy_row : tid / V_SLOTS;
  const int v_copy_col = SAME_V ? copy_col : (tid % V_SLOTS) * 8;
  const bool v_copies = SAME_V ? copies : V_SLOTS == V_CHUNKS || tid % V_SLOTS < V_CHUNKS;
  const int v_copy_dst =
      SAME_V ? copy_dst
             : v_copy_row * V_ROW +
                   sm80_attention::swizzled_chunk(V_HEAD_DIM, v_copy_row, tid % V_SLOTS) * 8;
  const int v_stride = SAME_V ? kv_stride : p.num_kv_heads * V_HEAD_DIM;
  const unsigned short* v_copy = v_src + v_copy_col;
  // KV_FP8: the sequence's first code of this kv head (byte offsets are element offsets).
  const unsigned char* k_codes =
      static_cast<const unsigned char*>(p.k) + kv_begin * kv_row_stride + kv_head * HEAD_DIM;
  const unsigned char* v_codes =
      static_cast<const unsigned char*>(p.v) + kv_begin * v_row_stride + kv_head * V_HEAD_DIM;
  // Key tile n's K and/or V rows into stage `stage`'s buffers.
  auto load_tile = [&](int n, int stage, bool k, bool v) {
    if constexpr (KV_FP8) {
      // Plain rows of codes, 16 codes a copy; keys past the sequence zero-filled.
      constexpr int K_UNITS = TILE_N * (HEAD_DIM / 16), V_UNITS = TILE_N * (V_HEAD_DIM / 16);
      unsigned char* k_dst = reinterpret_cast<unsigned char*>(kv_tiles + stage * FP8_STAGE);
      unsigned char* v_dst = k_dst + TILE_N * HEAD_DIM;
      const int first = CONSECUTIVE ? n * TILE_N : tiles.key0(n);
#pragma unroll
      for (int i = 0; i < (K_UNITS + THREADS - 1) / THREADS; ++i) {
        const int u = tid + i * THREADS;
        if (K_UNITS % THREADS != 0 && u >= K_UNITS) break;
        const int key = first + u / (HEAD_DIM / 16);
        const bool valid = key < kv_len;
        cp_async_16(k_dst + u * 16,
                    k_codes + (valid ? key * kv_stride : 0) + (u % (HEAD_DIM / 16)) * 16, valid);
      }
#pragma unroll
      for (int i = 0; i < (V_UNITS + THREADS - 1) / THREADS; ++i) {
        const int u = tid + i * THREADS;
        if (V_UNITS % THREADS != 0 && u >= V_UNITS) break;
        const int key = first + u / (V_HEAD_DIM / 16);
        const bool valid = key < kv_len;
        const int v_key_stride = SAME_V ? kv_stride : p.num_kv_heads * V_HEAD_DIM;
        cp_async_16(v_dst + u * 16,
                    v_codes + (valid ? key * v_key_stride : 0) + (u % (V_HEAD_DIM / 16)) * 16,
                    valid);
      }
      return;
    }
    unsigned short* k_dst = kv_tiles + stage * STAGE_TILE;
    unsigned short* v_dst = k_dst + KV_TILE;
    // The tile's first key: from the family's walk once per tile (a load of the kept block's
    // column, which no pass may repeat: each copy is a volatile asm), or for consecutive tiles
    // n * TILE_N in each pass (computed once before the passes, it too changed the split
    // pipeline's addresses).
    const int walked_key0 = CONSECUTIVE ? 0 : tiles.key0(n);
    if constexpr (SAME_V) {
      if (!copies) return;
#pragma unroll
      for (int i = 0; i < (TILE_N + ROWS_PER_PASS - 1) / ROWS_PER_PASS; ++i) {
        const int r = copy_row + i * ROWS_PER_PASS;
        if (TILE_N % ROWS_PER_PASS != 0 && r >= TILE_N) break;
        const int key = (CONSECUTIVE ? n * TILE_N : walked_key0) + r;
        const bool valid = key < kv_len;
        const int at = valid ? key * kv_stride : 0;
        if (k) cp_async_16(copy_address(k_dst, i), k_copy + at, valid);
        if (v) cp_async_16(copy_address(v_dst, i), v_copy + at, valid);
      }
    } else {
      if (k && copies) {
#pragma unroll
        for (int i = 0; i < (TILE_N + ROWS_PER_PASS - 1) / ROWS_PER_PASS; ++i) {
          const int r = copy_row + i * ROWS_PER_PASS;
          if (TILE_N % ROWS_PER_PASS != 0 && r >= TILE_N) break;
          const int key = (CONSECUTIVE ? n * TILE_N : walked_key0) + r;
          const bool valid = key < kv_len;
          cp_async_16(copy_address(k_dst, i), k_copy + (valid ? key * kv_stride : 0), valid);
        }
      }
      if (v && v_copies) {
#pragma unroll
        for (int i = 0; i < (TILE_N + V_ROWS_PER_PASS - 1) / V_ROWS_PER_PASS; ++i) {
          const int r = v_copy_row + i * V_ROWS_PER_PASS;
          if (TILE_N % V_ROWS_PER_PASS != 0 && r >= TILE_N) break;
          const int key = (CONSECUTIVE ? n * TILE_N : walked_key0) + r;
          const bool valid = key < kv_len;
          cp_async_16(
              sm80_attention::copy_address<V_HEAD_DIM>(v_dst, v_copy_dst, i, V_ROWS_PER_PASS),
              v_copy + (valid ? key * v_stride : 0), valid);
        }
      }
    }
  };
  auto load_kv = [&](int n, int stage) { load_tile(n, stage, true, true); };
  // Prologue: STAGES - 1 key tiles in flight (SPLIT: K_0). Every stage commits a group (possibly
  // empty) so the wait counts below stay exact.
  if constexpr (SPLIT) {
    if (n_tiles > 0) load_tile(0, 0, true, false);
    cp_async_commit();
  }
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < n_tiles) load_kv(s, s);
    cp_async_commit();
  }

  // ldmatrix row addresses (lane l names row l % 8 of matrix l / 8) for k16 step 0, the chunk
  // placed by the row's index mod 8 (lane % 8); step ks is 16 ks elements on
  // (sm80_attention::fragment_address).
  const int q_frag = (warp * WARP_ROWS + lane % 16) * ROW +
                     sm80_attention::swizzled_chunk(HEAD_DIM, lane, lane / 16) * 8;
  const int k_frag = ((lane / 16) * 8 + lane % 8) * ROW +
                     sm80_attention::swizzled_chunk(HEAD_DIM, lane, (lane / 8) % 2) * 8;
  const int v_frag =
      (lane % 16) * V_ROW + sm80_attention::swizzled_chunk(V_HEAD_DIM, lane, lane / 16) * 8;
  // Q K^T walks its k16 steps four at a time (one 128-byte group) where that measured faster:
  // head_dim 128, swizzled (0.3% to 2.9% less time on an H200, flash_fwd.sm80_mma). There each
  // fragment's offsets for the four 16-element steps of a group are XORed once (steps[j]), so step
  // 4 g + j reads at steps[j] + rows + 64 g (an immediate) and no ldmatrix needs an XOR of its
  // own. At head_dim 256 the four steps' fragments spilled (476.70 -> 551.89 us at 16 x 1024):
  // there each read XORs its step in (sm80_attention::fragment_address). A family that admits no
  // spill reads step by step: the grouped offsets stay live across the key loop, and in
  // blocksparse.sm80_mma's 32-row warps ptxas spilled (16 bytes at 32 x 32 tiles over one warp, 32
  // at 128 x 32 over four with the row sums) and counted more instructions than without them (0.3%
  // to 1.1% at sm_90a; with the row sums 2464 against 2408).
  constexpr bool GROUPED_STEPS = sm80_attention::swizzled(HEAD_DIM) && !Q_IN_REGS &&
                                 HEAD_DIM == 128 && KeyTiles::kAdmitsSpills;
  // Otherwise, with Q from shared memory, the k16 steps of Q K^T unrolled QK_UNROLL at a time: at
  // head_dim 256 eight of its sixteen (all sixteen spilled 28 bytes), which measured on an H200
  // (BENCHMARKS.md, flash_fwd, "stacked heads"), against two: d256 16x1024
  // 466.24 / 465.02 / 465.25 -> 461.68 / 462.34 / 461.82 us, 4x4096 1722.88 / 1721.60 / 1722.93
  // -> 1708.50 / 1708.99 / 1708.21, 16x1024 causal 268.91 / 269.25 / 268.96 -> 265.44 / 265.57 /
  // 265.44 (four: 0.8% to 3% slower). ptxas spills 4 bytes in the causal default (a value
  // reloaded once per key tile; at two, the 32-row causal config spilled 4). Two elsewhere.
  constexpr int QK_UNROLL = Q_IN_REGS ? K_STEPS : HEAD_DIM == 256 ? 8 : 2;
  int q_steps[4], k_steps[4], v_steps[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    q_steps[j] = q_frag ^ (16 * j);
    k_steps[j] = k_frag ^ (16 * j);
    v_steps[j] = v_frag ^ (16 * j);
  }
  // Fragment `frag` of `tile`, `rows` elements (whole rows) on, at k16 step 4 g + j (j a constant
  // where GROUPED_STEPS).
  auto frag_at = [&](const unsigned short* tile, const int(&steps)[4], int frag, int rows, int g,
                     int j) {
    if constexpr (GROUPED_STEPS) {
      return tile + steps[j] + rows + 64 * g;
    } else {
      return sm80_attention::fragment_address<HEAD_DIM>(tile, frag, rows, 16 * (4 * g + j));
    }
  };

  cp_async_wait<SPLIT ? 1 : STAGES - 1>();  // Q landed (the key tiles may still be in flight)
  __syncthreads();
  unsigned int q_regs[Q_IN_REGS ? M_FRAGS : 1][Q_IN_REGS ? K_STEPS : 1][4];
  if constexpr (Q_IN_REGS) {
#pragma unroll
    for (int m = 0; m < M_FRAGS; ++m) {
#pragma unroll
      for (int ks = 0; ks < K_STEPS; ++ks)
        ldmatrix_x4(q_regs[m][ks], frag_at(q_tile, q_steps, q_frag, m * 16 * ROW, ks / 4, ks % 4));
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
  // Row sums on the tensor cores (sm80_attention::tensor_row_sums): P times an n8 tile of ones, one
  // more mma per k16 step of P V, gives every column of sums[m] the rows' sums of P; element 0
  // (row lane / 4) and element 2 (row lane / 4 + 8) are rescaled with O and read at the end, and
  // the softmax adds no sums of its own.
  constexpr bool ROW_SUMS =
      KeyTiles::kTensorRowSums && sm80_attention::tensor_row_sums(V_HEAD_DIM, WARPS);
  constexpr unsigned int ones = packed_ones<DTYPE>();
  float sums[M_FRAGS][4];
#pragma unroll
  for (int m = 0; m < M_FRAGS; ++m) sums[m][0] = sums[m][1] = sums[m][2] = sums[m][3] = 0.0f;

  for (int n = 0; n < n_tiles; ++n) {
    if constexpr (SPLIT) {
      cp_async_wait<0>();
      __syncthreads();  // K_n visible to every warp; every warp done with V_{n-1}
      load_tile(n, 0, false, true);
      cp_async_commit();
    } else {
      cp_async_wait<STAGES - 2>();
      __syncthreads();  // tile n visible to every warp; tile n - 1's buffer free
      if (n + STAGES - 1 < n_tiles) load_kv(n + STAGES - 1, (n + STAGES - 1) % STAGES);
      cp_async_commit();
    }
    if constexpr (KV_FP8) {
      // Tile n's codes into the 16-bit K and V buffers (every warp takes part, seeing the tile or
      // not), published by a second barrier; the barrier above kept them until every warp was
      // done with tile n - 1's.
      const unsigned char* k_stage =
          reinterpret_cast<const unsigned char*>(kv_tiles + (n % STAGES) * FP8_STAGE);
      convert_fp8_tile<DTYPE, HEAD_DIM, TILE_N, THREADS>(k_stage, converted, tid);
      convert_fp8_tile<DTYPE, V_HEAD_DIM, TILE_N, THREADS>(k_stage + TILE_N * HEAD_DIM,
                                                           converted + KV_TILE, tid);
      __syncthreads();
    }

    const int key0 = CONSECUTIVE ? n * TILE_N : tiles.key0(n);
    // No row of this warp sees the tile: skip its products (SPLIT: not the barrier below).
    const bool sees = warp_has_rows && key0 < warp_keys_end;
    if (!SPLIT && !sees) continue;
    const unsigned short* k_tile =
        KV_FP8 ? converted : kv_tiles + (SPLIT ? 0 : (n % STAGES) * STAGE_TILE);
    const unsigned short* v_tile = k_tile + KV_TILE;
    // SPLIT, after S_n and its softmax: V_n visible to every warp, every warp done with K_n,
    // K_{n+1} on its way.
    auto next_keys = [&] {
      if constexpr (SPLIT) {
        cp_async_wait<0>();
        __syncthreads();
        if (n + 1 < n_tiles) load_tile(n + 1, 0, true, false);
        cp_async_commit();
      }
    };
    if (SPLIT && !sees) {
      next_keys();
      continue;
    }

    // S = Q K^T: [WARP_ROWS x TILE_N] per warp; each K fragment serves every m16 fragment.
    float s[M_FRAGS][N_TILES][4];
#pragma unroll
    for (int m = 0; m < M_FRAGS; ++m) {
#pragma unroll
      for (int j = 0; j < N_TILES; ++j) s[m][j][0] = s[m][j][1] = s[m][j][2] = s[m][j][3] = 0.0f;
    }
    // One k16 step: 4 g + j (without GROUPED_STEPS: g 0, j the step).
    auto qk_step = [&](int g, int j) {
      const int ks = 4 * g + j;
      unsigned int a[M_FRAGS][4];  // Q's A fragments of this k16 step
#pragma unroll
      for (int m = 0; m < M_FRAGS; ++m) {
        if constexpr (Q_IN_REGS) {
#pragma unroll
          for (int x = 0; x < 4; ++x) a[m][x] = q_regs[m][ks][x];
        } else {
          ldmatrix_x4(a[m], frag_at(q_tile, q_steps, q_frag, m * 16 * ROW, g, j));
        }
      }
#pragma unroll
      for (int pair = 0; pair < N_TILES / 2; ++pair) {
        unsigned int b[4];  // keys pair*16 .. +7 and +8 .. +15, dims ks*16 .. +15
        ldmatrix_x4(b, frag_at(k_tile, k_steps, k_frag, pair * 16 * ROW, g, j));
#pragma unroll
        for (int m = 0; m < M_FRAGS; ++m) {
          mma_m16n8k16<DTYPE>(s[m][2 * pair], a[m], b[0], b[1]);
          mma_m16n8k16<DTYPE>(s[m][2 * pair + 1], a[m], b[2], b[3]);
        }
      }
    };
    if constexpr (GROUPED_STEPS) {
      // A 128-byte group's four steps unrolled (each at an immediate from its group's offsets).
#pragma unroll 1
      for (int g = 0; g < K_STEPS / 4; ++g) {
#pragma unroll
        for (int j = 0; j < 4; ++j) qk_step(g, j);
      }
    } else {
      // Q from shared memory: QK_UNROLL k16 steps unrolled (fully, the compiler hoisted every
      // step's Q fragments at once and spilled).
#pragma unroll(QK_UNROLL)
      for (int ks = 0; ks < K_STEPS; ++ks) qk_step(0, ks);
    }

    // The mask, only on tiles that reach a hidden key of some row of this warp (and that the
    // family's layout lets hold one).
    if (tiles.may_mask(key0) && key0 + TILE_N > mask_from) {
#pragma unroll
      for (int m = 0; m < M_FRAGS; ++m) {
#pragma unroll
        for (int j = 0; j < N_TILES; ++j) {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int row = warp_row0 + m * 16 + lane / 4 + 8 * (e / 2);
            const int key = key0 + j * 8 + 2 * (lane % 4) + (e & 1);
            if (key >= kv_len || (CAUSAL && key > row + offset)) s[m][j][e] = kNegInf;
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
        const float base = new_max == kNegInf ? 0.0f : new_max * scale_log2;
        const float alpha = exp2_ftz(row_max[r] * scale_log2 - base);  // 0 while no key
        row_max[r] = new_max;
        float sum = 0.0f;
#pragma unroll
        for (int j = 0; j < N_TILES; ++j) {
          s[m][j][2 * h] = exp2_ftz(fmaf(s[m][j][2 * h], scale_log2, -base));
          s[m][j][2 * h + 1] = exp2_ftz(fmaf(s[m][j][2 * h + 1], scale_log2, -base));
          if constexpr (!ROW_SUMS) sum += s[m][j][2 * h] + s[m][j][2 * h + 1];
        }
        if constexpr (ROW_SUMS) {
          sums[m][2 * h] *= alpha;
        } else {
          row_sum[r] = fmaf(row_sum[r], alpha, sum);
        }
#pragma unroll
        for (int d = 0; d < D_TILES; ++d) {
          o[m][d][2 * h] *= alpha;
          o[m][d][2 * h + 1] *= alpha;
        }
      }
    }

    // SPLIT: the barrier after the softmax, not before it, so V_n has the softmax's time to land
    // and no warp waits there with its exponentials undone: 451.46 -> 423.86 us at head_dim 128,
    // 16 x 1024, 128 x 64 over 4 warps (H200, BENCHMARKS.md).
    next_keys();

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
        if constexpr (SAME_V) {
          ldmatrix_x4_trans(b, frag_at(v_tile, v_steps, v_frag, kc * 16 * ROW, dp / 4, dp % 4));
        } else {
          ldmatrix_x4_trans(b, sm80_attention::fragment_address<V_HEAD_DIM>(
                                   v_tile, v_frag, kc * 16 * V_ROW, 16 * dp));
        }
#pragma unroll
        for (int m = 0; m < M_FRAGS; ++m) {
          mma_m16n8k16<DTYPE>(o[m][2 * dp], a[m], b[0], b[1]);
          mma_m16n8k16<DTYPE>(o[m][2 * dp + 1], a[m], b[2], b[3]);
        }
      }
      if constexpr (ROW_SUMS) {
#pragma unroll
        for (int m = 0; m < M_FRAGS; ++m) mma_m16n8k16<DTYPE>(sums[m], a[m], ones, ones);
      }
    }
  }
  cp_async_wait<0>();  // no copy may land in shared memory after the CTA exits
  if (!warp_has_rows) return;

    // Normalise, stage the warp's rows through its own Q rows (only this warp reads them), then
    // store 16 bytes per lane along each row of a query.
#pragma unroll
  for (int m = 0; m < M_FRAGS; ++m) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = 2 * m + h;
      if constexpr (ROW_SUMS) {
        row_sum[r] = sums[m][2 * h];
      } else {
        row_sum[r] += __shfl_xor_sync(0xffffffffu, row_sum[r], 1);
        row_sum[r] += __shfl_xor_sync(0xffffffffu, row_sum[r], 2);
      }
      const float inv = row_sum[r] > 0.0f ? out_scale / row_sum[r] : 0.0f;  // no key: zeros
      const int row = warp * WARP_ROWS + m * 16 + lane / 4 + 8 * h;         // in the CTA's tile
      __syncwarp();  // every lane's last ldmatrix of Q done before the rows are overwritten
#pragma unroll
      for (int d = 0; d < D_TILES; ++d) {
        *reinterpret_cast<unsigned int*>(
            q_tile + row * ROW + sm80_attention::swizzled_chunk(V_HEAD_DIM, row, d) * 8 +
            2 * (lane % 4)) = pack2<DTYPE>(o[m][d][2 * h] * inv, o[m][d][2 * h + 1] * inv);
      }
      float* const lse = KeyTiles::lse(p);
      if (lse != nullptr && lane % 4 == 0 && (!ROWS_BEFORE || m0 + row >= 0) && m0 + row < q_len) {
        const float kLn2 = 0.69314718055994531f;
        lse[(long long)(q_begin + m0 + row) * p.num_q_heads + q_head] =
            row_sum[r] > 0.0f ? (row_max[r] * scale_log2 + log2f(row_sum[r])) * kLn2 : kNegInf;
      }
    }
  }
  __syncwarp();
  // The output's rows: V_HEAD_DIM wide ([total_q, num_q_heads, v_head_dim]).
  const long long o_row_stride = SAME_V ? q_row_stride : (long long)p.num_q_heads * V_HEAD_DIM;
  const int o_stride = SAME_V ? q_stride : p.num_q_heads * V_HEAD_DIM;
  unsigned short* out =
      static_cast<unsigned short*>(p.out) + q_begin * o_row_stride + q_head * V_HEAD_DIM;
#pragma unroll
  for (int i = 0; i < WARP_ROWS * V_CHUNKS / 32; ++i) {
    const int c = lane + i * 32;
    const int r = warp * WARP_ROWS + c / V_CHUNKS, col = (c % V_CHUNKS) * 8;
    if ((!ROWS_BEFORE || m0 + r >= 0) && m0 + r < q_len) {
      *reinterpret_cast<uint4*>(out + (m0 + r) * o_stride + col) = *reinterpret_cast<const uint4*>(
          q_tile + r * ROW + sm80_attention::swizzled_chunk(V_HEAD_DIM, r, c % V_CHUNKS) * 8);
    }
  }
}

}  // namespace sm80_attention
}  // namespace attn
