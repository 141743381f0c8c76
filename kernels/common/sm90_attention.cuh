// The consumer side of the FlashAttention-3 style Hopper kernels (flash_fwd.sm90_wgmma,
// prefix_prefill.sm90_wgmma, blocksparse.sm90_wgmma): one consumer warpgroup's 64 query rows
// against a stream of key tiles that a producer warpgroup loads into STAGES shared-memory buffers
// with TMA. What differs between the kernels (where the keys come from, which keys a row sees,
// where the output goes) stays in the kernels; this is the part that is the same math.
//
// Per key tile n a consumer issues S_n = Q K_n^T (wgmma SS, both operands in shared memory), then
// O += P_{n-1} V_{n-1} (wgmma RS: P from registers as the A operand, V from shared memory through
// a transposed descriptor), waits for S_n only, and runs the masking and online softmax of S_n
// while P V runs on the tensor cores (FA3's intra-warpgroup overlap); then waits for P V, rescales
// O and converts S_n into the next P. Two consumer warpgroups of one CTA also alternate their
// issue slots (IssueTurns, below: FA3's inter-warpgroup ping-pong).
//
// Layouts (kernels/common/sm90_attention_traits.hpp): Q [BLOCKS][TILE_M][64] and each K stage
// [BLOCKS][TILE_N][64] (BLOCKS = column_blocks(HEAD_DIM): whole 64-column blocks, the last one
// zero-filled past the row at head dims 80 and 96), each V stage likewise over V_DIM (V's width:
// HEAD_DIM, or 128 beside a HEAD_DIM of 192), as TMA writes them with the 128-byte swizzle. Q and
// K are K-major operands (SBO 1024), stepped over the real HEAD_DIM / 16 k16 steps; V is the
// MN-major B of P V (LBO TILE_N x 128, SBO 1024), one wgmma of N = V_DIM per k16 step (at 80 and
// 96 N reaches into the second column block's swizzle atom as far as the real dims). With
// INTERLEAVED (prefix_prefill's page boxes) K and V stages are [TILE_N / 8][BLOCKS][8][64]
// instead: SBO is one 8-key group of every column block, V's LBO one swizzle atom.
//
// Barriers: K and V of each stage have a full barrier (the producer's TMA bytes) and an empty one
// (one arrival per consumer warp once its wgmmas reading the buffer are done). A consumer releases
// every tile the producer loads, including the tiles its own rows do not need.
//
// Logits: S * scale_log2 in the log2 domain, or with a soft-cap (cap_log2 > 0) cap_log2 *
// tanh(S * score_scale), where the host passes softmax_scale / cap as the score scale. Keys the
// kernel's mask hides become -inf after the cap (tanh(-inf) would be finite).
#pragma once

#include "kernels/common/convert.cuh"
#include "kernels/common/fast_math.cuh"
#include "kernels/common/shared_access.cuh"
#include "kernels/common/sm90.cuh"
#include "kernels/common/sm90_attention_traits.hpp"

namespace attn {
namespace sm90_attention {

constexpr int kNoLimit = 0x7fffffff;
// The named barriers (bar.sync ids) of Consumer::convert_q: this one plus the consumer's
// warpgroup (1 or 2). IssueTurns takes ids 1 to 3.
constexpr int kQConvertBarrier = 4;

// The pipeline buffers a consumer reads: STAGES K and V tiles of kv_tile_bytes each, and their
// barriers.
struct KvPipeline {
  const unsigned char* k_tiles;
  const unsigned char* v_tiles;
  unsigned long long* k_full;
  unsigned long long* k_empty;
  unsigned long long* v_full;
  unsigned long long* v_empty;
};

// The producer side for contiguous K and V (3-D tensor maps (dims, kv heads, rows), the row
// innermost: a box's columns past the row are zero-filled without a read): key tile n into stage
// n % STAGES, each of K and V once every consumer warp released the tile the stage held before (a
// fresh empty barrier passes parity 1). The tile is PIECES runs of TILE_N / PIECES rows each (the
// maps' box height), run p from row rows[p] (blocksparse.sm90_wgmma gathers two kept blocks into
// one tile; the others load TILE_N consecutive rows as one piece), of kv head `kv_head`, as
// column_blocks(HEAD_DIM) boxes per run for K and column_blocks(V_DIM) for V. One thread calls it.
template <int HEAD_DIM, int TILE_N, int STAGES, int PIECES, int V_DIM = HEAD_DIM>
__device__ __forceinline__ void load_kv_tile_pieces(unsigned char* k_tiles, unsigned char* v_tiles,
                                                    const KvPipeline& kv,
                                                    const TensorMapBytes* k_map,
                                                    const TensorMapBytes* v_map, int n, int kv_head,
                                                    const int (&rows)[PIECES]) {
  constexpr int K_BYTES = kv_tile_bytes(HEAD_DIM, TILE_N);
  constexpr int V_BYTES = kv_tile_bytes(V_DIM, TILE_N);
  constexpr int KV_BLOCK = TILE_N * kBlockRowBytes;          // one 64-column block of a tile
  constexpr int PIECE = (TILE_N / PIECES) * kBlockRowBytes;  // one run of one column block
  static_assert(TILE_N % (8 * PIECES) == 0, "whole 8-row swizzle atoms per piece");
  const int s = n % STAGES;
  const unsigned int parity = ((n / STAGES) & 1) ^ 1;
  sm90::mbarrier_wait(&kv.k_empty[s], parity);
  sm90::mbarrier_expect_bytes(&kv.k_full[s], K_BYTES);  // zero fill counts
#pragma unroll
  for (int c = 0; c < column_blocks(HEAD_DIM); ++c) {
#pragma unroll
    for (int q = 0; q < PIECES; ++q) {
      sm90::tma_load_3d(k_tiles + s * K_BYTES + c * KV_BLOCK + q * PIECE, k_map, c * 64, kv_head,
                        rows[q], &kv.k_full[s]);
    }
  }
  sm90::mbarrier_wait(&kv.v_empty[s], parity);
  sm90::mbarrier_expect_bytes(&kv.v_full[s], V_BYTES);
#pragma unroll
  for (int c = 0; c < column_blocks(V_DIM); ++c) {
#pragma unroll
    for (int q = 0; q < PIECES; ++q) {
      sm90::tma_load_3d(v_tiles + s * V_BYTES + c * KV_BLOCK + q * PIECE, v_map, c * 64, kv_head,
                        rows[q], &kv.v_full[s]);
    }
  }
}

// Key tile n of TILE_N consecutive rows from `row` (boxes of TILE_N rows).
template <int HEAD_DIM, int TILE_N, int STAGES, int V_DIM = HEAD_DIM>
__device__ __forceinline__ void load_kv_tile_rows(unsigned char* k_tiles, unsigned char* v_tiles,
                                                  const KvPipeline& kv, const TensorMapBytes* k_map,
                                                  const TensorMapBytes* v_map, int n, int kv_head,
                                                  int row) {
  const int rows[1] = {row};
  load_kv_tile_pieces<HEAD_DIM, TILE_N, STAGES, 1, V_DIM>(k_tiles, v_tiles, kv, k_map, v_map, n,
                                                          kv_head, rows);
}

// Hides the scores of keys key0 + column with key >= key_end or key > the row's limit (limit0 for
// the thread's first row, limit1 for its second, 8 rows below). With PIECES > 1 only the columns
// of piece `piece` (TILE_N / PIECES consecutive columns, whose first key is key0) are touched.
template <int TILE_N, int PIECES = 1>
__device__ __forceinline__ void mask_scores(float (&s)[TILE_N / 2], int tid, int key0, int key_end,
                                            int limit0, int limit1, int piece = 0) {
  const float kNegInf = -__int_as_float(0x7f800000);
  constexpr int REGS = TILE_N / 2 / PIECES;  // a piece's registers: TILE_N / PIECES columns
#pragma unroll
  for (int j = 0; j < REGS; ++j) {
    const int i = piece * REGS + j;
    const int key = key0 + accumulator_column(tid, j);
    const int limit = (i / 2) % 2 == 0 ? limit0 : limit1;
    if (key >= key_end || key > limit) s[i] = kNegInf;
  }
}

// Ping-pong of two consumer warpgroups (FA3's inter-warpgroup overlap): their tensor-core issue
// slots alternate, so that one warpgroup's softmax runs while the other's matrix products occupy
// the tensor cores. Slot k of a warpgroup is the issue of S_k = Q K_k^T together with
// O += P_{k-1} V_{k-1} (slot 0: S_0 only; slot my_tiles: the last P V only). Named barrier 1 + w
// means "warpgroup w may issue" and counts 256 threads: w syncs on it, the warpgroup before it
// arrives on it once it has issued. Only the first `slots` slots alternate (the fewest tile count
// of the warpgroups, plus one), and the last warpgroup skips its last hand-over, so each barrier
// sees as many arrivals as syncs whatever the tile counts are. slots = 0: no ping-pong (one
// consumer). With `count` = 3 consumers (flash_fwd.sm90_wgmma at head_dim 64) the turns go round:
// 0, 1, 2, 0, ...
//
// Across the items of a persistent CTA (streaming): the last warpgroup also hands over its last
// slot, so warpgroup 0 may issue the next item's first S while the others still store the
// current item's output; that hand-over stands in for the next item's start(). `handed` says one
// is pending (an earlier item alternated); warpgroup 0 takes the last one with finish() when the
// CTA runs out of items.
struct IssueTurns {
  int me = 0;              // consumer warpgroup 0 .. count - 1
  int slots = 0;           // slots that alternate
  bool streaming = false;  // hand over across items
  bool handed = false;  // streaming: the last warpgroup handed over at the end of an earlier item
  int count = 2;        // consumer warpgroups taking turns
  __device__ __forceinline__ static void sync(int id) {
    asm volatile("bar.sync %0, 256;\n" ::"r"(id) : "memory");
  }
  __device__ __forceinline__ static void arrive(int id) {
    asm volatile("bar.arrive %0, 256;\n" ::"r"(id) : "memory");
  }
  // Warpgroup 0 issues first.
  __device__ __forceinline__ void start() const {
    if (slots > 0 && me == count - 1 && !handed) arrive(1);
  }
  __device__ __forceinline__ void take(int k) const {
    if (k < slots) sync(1 + me);
  }
  __device__ __forceinline__ void pass(int k) const {
    if (k < slots && (streaming || !(me == count - 1 && k == slots - 1)))
      arrive(1 + (me + 1 == count ? 0 : me + 1));
  }
  // Streaming: whether a hand-over is pending after this item.
  __device__ __forceinline__ bool handed_after() const { return handed || slots > 0; }
  // Streaming, no more items: warpgroup 0 takes the pending hand-over.
  __device__ __forceinline__ static void finish(int me, bool handed) {
    if (me == 0 && handed) sync(1);
  }
};

// The turns of a persistent CTA's consumer warpgroup `me` of `count`, item after item
// (streaming). Slots alternate while every warpgroup has key tiles: the fewest tile count plus
// one; none with one consumer or when any has no tiles (`other_tiles`: the fewest of the other
// warpgroups', 0 with one consumer).
struct TurnStream {
  int me = 0;
  bool handed = false;  // a hand-over from an earlier item is pending
  int count = 2;
  __device__ __forceinline__ IssueTurns next(int my_tiles, int other_tiles) {
    const IssueTurns turns{me, my_tiles > 0 && other_tiles > 0 ? min(my_tiles, other_tiles) + 1 : 0,
                           true, handed, count};
    handed = turns.handed_after();
    return turns;
  }
  // Item k's index from the CTA's work queue (sm90_persistent::ItemQueue) once announced; -1,
  // after taking the pending hand-over, when the CTA has no more items.
  template <class Queue>
  __device__ __forceinline__ int announced(const Queue& queue, int k) const {
    const int index = queue.announced(k);
    if (index < 0) IssueTurns::finish(me, handed);
    return index;
  }
};

// Where a consumer stands in a persistent CTA's stream of work items (kernels/common/
// sm90_persistent.cuh: prefix_prefill.sm90_wgmma, flash_fwd.sm90_wgmma, blocksparse.sm90_wgmma):
// item k of the CTA waits for its Q on phase k & 1 of q_full (q_parity); its key tile n is tile
// first_tile + n of the CTA's pipeline (stage and phase follow from that number, so the producer
// can fill the stages with the next item's tiles while this one ends); and each consumer thread
// arrives on q_empty once the last S = Q K^T of its rows is done (or at once when it has no rows),
// so the producer may load the next item's Q. The default is a CTA with one item.
struct ItemCursor {
  unsigned int q_parity = 0;
  int first_tile = 0;
  unsigned long long* q_empty = nullptr;
};

// Lazy rescaling (FlashAttention-4's observation; our own code; Consumer::LAZY_RESCALE says where):
// a row's reference maximum moves, and O and the row sum are rescaled, only when a tile's maximum
// exceeds it by more than kRescaleLog2 in the log2 domain, so most tiles skip the HEAD_DIM / 2
// multiplies of O per thread.
// The probabilities stay below 2^kRescaleLog2 = 256 (exact in bf16 and fp16 as any P is, and far
// from the fp32 sums' range); the output and the LSE are the same function of the sums and the
// reference as they were of the sums and the true maximum.
constexpr float kRescaleLog2 = 8.0f;

// INTERLEAVED: K and V tiles in the interleaved layout (sm90_attention_traits.hpp,
// interleaved_offset), else column-block-major. TENSOR_ROW_SUMS: the rows' sums of P come from
// the tensor cores, P V multiplying a column block of ones too (sm90_attention_traits.hpp,
// tensor_row_sums_fit; the kernel fills kOnesBytes of shared memory with ones and passes them to
// init). V_DIM: V's and O's width (HEAD_DIM, or 128 beside a HEAD_DIM of 192).
// Q_DTYPE: the dtype Q arrives in and the output is written in, where the products run in DTYPE.
// They differ for a bf16 Q over an fp8 cache (prefix_prefill.sm90_wgmma): the cache's codes become
// fp16 in one instruction per pair, so the products run in fp16 and Q is converted to it
// (convert_q), each row with its own power-of-two factor and score scale.
template <int DTYPE, int HEAD_DIM, int TILE_M, int TILE_N, int STAGES, bool INTERLEAVED = false,
          bool TENSOR_ROW_SUMS = false, int V_DIM = HEAD_DIM, int Q_DTYPE = DTYPE>
struct Consumer {
  static constexpr bool Q_CONVERTED = Q_DTYPE != DTYPE;
  static_assert(!Q_CONVERTED || (Q_DTYPE == kDTypeBf16 && DTYPE == kDTypeFp16),
                "a converted Q: bf16 into fp16 products");
  static_assert(head_dims_allowed(HEAD_DIM, V_DIM), "head dims: see head_dims_allowed");
  static_assert(!TENSOR_ROW_SUMS ||
                    (tensor_row_sums_fit(HEAD_DIM) && V_DIM == HEAD_DIM && !INTERLEAVED),
                "row sums on the tensor cores: head dim 64, column-block-major V");
  static constexpr int K_BYTES = kv_tile_bytes(HEAD_DIM, TILE_N);
  static constexpr int V_BYTES = kv_tile_bytes(V_DIM, TILE_N);
  // O's registers: V_DIM / 2, and with TENSOR_ROW_SUMS the ones' 8 columns, whose registers
  // SUM_REGISTER + 2 h and + 1 hold row h's sum of P (every column of ones the same).
  static constexpr int O_REGISTERS = output_registers(V_DIM, TENSOR_ROW_SUMS);
  static constexpr int O_COLUMNS = 2 * O_REGISTERS;
  static constexpr int SUM_REGISTER = V_DIM / 2;
  // Lazy rescaling where O is large: measured on an H200 (BENCHMARKS.md, issue 8) it took d256
  // 4x4096 from 1002.06 / 1007.55 us to 957.26 / 956.50, and cost 2% to 7% at head dims 64 and
  // 128 (the vote and the branch outweigh 32 or 64 multiplies).
  static constexpr bool LAZY_RESCALE = V_DIM >= 256;

  // Accumulator register i of a 64 x N wgmma tile: row accumulator_row(tid, i), column
  // accumulator_column(tid, i). Statistics per row h = 0, 1 (rows l / 4 and l / 4 + 8 of the
  // warp's 16).
  float o[O_REGISTERS];
  float s[TILE_N / 2];              // scores of the tile being softmaxed, then its 2^(...)
  unsigned int pa[TILE_N / 16][4];  // P of the previous tile: A fragments of its k16 steps
  // The reference each row's exponents are taken against, in units of the scores the exponent
  // scales (raw without soft-cap): the row's largest score so far, or with LAZY_RESCALE at least
  // that less kRescaleLog2 / exp_scale, so P = 2^(S * exp_scale - reference) < 2^kRescaleLog2.
  float row_max[2];
  // This lane's columns only until reduce_row_sums(); with TENSOR_ROW_SUMS only from there on.
  float row_sum[2];
  float alpha[2];
  bool rescale;  // some row of the warp moved its reference on the last tile: O needs alpha
  // Per row h = 0, 1 where Q's rows were converted with their own factors, else one for both.
  static constexpr int SCALES = Q_CONVERTED ? 2 : 1;
  __device__ __forceinline__ static int scale_of(int h) { return Q_CONVERTED ? h : 0; }
  float score_scale[SCALES], cap_log2;
  float exp_scale[SCALES];  // what multiplies a score in the exponent: scale_log2, or 1 after a
                            // soft-cap
  int tid, lane;
  unsigned int ones_address;  // TENSOR_ROW_SUMS: the shared-memory address of the ones

  __device__ __forceinline__ void init(int thread, float scale, float cap,
                                       const unsigned char* ones = nullptr) {
    const float kNegInf = -__int_as_float(0x7f800000);
    tid = thread;
    lane = thread % 32;
    cap_log2 = cap;
    set_score_scale(scale);
    if constexpr (TENSOR_ROW_SUMS) ones_address = sm90::smem_address(ones);
#pragma unroll
    for (int i = 0; i < O_REGISTERS; ++i) o[i] = 0.0f;
    row_max[0] = row_max[1] = kNegInf;  // raw scores (exp_scale > 0 keeps the order)
    rescale = false;
    row_sum[0] = row_sum[1] = 0.0f;
  }

  // Every row's score scale from here on (an item's own, such as an fp8 cache's kv head's K scale
  // times the logits'): as init's `scale`, for the cap init was given.
  __device__ __forceinline__ void set_score_scale(float scale) {
#pragma unroll
    for (int h = 0; h < SCALES; ++h) {
      score_scale[h] = scale;
      exp_scale[h] = cap_log2 > 0.0f ? 1.0f : scale;
    }
  }

  // A new work item's statistics, while O may still accumulate the previous item's last P V
  // (flash_fwd.sm90_wgmma streams from one item into the next).
  __device__ __forceinline__ void reset_statistics() {
    const float kNegInf = -__int_as_float(0x7f800000);
    row_max[0] = row_max[1] = kNegInf;
    row_sum[0] = row_sum[1] = 0.0f;
  }
  // O = 0 once an item's output is stored, between softmax() and rescale_and_pack() (which then
  // leaves O alone).
  __device__ __forceinline__ void clear_output() {
#pragma unroll
    for (int i = 0; i < O_REGISTERS; ++i) o[i] = 0.0f;
    rescale = false;
  }

  // The first COLS / 2 registers of S (COLS: a multiple of 16 up to TILE_N): the accumulators of
  // the tile's first COLS keys (accumulator_column), the whole of S for COLS = TILE_N.
  template <int COLS>
  __device__ __forceinline__ float (&leading_scores())[COLS / 2] {
    static_assert(COLS % 16 == 0 && COLS <= TILE_N, "leading columns: whole k16 steps of S");
    return *reinterpret_cast<float(*)[COLS / 2]>(&s[0]);
  }

  // S = Q K^T: HEAD_DIM / 16 k16 steps (the real dims: 5 at 80, 6 at 96), the first overwriting S.
  // Each operand's descriptor is built once and advanced by a constant per step
  // (sm90::descriptor_advance). COLS < TILE_N: only the tile's first COLS keys (a tile whose later
  // keys every row of the warpgroup hides), into S's first COLS / 2 registers; the rest of S is
  // left as it was.
  template <int COLS = TILE_N>
  __device__ __forceinline__ void issue_scores(const unsigned char* q_rows,
                                               const unsigned char* k) {
    const unsigned long long q_desc = sm90::descriptor(q_rows);
    const unsigned long long k_desc =
        INTERLEAVED ? sm90::descriptor(k, 16, interleaved_group_bytes(HEAD_DIM))
                    : sm90::descriptor(k);
    sm90::wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < HEAD_DIM / 16; ++kk) {
      const unsigned int k_step =
          INTERLEAVED ? interleaved_k_step_offset(kk) : k_major_step_offset(kk, TILE_N);
      const unsigned long long q_step =
          sm90::descriptor_advance(q_desc, k_major_step_offset(kk, TILE_M));
      if constexpr (COLS == TILE_N) {
        sm90::wgmma_ss<DTYPE, TILE_N>(s, q_step, sm90::descriptor_advance(k_desc, k_step),
                                      kk > 0 ? 1 : 0);
      } else {
        sm90::wgmma_ss<DTYPE, COLS>(leading_scores<COLS>(), q_step,
                                    sm90::descriptor_advance(k_desc, k_step), kk > 0 ? 1 : 0);
      }
    }
    sm90::wgmma_commit();
  }

  // O += P V: TILE_N / 16 k16 steps over keys, V MN-major (transposed B). With
  // TENSOR_ROW_SUMS B is V and, as its second column block (LBO), the ones: every step reads the
  // same 16 rows of them (descriptor_advance_fixed_leading). COLS < TILE_N: only the tile's first
  // COLS keys (P of the rest is zero: issue_scores<COLS>).
  template <int COLS = TILE_N>
  __device__ __forceinline__ void issue_values(const unsigned char* v) {
    const unsigned long long v_desc =
        INTERLEAVED ? sm90::descriptor(v, kSwizzleAtomBytes, interleaved_group_bytes(V_DIM))
        : TENSOR_ROW_SUMS
            ? sm90::descriptor(v, ones_address - sm90::smem_address(v), kSwizzleAtomBytes)
            : sm90::descriptor(v, v_leading_bytes(TILE_N), kSwizzleAtomBytes);
    sm90::wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < COLS / 16; ++kk) {
      const unsigned int v_step =
          INTERLEAVED ? interleaved_v_step_offset(kk, V_DIM) : mn_major_step_offset(kk);
      sm90::wgmma_rs<DTYPE, O_COLUMNS, 1>(
          o, pa[kk],
          TENSOR_ROW_SUMS ? sm90::descriptor_advance_fixed_leading(v_desc, v_step)
                          : sm90::descriptor_advance(v_desc, v_step));
    }
    sm90::wgmma_commit();
  }

  // (Soft-cap,) mask tile n (mask(n, s)), update the row statistics and turn S into 2^(S *
  // exp_scale - max) in place; alpha rescales what O and the sums held before. COLS < TILE_N:
  // the tile's first COLS keys only (issue_scores<COLS>; mask gets those registers).
  template <int COLS = TILE_N, class Mask>
  __device__ __forceinline__ void softmax(int n, Mask& mask) {
    const float kNegInf = -__int_as_float(0x7f800000);
    if (cap_log2 > 0.0f) {
#pragma unroll
      for (int i = 0; i < COLS / 2; ++i)
        s[i] = cap_log2 * tanhf(s[i] * score_scale[scale_of((i / 2) % 2)]);
    }
    if constexpr (COLS == TILE_N) {
      mask(n, s);
    } else {
      mask(n, leading_scores<COLS>());
    }
    bool moved = false;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float tile_max = kNegInf;
#pragma unroll
      for (int j = 0; j < COLS / 8; ++j)
        tile_max = fmaxf(tile_max, fmaxf(s[4 * j + 2 * h], s[4 * j + 2 * h + 1]));
      // The 4 lanes of a quad hold one row.
      tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
      tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 2));
      // With LAZY_RESCALE the reference moves to the tile's maximum only when that exceeds it by
      // more than kRescaleLog2 (or on the row's first visible key); else on every new maximum.
      const bool move =
          !LAZY_RESCALE ||
          (row_max[h] == kNegInf ? tile_max != kNegInf
                                 : (tile_max - row_max[h]) * exp_scale[scale_of(h)] > kRescaleLog2);
      const float ref = move ? fmaxf(row_max[h], tile_max) : row_max[h];
      const float e = exp_scale[scale_of(h)];
      // No visible key yet: a finite base, so that -inf - -inf never happens.
      const float base = ref == kNegInf ? 0.0f : ref * e;
      alpha[h] = move ? exp2_ftz(row_max[h] * e - base) : 1.0f;  // 0 on the first key
      row_max[h] = ref;
      moved = moved || move;
      float sum = 0.0f;
#pragma unroll
      for (int j = 0; j < COLS / 8; ++j) {
        s[4 * j + 2 * h] = exp2_ftz(fmaf(s[4 * j + 2 * h], e, -base));
        s[4 * j + 2 * h + 1] = exp2_ftz(fmaf(s[4 * j + 2 * h + 1], e, -base));
        if constexpr (!TENSOR_ROW_SUMS) sum += s[4 * j + 2 * h] + s[4 * j + 2 * h + 1];
      }
      // With TENSOR_ROW_SUMS the sums are O's ones' columns, rescaled by alpha with O.
      if constexpr (!TENSOR_ROW_SUMS) row_sum[h] = fmaf(row_sum[h], alpha[h], sum);
    }
    rescale = !LAZY_RESCALE || __any_sync(0xffffffffu, moved);
  }

  // Rescale O by alpha and pack S into the A fragments of the next P V: accumulator registers
  // 8 kk .. 8 kk + 7 are keys 16 kk .. 16 kk + 15 in exactly the A-fragment order. COLS < TILE_N:
  // the tile's first COLS keys only (issue_values<COLS> reads no more).
  template <int COLS = TILE_N>
  __device__ __forceinline__ void rescale_and_pack() {
    if (rescale) {  // warp-uniform: some row of the warp moved its reference
#pragma unroll
      for (int i = 0; i < O_REGISTERS; ++i) o[i] *= alpha[(i / 2) % 2];
    }
#pragma unroll
    for (int kk = 0; kk < COLS / 16; ++kk) {
#pragma unroll
      for (int x = 0; x < 4; ++x) {
        pa[kk][x] =
            pack2<DTYPE>(s[a_fragment_accumulator(kk, x, 0)], s[a_fragment_accumulator(kk, x, 1)]);
      }
    }
  }

  // Two warpgroups' partial results for the same rows over different keys (flash_fwd.sm90_wgmma's
  // shared rows): save_partial writes this thread's O, references and unreduced sums to
  // `partial` (kPartialFloats x 128 floats, thread-major per value: conflict-free), and
  // merge_partial folds such a partial, written by the same thread index of another warpgroup
  // (the same rows and columns of the accumulator layout), into this one: both rescaled to the
  // larger reference, as split-KV merges.
  static constexpr int kPartialFloats = partial_floats(V_DIM, TENSOR_ROW_SUMS);
  __device__ __forceinline__ void save_partial(float* partial) const {
#pragma unroll
    for (int i = 0; i < O_REGISTERS; ++i) partial[i * 128 + tid] = o[i];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      partial[(O_REGISTERS + h) * 128 + tid] = row_max[h];
      if constexpr (!TENSOR_ROW_SUMS) partial[(O_REGISTERS + 2 + h) * 128 + tid] = row_sum[h];
    }
  }
  __device__ __forceinline__ void merge_partial(const float* partial) {
    const float kNegInf = -__int_as_float(0x7f800000);
    float mine[2], theirs[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float other_max = partial[(O_REGISTERS + h) * 128 + tid];
      const float ref = fmaxf(row_max[h], other_max);
      const float e = exp_scale[scale_of(h)];
      const float base = ref == kNegInf ? 0.0f : ref * e;  // no key on either side
      mine[h] = exp2_ftz(row_max[h] * e - base);
      theirs[h] = exp2_ftz(other_max * e - base);
      row_max[h] = ref;
      if constexpr (!TENSOR_ROW_SUMS)
        row_sum[h] = row_sum[h] * mine[h] + partial[(O_REGISTERS + 2 + h) * 128 + tid] * theirs[h];
    }
#pragma unroll
    for (int i = 0; i < O_REGISTERS; ++i)
      o[i] = o[i] * mine[(i / 2) % 2] + partial[i * 128 + tid] * theirs[(i / 2) % 2];
  }

  __device__ __forceinline__ void release(unsigned long long* bar) const {
    if (lane == 0) sm90::mbarrier_arrive(bar);
  }

  // Key tile n >= 1 of an item, tile t of the CTA's pipeline (stage t % STAGES): once K_n and
  // V_{n-1} have landed (and before_values(n - 1) ran), S_n = Q K_n^T and O += P_{n-1} V_{n-1} in
  // the warpgroup's issue slot n; S_n's softmax (mask(n, s)) while P V runs; then the next P.
  // after_scores() runs once S_n is done (a kernel releases Q after its rows' last S). COLS <
  // TILE_N: tile n's first COLS keys only (its last P V then issue_values<COLS>).
  template <int COLS = TILE_N, class Mask, class AfterScores, class BeforeValues>
  __device__ __forceinline__ void step(const KvPipeline& kv, const unsigned char* q_rows, int n,
                                       int t, const IssueTurns& turns, Mask& mask,
                                       AfterScores&& after_scores, BeforeValues&& before_values) {
    const int s_now = t % STAGES, s_prev = (t - 1) % STAGES;
    sm90::mbarrier_wait(&kv.k_full[s_now], unsigned(t / STAGES) & 1u);
    sm90::mbarrier_wait(&kv.v_full[s_prev], unsigned((t - 1) / STAGES) & 1u);
    before_values(n - 1);
    turns.take(n);
    issue_scores<COLS>(q_rows, kv.k_tiles + s_now * K_BYTES);
    issue_values(kv.v_tiles + s_prev * V_BYTES);
    turns.pass(n);
    sm90::wgmma_wait<1>();  // S_n done (groups complete in order); P V may still run
    release(&kv.k_empty[s_now]);
    after_scores();
    softmax<COLS>(n, mask);
    sm90::wgmma_wait<0>();  // O += P_{n-1} V_{n-1} done: O and P may be rewritten
    release(&kv.v_empty[s_prev]);
    rescale_and_pack<COLS>();
  }

  // The whole key loop: tiles 0 .. my_tiles - 1 for this warpgroup's rows (after Q landed on
  // q_full), then the barriers of the tiles up to n_tiles that the CTA loads for another
  // warpgroup's rows. mask(n, s) hides keys of tile n; before_values(n) runs once V_n has landed
  // and before the P V that reads it. turns: the ping-pong with the other consumer warpgroup; at:
  // the item's place in a persistent CTA (ItemCursor).
  template <class Mask, class BeforeValues>
  __device__ __forceinline__ void run(const KvPipeline& kv, const unsigned char* q_rows,
                                      unsigned long long* q_full, int my_tiles, int n_tiles,
                                      const IssueTurns& turns, Mask&& mask,
                                      BeforeValues&& before_values,
                                      const ItemCursor& at = ItemCursor{}) {
    auto stage = [&](int n) { return (at.first_tile + n) % STAGES; };
    auto phase = [&](int n) { return unsigned((at.first_tile + n) / STAGES) & 1u; };
    // Every consumer thread arrives on q_empty (its count is the consumer threads): each
    // thread's arrival releases its own reads of the buffer's item index, which the producer
    // rewrites for the buffer's next item.
    auto release_q = [&] { sm90::mbarrier_arrive(at.q_empty); };
    if (my_tiles == 0 && at.q_empty != nullptr) release_q();
    if (my_tiles > 0) {
      turns.start();
      sm90::mbarrier_wait(q_full, at.q_parity);
      if constexpr (Q_CONVERTED) convert_q(q_rows);
      sm90::mbarrier_wait(&kv.k_full[stage(0)], phase(0));
      turns.take(0);
      issue_scores(q_rows, kv.k_tiles + stage(0) * K_BYTES);
      turns.pass(0);
      sm90::wgmma_wait<0>();
      release(&kv.k_empty[stage(0)]);
      if (my_tiles == 1 && at.q_empty != nullptr) release_q();
      softmax(0, mask);
      rescale_and_pack();
      for (int n = 1; n < my_tiles; ++n) {
        step(
            kv, q_rows, n, at.first_tile + n, turns, mask,
            [&] {
              if (n == my_tiles - 1 && at.q_empty != nullptr) release_q();
            },
            before_values);
      }
      const int last = my_tiles - 1;
      sm90::mbarrier_wait(&kv.v_full[stage(last)], phase(last));
      before_values(last);
      turns.take(my_tiles);
      issue_values(kv.v_tiles + stage(last) * V_BYTES);
      turns.pass(my_tiles);
      sm90::wgmma_wait<0>();
      release(&kv.v_empty[stage(last)]);
    }
    // Tiles the CTA loads for another warpgroup's rows: pass their barriers so the producer's
    // accounting (every consumer warp releases every tile) holds.
    for (int n = my_tiles; n < n_tiles; ++n) {
      const int st = stage(n);
      const unsigned int parity = phase(n);
      sm90::mbarrier_wait(&kv.k_full[st], parity);
      release(&kv.k_empty[st]);
      sm90::mbarrier_wait(&kv.v_full[st], parity);
      release(&kv.v_empty[st]);
    }
  }

  // Q_CONVERTED: this warpgroup's 64 rows of Q (q_rows: its first row in every column block, the
  // blocks TILE_M rows apart, laid out as TMA's 128-byte swizzle writes them), landed as Q_DTYPE,
  // converted in place to DTYPE, each row times its f16_row_factors' to_f16, the row's `back`
  // joining its score scales. A quad of lanes converts the two rows it holds in the accumulators
  // (rows accumulator_row, a quarter of each row's 16-byte chunks per lane, the zero padding of a
  // last column block included), so each factor lands where the softmax needs it. The writes are
  // fenced for wgmma (the async proxy) and a named barrier of the warpgroup orders them before
  // any of its warps reads Q.
  __device__ __forceinline__ void convert_q(const unsigned char* q_rows) {
    constexpr int CHUNKS = column_blocks(HEAD_DIM) * 8;  // 16-byte chunks of a row
    static_assert(CHUNKS % 4 == 0, "a quarter of a row's chunks per lane");
    const unsigned base = shared_address(q_rows);
    const int quarter = lane % 4;
    auto address = [&](int row, int chunk) {
      return base + (chunk / 8) * (TILE_M * kBlockRowBytes) + row * kBlockRowBytes +
             (((chunk % 8) ^ (row % 8)) << 4);
    };
    float most[2] = {0.0f, 0.0f};
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = accumulator_row(tid, 2 * h);
#pragma unroll
      for (int k = 0; k < CHUNKS / 4; ++k) {
        float v[8];
        unpack8<Q_DTYPE>(ld_shared_16(address(row, quarter + 4 * k)), v);
#pragma unroll
        for (int i = 0; i < 8; ++i) most[h] = fmaxf(most[h], fabsf(v[i]));
      }
      most[h] = fmaxf(most[h], __shfl_xor_sync(0xffffffffu, most[h], 1));
      most[h] = fmaxf(most[h], __shfl_xor_sync(0xffffffffu, most[h], 2));
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float to_f16, back;
      f16_row_factors(most[h], to_f16, back);
      const int row = accumulator_row(tid, 2 * h);
#pragma unroll
      for (int k = 0; k < CHUNKS / 4; ++k) {
        const unsigned at = address(row, quarter + 4 * k);
        float v[8];
        unpack8<Q_DTYPE>(ld_shared_16(at), v);
#pragma unroll
        for (int i = 0; i < 8; ++i) v[i] *= to_f16;
        st_shared_16(at, pack8<DTYPE>(v));
      }
      score_scale[scale_of(h)] *= back;
      if (cap_log2 <= 0.0f) exp_scale[scale_of(h)] *= back;
    }
    sm90::fence_proxy_async_shared();
    asm volatile("bar.sync %0, 128;\n" ::"r"(kQConvertBarrier + int(threadIdx.x / 128)) : "memory");
  }

  // Each lane summed its own columns; after this every lane of a quad holds its rows' totals.
  // With TENSOR_ROW_SUMS every lane holds them already, in O's ones' columns.
  __device__ __forceinline__ void reduce_row_sums() {
    if constexpr (TENSOR_ROW_SUMS) {
      row_sum[0] = o[SUM_REGISTER];
      row_sum[1] = o[SUM_REGISTER + 2];
      return;
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      row_sum[h] += __shfl_xor_sync(0xffffffffu, row_sum[h], 1);
      row_sum[h] += __shfl_xor_sync(0xffffffffu, row_sum[h], 2);
    }
  }
  // Row h's largest logit in the log2 domain (the exponent the sums are relative to).
  __device__ __forceinline__ float max_log2(int h) const {
    return row_max[h] * exp_scale[scale_of(h)];
  }

  // Writes this thread's rows of O, row h times inv[h], as 16-bit values into a tile laid out as
  // Q is ([V_DIM / 64][64 rows][64], each column block `block_stride` bytes from the last,
  // 16-byte chunks XOR-swizzled by row % 8 as TMA's 128-byte swizzle writes them): 4 bytes per
  // column pair, and each warp's stores hit 32 different banks.
  __device__ __forceinline__ void stage_output(unsigned char* tile, int block_stride,
                                               const float (&inv)[2]) const {
#pragma unroll
    for (int j = 0; j < V_DIM / 8; ++j) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int i = 4 * j + 2 * h;  // registers i, i + 1: row h, adjacent columns
        const int row = accumulator_row(tid, i), column = accumulator_column(tid, i);
        const int chunk = (column % kBlockColumns) / 8;
        *reinterpret_cast<unsigned int*>(tile + (column / kBlockColumns) * block_stride +
                                         row * kBlockRowBytes + ((chunk ^ (row % 8)) * 16) +
                                         (column % 8) * 2) =
            pack2<Q_DTYPE>(o[i] * inv[h], o[i + 1] * inv[h]);
      }
    }
  }

  // One round of store_row's quad transpose: the lanes whose bit `lane_bit` is set swap their
  // v[s0], v[s1] for the partner lane's (bit clear) v[c0], v[c1].
  __device__ __forceinline__ static void quad_exchange(unsigned int (&v)[4], int lane_bit, bool set,
                                                       int s0, int s1, int c0, int c1) {
    const unsigned int a = __shfl_xor_sync(0xffffffffu, set ? v[s0] : v[c0], lane_bit);
    const unsigned int b = __shfl_xor_sync(0xffffffffu, set ? v[s1] : v[c1], lane_bit);
    if (set) {
      v[s0] = a;
      v[s1] = b;
    } else {
      v[c0] = a;
      v[c1] = b;
    }
  }

  // Writes row h of O times `inv` to out_row (V_DIM 16-bit elements) where `store`, 16 bytes
  // per lane: the four lanes of a quad hold one row, each two columns of every 8-column block
  // (accumulator layout), so a 4 x 4 transpose of packed column pairs over the quad (two rounds
  // of shuffles) gives each lane 8 consecutive columns of one block of every four. Every lane of
  // the warp calls it (the shuffles), `store` false where its row is not to be written. Measured
  // on an H200 (BENCHMARKS.md, flash_fwd, "16-byte output stores"): with 4-byte stores of the
  // fragments (a warp instruction: 16 bytes in each of 8 rows), storing the output twice took
  // flash_fwd d256 16x1024 from 239.47 to 291.46 us; 16-byte stores took it from 239.86 to
  // 219.46, d256 16x1024 causal 157.02 to 141.18, d128 16x1024 causal 165.57 to 154.51,
  // prefix_prefill's benchmark 298.34 to 293.12, blocksparse's 1395.50 to 1330.48.
  __device__ __forceinline__ void store_row(unsigned short* out_row, int h, float inv,
                                            bool store) const {
    const int q = lane % 4;
#pragma unroll
    for (int m = 0; m < V_DIM / 32; ++m) {
      unsigned int v[4];  // v[r]: this lane's column pair of block 4 m + r
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const int i = 4 * (4 * m + r) + 2 * h;
        v[r] = pack2<Q_DTYPE>(o[i] * inv, o[i + 1] * inv);
      }
      // Round 1 (lanes q, q ^ 1): transpose each 2 x 2 block of the quad's 4 x 4.
      quad_exchange(v, 1, q & 1, 0, 2, 1, 3);
      // Round 2 (lanes q, q ^ 2): swap the off-diagonal 2 x 2 blocks.
      quad_exchange(v, 2, q & 2, 0, 1, 2, 3);
      // v[r]: column pair r of block 4 m + q.
      if (store)
        *reinterpret_cast<uint4*>(out_row + 8 * (4 * m + q)) = make_uint4(v[0], v[1], v[2], v[3]);
    }
    // V_DIM 80: its last two 8-column blocks are no group of four; each lane stores its column
    // pair of them (4 bytes), the row's only columns not written 16 bytes at a time.
#pragma unroll
    for (int j = V_DIM / 32 * 4; j < V_DIM / 8; ++j) {
      const int i = 4 * j + 2 * h;
      if (store)
        *reinterpret_cast<unsigned int*>(out_row + 8 * j + 2 * q) =
            pack2<Q_DTYPE>(o[i] * inv, o[i + 1] * inv);
    }
  }
};

}  // namespace sm90_attention
}  // namespace attn
