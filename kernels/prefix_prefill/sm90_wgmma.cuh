// prefix_prefill.sm90_wgmma: prefix prefill on Hopper (sm_90a), FlashAttention-3 style: TMA loads
// (or, for small pages, cp.async copies) completing on mbarriers, wgmma from shared memory, a
// producer warpgroup and one or two consumer warpgroups, each tile's softmax overlapped with the
// tensor cores. The consumers are those of
// flash_fwd.sm90_wgmma (kernels/common/sm90_attention.cuh, read that first); what differs is where
// the keys come from and which keys a row sees.
//
// Computes what prefix_prefill.sm80_mma computes (mma.cuh): for each sequence with context_len c
// cached tokens and query_len n new tokens, new token i (position c + i) and q head h (kv head h /
// group) attend to every cached key 0 .. c - 1, read through the page table, and, causally (j <= i,
// or all j < n without causal), to the new tokens' keys, which prepare() gathers once into
// contiguous rows K_new / V_new (gather.cuh). logits() scales and soft-caps; a sink logit joins the
// denominator with no value. Head dims 64, 80, 96, 128, 192 and 256, and 192 with V_HEAD_DIM 128
// (V's and the output's rows; sm90_attention::head_dims_allowed). fp8-e4m3 K/V (KV_FP8) are codes
// times a per-tensor or per-kv-head scale: K's folds into the item's score scale, V's into the
// output (below), at every head dim. Not here: vLLM's layout, sliding windows, explicit masks
// (prefix_prefill.sm80_mma and .masked have them).
//
// Work decomposition (block = 128 x (1 + CONSUMERS)):
// - Work items are the (q tile, kv head) pairs of prefix_prefill_cta_schedule, in its order. The
//   grid is persistent: at most one CTA per SM (the shared memory allows no second), CTA b starts
//   with item b and then draws the next undone item from a counter in global memory once its
//   producer has issued the current item's loads, as a non-persistent grid would start a CTA where
//   one ends (sm90_persistent::next_item; the last CTA to draw past the end zeroes the counters for
//   the next launch). Producer and consumers number key tiles across the CTA's items, so the
//   producer fills the stages with the next item's first tiles while the consumers finish the
//   current one; with two Q buffers (where they fit) the next item's Q loads then too, and each
//   consumer thread releases a Q buffer once its last S = Q K^T of the item is done.
// - An item is TILE_M = 64 x CONSUMERS rows of one kv head: tile_tokens = TILE_M / group
//   consecutive new tokens of one sequence times the group's q heads, token-major (row r: token
//   t0 + r / group, q head kv_head * group + r % group), as prefix_prefill.sm80_mma packs them; K
//   and V are loaded once for the whole group, and a decode row (query_len 1) fills group rows. One
//   3-D TMA box per 64-dim column block brings exactly these rows of Q (zero-filled past the row
//   at head dims 80 and 96); rows past group x
//   tile_tokens are never written nor stored (each row's scores, softmax and output stay in its own
//   row).
// - Keys are walked in tiles of TILE_N: first the cached context, tiles aligned to key 0 (the last
//   one may be partial), then the new tokens, tiles aligned to new token 0 of K_new, so no tile
//   straddles the two. K and V tiles are stored interleaved ([TILE_N / 8][HEAD_DIM / 64][8][64]:
//   every column block of an 8-key group side by side, sm90_attention::interleaved_offset), which
//   the wgmma descriptors read as they read contiguous tiles (8-key groups one group stride apart),
//   so that one TMA box brings a page's every column block: a context tile is TILE_N / BOX_TOKENS
//   page boxes for K and as many for V (BOX_TOKENS keys of one kv head and page: the whole page,
//   or the tile's part of a page larger than the tile), one per lane of the producer warp, which
//   look the tile's pages up in parallel. Each box costs the TMA unit about the same whatever its
//   size, and at 16-key pages their number set the time: on the issue-6 case (H200) one box per
//   page and 64-dim block took 357 us, one per page for V 337 us, and one per page for K and V 329
//   us (st2). A new-token tile is one 4-D box of K_new and one of V_new. At head dims 80 and 96
//   (prefix_prefill::sm90_wgmma::interleaves) the tiles are column-block-major instead and every
//   box, of a page or of K_new / V_new, is one column block, the second one zero-filled past the
//   row by TMA (no memory read).
// - Two ways to load a context tile, fixed at compile time by the page size
//   (prefix_prefill::sm90_wgmma::copies_context): TMA page boxes as above wherever a box tiles the
//   page and the key tile; for the pages under 64 keys that no box tiles (1, 2, 4, 5, 24, 31, 48,
//   63 ...) the whole producer warpgroup copies the tile with 16-byte cp.async into the same
//   swizzled bytes (prefix_prefill::sm90_wgmma::interleaved_chunk_offset), looking the page up per
//   key, so any page size works. The copy path only widens the accepted page sizes: at 16-key pages
//   it took twice the time of the TMA boxes (713 us against 356 us, H200, issue-6 case, before the
//   boxes covered whole pages). The copy pipeline is FlashAttention-3's paged-KV one: a thread
//   copies tile n, commits, waits for its group of tile n - 1, fences the generic-proxy writes for
//   wgmma (async proxy), and each warp's lane 0 arrives on that tile's full barrier; full barriers
//   then count one arrival per producer warp (warp 0's lane 0 with expect_tx on the TMA-loaded
//   new-token tiles, the others plainly).
// - Keys of the last context tile past the context's end: their K rows are stale or unloaded
//   (their scores are masked to -inf, whatever they hold), and their V rows, which P = 0
//   multiplies, must be zero (a page slot past a sequence's end holds NaN, and 0 x NaN = NaN):
//   cp.async zero-fills them; after TMA the first consumer warpgroup zeroes them before any P V
//   reads the tile (the v_zeroed barrier). New-token tiles need no such care:
//   their rows past the sequence are the next sequence's gathered keys, zero padding, or TMA's
//   zero fill past K_new's end.
// - Masks, on the tiles a rule cuts only: the last context tile (keys past the context), and with
//   causal the new-token tiles that reach past the warpgroup's first token (key j > token), or
//   without causal the last new-token tile (keys past query_len).
//
// - An fp8 cache (KV_FP8): wgmma's operands stay 16-bit, so every K and V tile, context or new
//   tokens, goes through the producer warpgroup: each thread copies its 16-byte chunks of the
//   tile's codes with cp.async into a staging buffer (parts of one tile's K or V, V's rows
//   V_HEAD_DIM codes, a 128-key tile's in two halves: fp8_staging_slots whole parts' bytes hold
//   FP8_SLOTS parts; a context tile's page-table entries are read once into shared memory,
//   load_tile_pages), and while the next parts' copies fly it converts its chunks of the landed
//   part into the stage's swizzled 16-bit tile, laid out as the head dim's tiles are
//   (interleaved, or column-block-major at 80 and 96), and publishes it as the copy path does.
//   The thread that copies a chunk converts it, so no barrier orders the copy and the read. Keys
//   past the context (or past the new tokens) are zero-filled by the copy, as on the copy path.
//   The products run in fp16 (PRODUCTS): a pair of codes becomes fp16 in one instruction
//   (fp8_codes_to_16bit; integer instructions where the producer has 56 registers), and a bf16 Q
//   is converted by the consumers once per item, each row with its own power-of-two factor and
//   score scale (sm90_attention::Consumer's Q_DTYPE, convert_q); the output is written in Q's
//   dtype. The codes are dequantised without their scale: K's scale multiplies the item's score
//   scale (items are one kv head, so a per-head scale is one number per item) and V's the
//   output's normaliser. The producer reads half the bytes, and its instructions set the pace.
// - Or (KV_SCALES without KV_FP8, config fp8_dequant=1) the codes become 16-bit copies once per
//   launch, inside this kernel: the producer warpgroup's three warps that issue no TMA load convert
//   blocks of 16 keys of one kv head in the order the items read them, and warp 0 waits for a
//   tile's blocks before its TMA load (sm90_fp8_copies.cuh). The copies' context tiles are one box
//   of TILE_N keys each (a page of TILE_N keys, HND: BOX_TOKENS is TILE_N); the kernel reads them
//   as a 16-bit cache's, with the scales applied as above. A context tile read by many query tiles
//   is then converted once instead of once per query tile, for 2 bytes written and read again per
//   code, while the tensor cores work.
//
// Tunables (as flash_fwd.sm90_wgmma's): TILE_M (64 x CONSUMERS rows per CTA), TILE_N (keys per
// stage, 64 or 128), STAGES (TMA buffers of K and of V in flight), CONSUMERS (1 or 2 consumer
// warpgroups). BOX_TOKENS follows from the page size (sm90_wgmma_traits.hpp): the page size itself
// on the cp.async path (pages are smaller than the tile there).
#pragma once

#include "kernels/common/cp_async.cuh"
#include "kernels/common/sm90_attention.cuh"
#include "kernels/common/sm90_persistent.cuh"
#include "kernels/prefix_prefill/gather.cuh"
#include "kernels/prefix_prefill/sm90_fp8_copies.cuh"
#include "kernels/prefix_prefill/sm90_wgmma_params.hpp"
#include "kernels/prefix_prefill/sm90_wgmma_traits.hpp"

namespace attn {
namespace prefix_prefill::sm90_wgmma {

// One pool's (K's or V's) part of context tile keys key0 .. key0 + TILE_N - 1, copied by producer
// thread `tid` (0..127) with cp.async into `tile` (128-byte swizzled, interleaved, [TILE_N / 8]
// [blocks][8][64], or column-block-major, [blocks][TILE_N][64]: tile_chunk_offset), DIMS the
// pool's row width (head_dim, or V's v_head_dim).
// A key row is DIMS / 8 16-byte chunks: consecutive threads take consecutive chunks of one key
// (its dims are contiguous in the pool, whatever the layout), 128 / (DIMS / 8) keys a pass where
// that divides (the chunks of 80 and 96 dims run on across keys). The chunks of a last column
// block past the row are not written (no wgmma reads them).
// Keys at or past `ctx` are zero-filled without a read, so the V rows of the last partial tile are
// zero for P V (a page slot past a sequence's end may hold NaN). `head` is the kv head's offset
// in a page (computed here, not held across the producer loop: registers are scarce).
template <int DIMS, int TILE_N, int PAGE_SIZE, bool INTERLEAVED>
__device__ __forceinline__ void copy_context_tile(unsigned char* tile, const unsigned short* pool,
                                                  int head, const int* pages, int key0, int ctx,
                                                  int tid, int page_stride, int token_stride) {
  constexpr int CHUNKS = DIMS / 8;  // 16-byte chunks per key
  pool += head;
  // Not unrolled: tried at 24 producer registers (unrolled by 4, or with the pages looked up once
  // per warp and shuffled), it spilled; not retried at 40.
#pragma unroll 1
  for (int i = tid; i < TILE_N * CHUNKS; i += 128) {
    const int row = i / CHUNKS, chunk = i % CHUNKS;
    const int key = key0 + row;
    const bool valid = key < ctx;
    long long offset = 0;
    if (valid) {
      offset = (long long)__ldg(pages + key / PAGE_SIZE) * page_stride +
               (key % PAGE_SIZE) * token_stride;
    }
    cp_async_16(tile + tile_chunk_offset(row, chunk, DIMS, TILE_N, INTERLEAVED),
                pool + offset + chunk * 8, valid);
  }
}

// Makes this warp's finished cp.async writes visible to wgmma (the async proxy) and has lane 0
// arrive on `full` for the warp: the full barriers of a copying kernel count one arrival per
// producer warp.
__device__ __forceinline__ void publish_copies(unsigned long long* full, int lane) {
  sm90::fence_proxy_async_shared();
  __syncwarp();
  if (lane == 0) sm90::mbarrier_arrive(full);
}

// KV_FP8: the page-table entries of the context keys key0 .. min(key0 + TILE_N, limit) - 1 (pages
// first .. of the item's table, first = key0 / page_size, TILE_N + 1 at most), read by the
// producer warpgroup (thread `tid`, 0..127) into shared memory at `tile_pages` (a shared-window
// address, shared_access.cuh), all in flight at once. The copies of a tile's K and V parts then
// read their pages from shared memory: a tile costs one page-table latency, not one per copy. The
// entries are loaded before the first barrier (named, the producer warpgroup's), which orders the
// reads of the previous tile's entries before they are overwritten; the second orders the writes
// before the reads. PAGE: the page size where it is known at compile time, else 0 (`page_size`).
template <int TILE_N, int PAGE>
__device__ __forceinline__ void load_tile_pages(unsigned tile_pages, const int* pages, int key0,
                                                int limit, int runtime_page_size, int tid) {
  const int page_size = PAGE > 0 ? PAGE : runtime_page_size;
  const int first = key0 / page_size;
  const int last = key0 < limit ? (min(key0 + TILE_N, limit) - 1) / page_size : first - 1;
  constexpr int PER_THREAD = (TILE_N + 1 + 127) / 128;
  int entry[PER_THREAD];
#pragma unroll
  for (int i = 0; i < PER_THREAD; ++i) {
    const int e = tid + 128 * i;
    entry[i] = e < TILE_N + 1 && first + e <= last ? __ldg(pages + first + e) : 0;
  }
  asm volatile("bar.sync %0, 128;\n" ::"n"(kFp8PagesBarrier) : "memory");
#pragma unroll
  for (int i = 0; i < PER_THREAD; ++i) {
    const int e = tid + 128 * i;
    if (e < TILE_N + 1) st_shared_s32(tile_pages + 4 * e, entry[i]);
  }
  asm volatile("bar.sync %0, 128;\n" ::"n"(kFp8PagesBarrier) : "memory");
}

// KV_FP8: one part (K's or V's codes of KEYS keys of a tile), keys key0 .. key0 + KEYS - 1, copied
// by producer thread `tid` (0..127) with cp.async into `staging` (a shared-window address): unit u
// (key u / CHUNKS, 16-byte chunk u % CHUNKS) at staging + 16 u, units tid, tid + 128, ... being
// this thread's (and convert_fp8_part's). DIMS is the part's row width (head_dim, or V's
// v_head_dim), a multiple of 16. Keys at or past `limit` are zero-filled without a read. `src` is
// the kv head's first code; with PAGED a key's codes lie at tile_pages[key / page_size - first] *
// page_stride + (key % page_size) * token_stride from it (the paged context: load_tile_pages'
// entries, at shared address `tile_pages`, the first being page `first`), else at key *
// token_stride (the gathered new tokens). PAGE: the page size where it is known at compile time
// (pages smaller than the tile: BOX_TOKENS), else 0 (`page_size`). STEPS: the stepped copy below
// may be used (not where K's and V's rows differ: at 192 with a V of 128, K's generic copy beside
// V's stepped one spilled 8 to 28 bytes in the producer). BATCH: page-table entries read at once
// on the stepped path (as many as the producer's registers hold).
template <int DIMS, int KEYS, int PAGE, bool STEPS, bool PAGED, int BATCH>
__device__ __forceinline__ void copy_fp8_part(unsigned staging, const unsigned char* src,
                                              unsigned tile_pages, int first, int key0, int limit,
                                              int tid, int runtime_page_size, long long page_stride,
                                              long long token_stride) {
  static_assert(DIMS % 16 == 0, "whole 16-byte chunks of codes per key");
  constexpr int CHUNKS = DIMS / 16;  // 16-byte chunks of codes per key
  constexpr int UNITS = KEYS * CHUNKS;
  const int page_size = PAGE > 0 ? PAGE : runtime_page_size;
  // Where a thread's units are whole steps of keys apart (CHUNKS divides 128) and pages of a
  // compile-time size tile both the tile and the step, its units share one key offset in their
  // pages and one chunk: a unit is one page-table entry, one multiply and its copy, the entries
  // read first so that their latencies overlap.
  constexpr int STEP = 128 % CHUNKS == 0 ? 128 / CHUNKS : 0;  // keys between a thread's units
  // No branch per unit: a key past `limit` copies nothing (cp.async reads 0 bytes), whatever
  // address it is given, so its address is computed from a valid entry or key.
  if constexpr (PAGED && STEPS && CHUNKS >= 8 && STEP > 0 && PAGE > 0 && STEP % PAGE == 0 &&
                KEYS % STEP == 0) {
    constexpr int J = KEYS / STEP;
    constexpr int B = J < BATCH ? J : BATCH;
    static_assert(J % B == 0, "whole batches");
    const int r0 = tid / CHUNKS;
    // (A page of the pool and a token's row in it are far below 2^31 bytes.)
    const int stride = int(page_stride);
    const unsigned char* from = src + (r0 % PAGE) * int(token_stride) + (tid % CHUNKS) * 16;
    // (key0 is a multiple of PAGE here: parts start at multiples of STEP.)
    const unsigned entries = tile_pages + 4 * (key0 / PAGE - first + r0 / PAGE);
    // The entries of a batch are read together (their latencies overlap).
#pragma unroll 1
    for (int j0 = 0; j0 < J; j0 += B) {
      int entry[B];
#pragma unroll
      for (int b = 0; b < B; ++b) entry[b] = ld_shared_s32(entries + 4 * (j0 + b) * (STEP / PAGE));
#pragma unroll
      for (int b = 0; b < B; ++b) {
        const int j = j0 + b;
        const bool valid = key0 + r0 + STEP * j < limit;
        cp_async_16(staging + (tid + 128 * j) * 16,
                    from + (long long)(valid ? entry[b] : 0) * stride, valid);
      }
    }
  } else {
#pragma unroll 1
    for (int u = tid; u < UNITS; u += 128) {
      const int key = key0 + u / CHUNKS;
      const bool valid = key < limit;
      const int at = valid ? key : key0;
      long long offset;
      if constexpr (PAGED) {
        offset = (long long)ld_shared_s32(tile_pages + 4 * (at / page_size - first)) * page_stride +
                 (at % page_size) * token_stride;
      } else {
        offset = at * token_stride;
      }
      cp_async_16(staging + u * 16, src + offset + (u % CHUNKS) * 16, valid);
    }
  }
}

// KV_FP8: sixteen e4m3 codes as 16-bit values of DTYPE (lo: codes 0..7), exactly: with CVT (fp16)
// in one instruction per pair (e4m3x8_to_f16), else with integer instructions (e4m3x16_to_16bit:
// where the producer has 56 registers, the conversion instructions' operands spilled 16 bytes at
// head dim 256).
template <int DTYPE, bool CVT>
__device__ __forceinline__ void fp8_codes_to_16bit(const uint4& codes, uint4& lo, uint4& hi) {
  if constexpr (CVT) {
    static_assert(DTYPE == kDTypeFp16, "the conversion instruction writes fp16");
    lo = e4m3x8_to_f16(make_uint2(codes.x, codes.y));
    hi = e4m3x8_to_f16(make_uint2(codes.z, codes.w));
  } else {
    e4m3x16_to_16bit<DTYPE>(codes, lo, hi);
  }
}

// KV_FP8: this thread's units of a landed part (copy_fp8_part's, KEYS rows of DIMS codes, at
// shared address `staging`) as 16-bit values of DTYPE into rows row0 .. row0 + KEYS - 1 of the
// TILE_N-key tile at shared address `tile`, laid out as the kernel's tiles are (128-byte swizzled,
// interleaved [TILE_N / 8][blocks][8][64] or column-block-major [blocks][TILE_N][64]:
// tile_chunk_offset): a unit's 16 codes are two 16-byte chunks of its key, both in one column
// block (a block holds 8 chunks). Chunks of a last column block past the row are not written, as
// on the copy path (no wgmma reads them).
template <int DTYPE, int DIMS, int TILE_N, int KEYS, bool INTERLEAVED, int BATCH, bool CVT>
__device__ __forceinline__ void convert_fp8_part(unsigned tile, unsigned staging, int row0,
                                                 int tid) {
  constexpr int CHUNKS = DIMS / 16;
  constexpr int UNITS = KEYS * CHUNKS;
  if constexpr (INTERLEAVED && 128 % CHUNKS == 0 && UNITS % 128 == 0) {
    // A thread's units are STEP keys apart (a multiple of 8: CHUNKS <= 16), so they share their
    // chunks' place in an 8-key group and lie whole groups apart: one address per thread, then
    // constant offsets. Units go in batches of B, their loads issued together.
    constexpr int STEP = 128 / CHUNKS;
    constexpr int J = UNITS / 128;
    constexpr int B = J < BATCH ? J : BATCH;
    constexpr int ROWS_APART = STEP / 8 * sm90_attention::interleaved_group_bytes(DIMS);
    static_assert(STEP % 8 == 0 && J % B == 0, "whole 8-key groups, whole batches");
    const int row = row0 + tid / CHUNKS, chunk = 2 * (tid % CHUNKS);
    const unsigned lo_at = tile + tile_chunk_offset(row, chunk, DIMS, TILE_N, true);
    const unsigned hi_at = tile + tile_chunk_offset(row, chunk + 1, DIMS, TILE_N, true);
    const unsigned from = staging + 16 * tid;
#pragma unroll
    for (int j0 = 0; j0 < J; j0 += B) {
      uint4 codes[B];
#pragma unroll
      for (int b = 0; b < B; ++b) codes[b] = ld_shared_16(from + 2048 * (j0 + b));
#pragma unroll
      for (int b = 0; b < B; ++b) {
        uint4 lo, hi;
        fp8_codes_to_16bit<DTYPE, CVT>(codes[b], lo, hi);
        st_shared_16(lo_at + ROWS_APART * (j0 + b), lo);
        st_shared_16(hi_at + ROWS_APART * (j0 + b), hi);
      }
    }
  } else {
#pragma unroll 1
    for (int u = tid; u < UNITS; u += 128) {
      const uint4 codes = ld_shared_16(staging + u * 16);
      uint4 lo, hi;
      fp8_codes_to_16bit<DTYPE, CVT>(codes, lo, hi);
      const int row = row0 + u / CHUNKS, chunk = 2 * (u % CHUNKS);
      st_shared_16(tile + tile_chunk_offset(row, chunk, DIMS, TILE_N, INTERLEAVED), lo);
      st_shared_16(tile + tile_chunk_offset(row, chunk + 1, DIMS, TILE_N, INTERLEAVED), hi);
    }
  }
}

// One work item of the persistent grid: tile_tokens new tokens of one sequence (from t0) and one
// kv head, entry `index` of p.tiles (prefix_prefill_cta_schedule's order), and the key tiles it
// walks: n_ctx over the context, then the new-token tiles up to its last token.
template <int TILE_N>
struct Item {
  int t0, kv_head;
  PrefixPrefillSeq info;
  const int* pages;  // the sequence's row of the block table
  int rows;          // valid rows: tokens x group
  int n_ctx, n_tiles;

  __device__ __forceinline__ Item(const PrefixPrefillSm90Params& p, int index) {
    const int seq = p.tiles[3 * index];
    t0 = p.tiles[3 * index + 1];
    kv_head = p.tiles[3 * index + 2];
    info = p.seqs[seq];
    pages = p.block_table + (long long)seq * p.max_pages_per_seq;
    const int tokens = min(p.tile_tokens, info.query_len - t0);  // >= 1
    rows = tokens * p.group;
    n_ctx = (info.context_len + TILE_N - 1) / TILE_N;
    n_tiles = n_ctx + new_tiles(p, t0 + tokens - 1);
  }
  // The new-token tiles that rows up to token `last_token` need.
  __device__ __forceinline__ int new_tiles(const PrefixPrefillSm90Params& p, int last_token) const {
    return ((p.causal ? last_token + 1 : info.query_len) + TILE_N - 1) / TILE_N;
  }
};

}  // namespace prefix_prefill::sm90_wgmma

template <int DTYPE, int HEAD_DIM, int V_HEAD_DIM, int TILE_M, int TILE_N, int STAGES,
          int CONSUMERS, int BOX_TOKENS, bool KV_FP8 = false, bool KV_SCALES = KV_FP8>
__global__ void __launch_bounds__(sm90_attention::threads(CONSUMERS), 1)
    prefix_prefill_sm90_wgmma(const __grid_constant__ PrefixPrefillSm90Params p) {
  static_assert(
      prefix_prefill::sm90_wgmma::check(HEAD_DIM, TILE_M, TILE_N, STAGES, CONSUMERS, BOX_TOKENS, 0,
                                        V_HEAD_DIM, KV_FP8, KV_SCALES) == sm90_attention::kOk,
      "invalid prefix_prefill.sm90_wgmma config: see prefix_prefill::sm90_wgmma::check");
  constexpr int Q_BYTES = sm90_attention::q_bytes(HEAD_DIM, TILE_M);
  constexpr int K_BYTES = sm90_attention::kv_tile_bytes(HEAD_DIM, TILE_N);
  constexpr int V_BYTES = sm90_attention::kv_tile_bytes(V_HEAD_DIM, TILE_N);
  constexpr int BLOCKS = sm90_attention::column_blocks(HEAD_DIM);  // of Q and K
  constexpr int V_BLOCKS = sm90_attention::column_blocks(V_HEAD_DIM);
  // Interleaved K and V tiles, or column-block-major (head dims 80 and 96).
  constexpr bool INTERLEAVED = prefix_prefill::sm90_wgmma::interleaves(HEAD_DIM, V_HEAD_DIM);
  constexpr int ROW_BYTES = sm90_attention::kBlockRowBytes;  // 128
  constexpr int Q_BLOCK = TILE_M * ROW_BYTES;                // one column block of Q, bytes
  constexpr int BOXES = TILE_N / BOX_TOKENS;                 // page boxes per context tile (TMA)
  constexpr int ROWS = sm90_attention::kConsumerRows;        // 64 rows per consumer warpgroup
  // Context tiles by cp.async from the whole producer warpgroup, or by TMA boxes from one warp.
  // Copied pages are smaller than kCopiedPageTokens <= TILE_N keys, so BOX_TOKENS is the page size.
  constexpr bool COPY = prefix_prefill::sm90_wgmma::copies_context(BOX_TOKENS, TILE_N);
  static_assert(COPY || BOXES <= 32, "one producer lane per TMA box");
  static_assert(!COPY || BOX_TOKENS < TILE_N, "a copied page is smaller than the key tile");
  // With KV_FP8 every tile is copied and converted by the whole producer warpgroup.
  constexpr bool WARPGROUP_LOADS = COPY || KV_FP8;
  // An fp8 cache with fp8_dequant=1: the producer's other three warps convert its codes to the
  // 16-bit copies that warp 0 loads, once per launch (sm90_fp8_copies.cuh); the copies' context
  // tiles are one box each.
  constexpr bool CONVERTS_ONCE = KV_SCALES && !KV_FP8;
  static_assert(!CONVERTS_ONCE || (!COPY && BOX_TOKENS == TILE_N), "a copy tile is one TMA box");
  constexpr int PRODUCER_WARPS = WARPGROUP_LOADS ? 4 : 1;  // arrivals on each full barrier
  // The consumers' arrays (sm90_attention::register_estimate): how an fp8 cache's kernel splits
  // the registers (prefix_prefill::sm90_wgmma::producer_registers).
  constexpr int REGISTER_ESTIMATE = sm90_attention::register_estimate(HEAD_DIM, TILE_N, V_HEAD_DIM);
  // The products' dtype: an fp8 cache's tiles are converted to fp16 (one instruction per pair of
  // codes), and a bf16 Q with them (sm90_attention::Consumer::convert_q); else Q's dtype.
  constexpr int PRODUCTS = KV_FP8 ? kDTypeFp16 : DTYPE;
  // KV_FP8: one part's codes, bytes (K's rows are the wider: V_HEAD_DIM <= HEAD_DIM), and the
  // parts the staging buffer holds.
  constexpr int STAGING_PART = prefix_prefill::sm90_wgmma::fp8_part_bytes(HEAD_DIM, TILE_N);
  constexpr int SLOTS =
      prefix_prefill::sm90_wgmma::fp8_staging_slots(HEAD_DIM, TILE_M, TILE_N, STAGES, V_HEAD_DIM);
  static_assert(V_HEAD_DIM <= HEAD_DIM, "V's rows fit K's staging part");
  // KV_FP8: a staging part of 128 keys is copied and converted in two halves, so that twice as
  // many parts (of half the keys) fly while one is converted, in the same bytes.
  constexpr int PART_KEYS = prefix_prefill::sm90_wgmma::fp8_part_keys(TILE_N);
  constexpr int FP8_SPLIT = TILE_N / PART_KEYS;
  constexpr int FP8_SLOTS = SLOTS * FP8_SPLIT;
  constexpr int FP8_SLOT_BYTES = STAGING_PART / FP8_SPLIT;

  // K and V tiles are interleaved ([TILE_N / 8][BLOCKS][8][64],
  // sm90_attention::interleaved_offset), so that one TMA box brings every column block of a page;
  // or column-block-major ([BLOCKS][TILE_N][64]), a box per page and column block.
  constexpr int KV_BLOCK = TILE_N * ROW_BYTES;  // column-block-major: one column block of a tile
  // Item k of the CTA has its Q in buffer k % Q_BUFFERS.
  constexpr int Q_BUFFERS =
      prefix_prefill::sm90_wgmma::q_buffers(HEAD_DIM, TILE_M, TILE_N, STAGES, V_HEAD_DIM, KV_FP8);
  using Item = prefix_prefill::sm90_wgmma::Item<TILE_N>;

  extern __shared__ unsigned char shared_raw[];
  unsigned char* shared = reinterpret_cast<unsigned char*>(
      (reinterpret_cast<unsigned long long>(shared_raw) + 1023) & ~1023ull);
  unsigned char* q_tiles = shared;                        // [Q_BUFFERS][BLOCKS][TILE_M][64]
  unsigned char* k_tiles = shared + Q_BUFFERS * Q_BYTES;  // [STAGES][TILE_N / 8][BLOCKS][8][64]
  unsigned char* v_tiles = k_tiles + STAGES * K_BYTES;    // [STAGES][TILE_N / 8][V_BLOCKS][8][64]
  // KV_FP8: [SLOTS][STAGING_PART] codes in flight (prefix_prefill::sm90_wgmma::
  // fp8_staging_bytes), counted with the kernel's own words after the barriers.
  unsigned char* fp8_staging = v_tiles + STAGES * V_BYTES;
  // KV_FP8: then the page-table entries of the producer's current context tile (TILE_N + 1,
  // load_tile_pages), in the same words.
  // Both as shared-window addresses: the producer reads and writes them with explicit shared
  // accesses (shared_access.cuh), as generic ones through `shared` would be slower.
  const unsigned fp8_staging_at = shared_address(fp8_staging);
  const unsigned fp8_pages_at = fp8_staging_at + SLOTS * STAGING_PART;
  unsigned long long* q_full = reinterpret_cast<unsigned long long*>(
      fp8_staging + (KV_FP8 ? prefix_prefill::sm90_wgmma::fp8_staging_bytes(
                                  HEAD_DIM, TILE_M, TILE_N, STAGES, V_HEAD_DIM)
                            : 0));
  unsigned long long* q_empty = q_full + Q_BUFFERS;
  unsigned long long* k_full = q_empty + Q_BUFFERS;
  unsigned long long* k_empty = k_full + STAGES;
  unsigned long long* v_full = k_empty + STAGES;
  unsigned long long* v_empty = v_full + STAGES;
  unsigned long long* v_zeroed = v_empty + STAGES;
  // The item each Q buffer announces (-1: no more), written by producer thread 0 before it
  // arrives on q_full[b], read after a wait on it; 16 bytes apart (sm90_persistent::ItemQueue).
  const sm90_persistent::ItemQueue<Q_BUFFERS> queue{q_full, q_empty,
                                                    reinterpret_cast<volatile int*>(v_zeroed + 1)};

  if (threadIdx.x == 0) {
    queue.init(CONSUMERS);  // one arrival per consumer thread on q_empty
    for (int s = 0; s < STAGES; ++s) {
      // One arrival per producer warp: lane 0 of warp 0 with expect_tx for TMA tiles.
      sm90::mbarrier_init(&k_full[s], PRODUCER_WARPS);
      sm90::mbarrier_init(&v_full[s], PRODUCER_WARPS);
      sm90::mbarrier_init(&k_empty[s], CONSUMERS * 4);  // one arrival per consumer warp
      sm90::mbarrier_init(&v_empty[s], CONSUMERS * 4);
    }
    sm90::mbarrier_init(v_zeroed, 128);  // every thread of the first consumer warpgroup
    sm90::fence_barrier_init();
  }
  // CONVERTS_ONCE: the launch's number (its flags hold it + 1 once written), read by the
  // producer warpgroup before any warp of this CTA takes a unit.
  unsigned launch = 0;
  if constexpr (CONVERTS_ONCE) {
    if (threadIdx.x < 128) launch = prefix_prefill::sm90_fp8_copies::launch_number(p.copies);
  }
  __syncthreads();

  const int warpgroup = threadIdx.x / 128;
  if (warpgroup == 0) {
    // Producer: the first warp issues every TMA load; with COPY all four warps copy context
    // tiles. Key tiles are numbered across the CTA's items: tile g goes to stage g % STAGES once
    // every consumer warp released tile g - STAGES (a fresh empty barrier passes parity 1), so
    // the next item's first tiles load while the consumers finish the current one. Every producer
    // thread that writes or arrives waits for that first.
    sm90::setmaxnreg_dec<prefix_prefill::sm90_wgmma::producer_registers(
        CONSUMERS, WARPGROUP_LOADS, KV_FP8, REGISTER_ESTIMATE)>();
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if constexpr (CONVERTS_ONCE) {
      if (warp > 0) {
        prefix_prefill::sm90_fp8_copies::convert_units<DTYPE, HEAD_DIM, V_HEAD_DIM, TILE_N>(
            p.copies, launch, lane);
        return;
      }
    }
    if (threadIdx.x >= 32 * PRODUCER_WARPS) return;
    int next = blockIdx.x;  // thread 0: the item it announces next
    int g = 0;              // key tiles loaded so far
    for (int k = 0;; ++k) {
      // Item k: thread 0 loads its Q into buffer b once every consumer thread is done with the
      // buffer's previous item, and announces it; warp 0 hears it from thread 0, the copying
      // warps from the slot.
      const int b = k % Q_BUFFERS;
      int index = -1;
      if (threadIdx.x == 0) index = queue.claim(k, next, p.items);
      if (warp == 0) {
        index = __shfl_sync(0xffffffffu, index, 0);
      } else {
        index = queue.announced(k);
      }
      if (index < 0) return;
      const Item item(p, index);
      if (threadIdx.x == 0) {
        sm90::mbarrier_expect_bytes(&q_full[b], BLOCKS * p.group * p.tile_tokens * ROW_BYTES);
#pragma unroll
        for (int c = 0; c < BLOCKS; ++c) {
          sm90::tma_load_3d(q_tiles + b * Q_BYTES + c * Q_BLOCK, &p.q_map, c * 64,
                            item.kv_head * p.group, item.info.q_start + item.t0, &q_full[b]);
        }
      }
      const int ctx = item.info.context_len, n_ctx = item.n_ctx;
      if constexpr (KV_FP8) {
        // A tile's K codes, then its V codes, each in FP8_SPLIT parts of PART_KEYS keys: part i
        // is part i % FP8_SPLIT of tile i / (2 FP8_SPLIT)'s K (or V, i / FP8_SPLIT odd). Parts
        // i + 1 .. i + FP8_SLOTS - 1 fly while part i is converted (cp.async groups complete in
        // commit order; one per part, an empty one past the item's last part keeps the count).
        // Pages smaller than the tile are BOX_TOKENS keys (sm90_wgmma_traits.hpp, box_tokens).
        constexpr int FP8_PAGE = BOX_TOKENS < TILE_N ? BOX_TOKENS : 0;
        constexpr bool FP8_STEPS = HEAD_DIM == V_HEAD_DIM;
        // Units converted per batch of loads, and page-table entries read at once (at 4, with the
        // parts of a tile unrolled, ptxas spilled 32 to 64 bytes in the producer).
        constexpr int FP8_BATCH = 2;
        constexpr int FP8_COPY_BATCH = 2;
        // fp16 tiles by the conversion instruction where the producer has 72 registers or more.
        constexpr bool FP8_CVT = PRODUCTS == kDTypeFp16 &&
                                 prefix_prefill::sm90_wgmma::producer_registers(
                                     CONSUMERS, WARPGROUP_LOADS, KV_FP8, REGISTER_ESTIMATE) >= 72;
        // K_new's and V_new's rows (codes); V's pool strides are K's times V_HEAD_DIM / HEAD_DIM
        // (each is a multiple of the row), as on the copy path.
        const int kv_heads = p.num_q_heads / p.group;
        auto v_stride = [](long long k_stride) {
          return V_HEAD_DIM == HEAD_DIM ? k_stride : k_stride / HEAD_DIM * V_HEAD_DIM;
        };
        // Part q (0 .. PPT - 1) of tile n: K's (q < FP8_SPLIT) or V's half q % FP8_SPLIT. The
        // loops below run over tiles with the parts unrolled, so q is a constant in every call.
        constexpr int PPT = 2 * FP8_SPLIT;
        int tile_first = 0;  // the page of load_tile_pages' entry 0 (the tile being copied)
        auto copy_part = [&](int n, int q) {
          const bool value = q >= FP8_SPLIT;
          const int half = q % FP8_SPLIT;
          const int key0 = n * TILE_N + half * PART_KEYS;  // in the context or in the new tokens
          const unsigned staging = fp8_staging_at + (n * PPT + q) % FP8_SLOTS * FP8_SLOT_BYTES;
          if (n < n_ctx) {
            if (q == 0) {
              // A context tile's first K part reads the tile's page-table entries; the others
              // reuse them.
              tile_first = n * TILE_N / (FP8_PAGE > 0 ? FP8_PAGE : p.page_size);
              prefix_prefill::sm90_wgmma::load_tile_pages<TILE_N, FP8_PAGE>(
                  fp8_pages_at, item.pages, n * TILE_N, ctx, p.page_size, threadIdx.x);
            }
            if (!value) {
              prefix_prefill::sm90_wgmma::copy_fp8_part<HEAD_DIM, PART_KEYS, FP8_PAGE, FP8_STEPS,
                                                        true, FP8_COPY_BATCH>(
                  staging,
                  reinterpret_cast<const unsigned char*>(p.k_pool) +
                      (long long)item.kv_head * p.head_stride,
                  fp8_pages_at, tile_first, key0, ctx, threadIdx.x, p.page_size, p.page_stride,
                  p.token_stride);
            } else {
              prefix_prefill::sm90_wgmma::copy_fp8_part<V_HEAD_DIM, PART_KEYS, FP8_PAGE, FP8_STEPS,
                                                        true, FP8_COPY_BATCH>(
                  staging,
                  reinterpret_cast<const unsigned char*>(p.v_pool) +
                      item.kv_head * v_stride(p.head_stride),
                  fp8_pages_at, tile_first, key0, ctx, threadIdx.x, p.page_size,
                  v_stride(p.page_stride), v_stride(p.token_stride));
            }
          } else if (!value) {
            const long long row = (long long)kv_heads * HEAD_DIM;
            prefix_prefill::sm90_wgmma::copy_fp8_part<HEAD_DIM, PART_KEYS, FP8_PAGE, FP8_STEPS,
                                                      false, FP8_COPY_BATCH>(
                staging, p.k_new + item.info.new_start * row + item.kv_head * HEAD_DIM, 0, 0,
                key0 - n_ctx * TILE_N, item.info.query_len, threadIdx.x, 1, 0, row);
          } else {
            const long long row = (long long)kv_heads * V_HEAD_DIM;
            prefix_prefill::sm90_wgmma::copy_fp8_part<V_HEAD_DIM, PART_KEYS, FP8_PAGE, FP8_STEPS,
                                                      false, FP8_COPY_BATCH>(
                staging, p.v_new + item.info.new_start * row + item.kv_head * V_HEAD_DIM, 0, 0,
                key0 - n_ctx * TILE_N, item.info.query_len, threadIdx.x, 1, 0, row);
          }
        };
        // Part (n, q) brought: its copies issued and committed as one group (cp.async groups
        // complete in commit order), or an empty group past the item's last tile, which keeps
        // the count. FP8_SLOTS - 1 parts fly while one is converted.
        auto bring = [&](int n, int q) {
          if (n < item.n_tiles) copy_part(n, q);
          cp_async_commit();
        };
#pragma unroll
        for (int j = 0; j < FP8_SLOTS - 1; ++j) bring(j / PPT, j % PPT);
#pragma unroll 1
        for (int n = 0; n < item.n_tiles; ++n) {
          const int t = g + n, s = t % STAGES;
          const unsigned int parity = ((t / STAGES) & 1) ^ 1;
#pragma unroll
          for (int q = 0; q < PPT; ++q) {
            constexpr int AHEAD = FP8_SLOTS - 1;
            bring(n + (q + AHEAD) / PPT, (q + AHEAD) % PPT);  // into the slot part q - 1 left
            cp_async_wait<FP8_SLOTS - 1>();  // part (n, q)'s copies (this thread's) landed
            const bool value = q >= FP8_SPLIT;
            const int half = q % FP8_SPLIT;
            const unsigned staging = fp8_staging_at + (n * PPT + q) % FP8_SLOTS * FP8_SLOT_BYTES;
            if (half == 0) sm90::mbarrier_wait(value ? &v_empty[s] : &k_empty[s], parity);
            if (!value) {
              prefix_prefill::sm90_wgmma::convert_fp8_part<PRODUCTS, HEAD_DIM, TILE_N, PART_KEYS,
                                                           INTERLEAVED, FP8_BATCH, FP8_CVT>(
                  shared_address(k_tiles + s * K_BYTES), staging, half * PART_KEYS, threadIdx.x);
            } else {
              prefix_prefill::sm90_wgmma::convert_fp8_part<PRODUCTS, V_HEAD_DIM, TILE_N, PART_KEYS,
                                                           INTERLEAVED, FP8_BATCH, FP8_CVT>(
                  shared_address(v_tiles + s * V_BYTES), staging, half * PART_KEYS, threadIdx.x);
            }
            if (half == FP8_SPLIT - 1)
              prefix_prefill::sm90_wgmma::publish_copies(value ? &v_full[s] : &k_full[s], lane);
          }
        }
        g += item.n_tiles;
      }
      for (int n = 0; !KV_FP8 && n < item.n_tiles; ++n, ++g) {
        const int s = g % STAGES;
        const unsigned int parity = ((g / STAGES) & 1) ^ 1;
        unsigned char* k_dst = k_tiles + s * K_BYTES;
        unsigned char* v_dst = v_tiles + s * V_BYTES;
        if constexpr (CONVERTS_ONCE) {
          // Warp 0's lane q reads block q's flag before the stage is free (hiding the read behind
          // that wait), then waits for the block to be converted in this launch.
          namespace copies = prefix_prefill::sm90_fp8_copies;
          const int* flag =
              n < n_ctx ? copies::context_flag<TILE_N>(p.copies, __ldg(item.pages + n), n, ctx,
                                                       item.kv_head, lane)
                        : copies::new_rows_flag<TILE_N>(p.copies,
                                                        item.info.new_start + (n - n_ctx) * TILE_N,
                                                        p.new_rows, item.kv_head, lane);
          const unsigned seen = copies::read_flag(flag, launch);
          sm90::mbarrier_wait(&k_empty[s], parity);
          copies::wait_flag(flag, seen, launch);
        }
        if (COPY && n < n_ctx) {
          // FlashAttention-3's paged-KV pipeline: copy tile n, then publish tile n - 1 once this
          // thread's copies of it have landed (cp.async groups complete in commit order:
          // K_{n-1}, V_{n-1}, K_n, V_n), so two tiles of copies are in flight. The last context
          // tile is published at once (the tiles after it are TMA's).
          const int prev = (g + STAGES - 1) % STAGES;  // tile n - 1's stage
          // K's, then V's: wait for the stage, copy, and publish tile n - 1's part (when
          // K_{n-1} or V_{n-1} landed, the two groups committed after it may not have).
          // V's pool strides are K's times V_HEAD_DIM / HEAD_DIM (each is a multiple of the row).
          auto copy_part = [&](bool value, unsigned long long* empty, unsigned char* dst,
                               const unsigned short* pool, unsigned long long* full) {
            sm90::mbarrier_wait(&empty[s], parity);
            if (value) {
              prefix_prefill::sm90_wgmma::copy_context_tile<V_HEAD_DIM, TILE_N, BOX_TOKENS,
                                                            INTERLEAVED>(
                  dst, pool, item.kv_head * (p.head_stride / HEAD_DIM * V_HEAD_DIM), item.pages,
                  n * TILE_N, ctx, threadIdx.x, p.page_stride / HEAD_DIM * V_HEAD_DIM,
                  p.token_stride / HEAD_DIM * V_HEAD_DIM);
            } else {
              prefix_prefill::sm90_wgmma::copy_context_tile<HEAD_DIM, TILE_N, BOX_TOKENS,
                                                            INTERLEAVED>(
                  dst, pool, item.kv_head * p.head_stride, item.pages, n * TILE_N, ctx, threadIdx.x,
                  p.page_stride, p.token_stride);
            }
            cp_async_commit();
            if (n > 0) {
              cp_async_wait<2>();
              prefix_prefill::sm90_wgmma::publish_copies(&full[prev], lane);
            }
          };
          copy_part(false, k_empty, k_dst, p.k_pool, k_full);
          copy_part(true, v_empty, v_dst, p.v_pool, v_full);
          if (n == n_ctx - 1) {
            cp_async_wait<1>();
            prefix_prefill::sm90_wgmma::publish_copies(&k_full[s], lane);
            cp_async_wait<0>();
            prefix_prefill::sm90_wgmma::publish_copies(&v_full[s], lane);
          }
        } else if (!COPY && n < n_ctx) {
          // Lane b loads box b (keys key0 + b * BOX_TOKENS ..) when it holds a context key.
          const int key = n * TILE_N + lane * BOX_TOKENS;
          const bool load = lane < BOXES && key < ctx;
          const int page = load ? __ldg(item.pages + key / p.page_size) : 0;
          const int slot = load ? key % p.page_size : 0;
          const int boxes = __popc(__ballot_sync(0xffffffffu, load));
          // Interleaved, the pool maps' coordinates (paged_pool_interleaved_tensor_map): NHD (0,
          // 0, kv head x blocks, slot / 8, page), HND (0, 0, 0, kv head x page_size / 8 + slot /
          // 8, page). Column-block-major (paged_pool_tensor_map): NHD (dim, kv head, slot, page),
          // HND (dim, slot, kv head, page), a box per column block.
          const int y = (p.hnd ? item.kv_head * (p.page_size / 8) : 0) + slot / 8;
          const int c1 = p.hnd ? slot : item.kv_head, c2 = p.hnd ? item.kv_head : slot;
          auto load_part = [&](bool value, unsigned long long* empty, unsigned long long* full,
                               unsigned char* dst, const TensorMapBytes* map) {
            const int PART_BLOCKS = value ? V_BLOCKS : BLOCKS;  // a constant once inlined
            const int PART_BOX_BYTES = PART_BLOCKS * BOX_TOKENS * ROW_BYTES;
            sm90::mbarrier_wait(&empty[s], parity);
            if (lane == 0) sm90::mbarrier_expect_bytes(&full[s], boxes * PART_BOX_BYTES);
            __syncwarp();
            if (!load) return;
            if constexpr (INTERLEAVED) {
              const int x = p.hnd ? 0 : item.kv_head * PART_BLOCKS;
              sm90::tma_load_5d(dst + lane * PART_BOX_BYTES, map, 0, 0, x, y, page, &full[s]);
            } else {
#pragma unroll
              for (int c = 0; c < PART_BLOCKS; ++c) {
                sm90::tma_load_4d(dst + c * KV_BLOCK + lane * BOX_TOKENS * ROW_BYTES, map, c * 64,
                                  c1, c2, page, &full[s]);
              }
            }
          };
          load_part(false, k_empty, k_full, k_dst, &p.k_map);
          load_part(true, v_empty, v_full, v_dst, &p.v_map);
        } else if (lane == 0) {
          // A new-token tile, one box of K_new and one of V_new: warp 0 loads it; the other
          // producer warps (COPY) arrive for theirs.
          // Interleaved: one box of (64, 8, blocks, TILE_N / 8) at 8-row group `group`;
          // column-block-major: a box of 64 dims x TILE_N rows per column block.
          const int row = item.info.new_start + (n - n_ctx) * TILE_N;  // rows start at 16k
          auto load_new = [&](bool value, unsigned long long* empty, unsigned long long* full,
                              unsigned char* dst, const TensorMapBytes* map) {
            const int PART_BLOCKS = value ? V_BLOCKS : BLOCKS;  // a constant once inlined
            sm90::mbarrier_wait(&empty[s], parity);
            if (warp != 0) {
              sm90::mbarrier_arrive(&full[s]);
              return;
            }
            sm90::mbarrier_expect_bytes(&full[s], PART_BLOCKS * KV_BLOCK);
            if constexpr (INTERLEAVED) {
              sm90::tma_load_4d(dst, map, 0, 0, item.kv_head * PART_BLOCKS, row / 8, &full[s]);
            } else {
#pragma unroll
              for (int c = 0; c < PART_BLOCKS; ++c)
                sm90::tma_load_3d(dst + c * KV_BLOCK, map, c * 64, item.kv_head, row, &full[s]);
            }
          };
          load_new(false, k_empty, k_full, k_dst, &p.k_new_map);
          load_new(true, v_empty, v_full, v_dst, &p.v_new_map);
        }
      }
      // The next item is drawn once this one's loads are issued (a few tiles before the
      // consumers finish it), as a non-persistent grid would start a CTA where one ends.
      if (threadIdx.x == 0) next = sm90_persistent::next_item(p.schedule, p.items);
    }
  }

  // ---- Consumers (kernels/common/sm90_attention.cuh) ----
  sm90::setmaxnreg_inc<prefix_prefill::sm90_wgmma::consumer_registers(CONSUMERS, WARPGROUP_LOADS,
                                                                      KV_FP8, REGISTER_ESTIMATE)>();
  const int consumer = warpgroup - 1;
  const int tid = threadIdx.x % 128;
  const int wg_row0 = consumer * ROWS;  // the warpgroup's first row in the tile
  // This thread's two rows: r0 and r0 + 8.
  const int r0 = wg_row0 + sm90_attention::accumulator_row(tid, 0);
  sm90_attention::Consumer<PRODUCTS, HEAD_DIM, TILE_M, TILE_N, STAGES, INTERLEAVED, false,
                           V_HEAD_DIM, DTYPE>
      c;
  int g = 0;                       // key tiles of the CTA's earlier items
  unsigned int zeroed_parity = 0;  // of v_zeroed's next phase
  sm90_attention::TurnStream stream{consumer};
  for (int k = 0;; ++k) {
    const int b = queue.buffer(k);
    const int index = stream.announced(queue, k);
    if (index < 0) return;
    const Item item(p, index);
    const int t0 = item.t0, rows = item.rows, n_ctx = item.n_ctx;
    const int ctx = item.info.context_len, q_len = item.info.query_len;
    // The key tiles consumer warpgroup w needs: the context, then new-token tiles up to its last
    // row's token (padding rows need none).
    auto tiles_of = [&](int w) {
      const int row0 = w * ROWS;
      return row0 < rows ? n_ctx + item.new_tiles(p, t0 + (min(rows, row0 + ROWS) - 1) / p.group)
                         : 0;
    };
    const int my_tiles = tiles_of(consumer);
    const int other_tiles = CONSUMERS == 2 ? tiles_of(1 - consumer) : 0;
    const sm90_attention::IssueTurns turns = stream.next(my_tiles, other_tiles);
    // Padding rows borrow a valid token.
    const int token0 = t0 + min(r0, rows - 1) / p.group;
    const int token1 = t0 + min(r0 + 8, rows - 1) / p.group;
    const int limit0 = p.causal ? token0 : sm90_attention::kNoLimit;
    const int limit1 = p.causal ? token1 : sm90_attention::kNoLimit;
    // New-token keys from new_mask_from on are hidden from at least one row of the warpgroup.
    const int new_mask_from = p.causal ? min(q_len, t0 + wg_row0 / p.group + 1) : q_len;
    // The last context tile's rows from ctx_rows on lie past the context: zeroed in V (TMA
    // tiles; copied tiles are zero-filled already). The first consumer warpgroup zeroes them.
    const int ctx_rows = ctx - (n_ctx - 1) * TILE_N;
    const bool zeroes = !WARPGROUP_LOADS && n_ctx > 0 && ctx_rows < TILE_N;

    // An fp8 cache's K scale (the item's kv head's) multiplies every logit of the item.
    c.init(tid, KV_SCALES ? p.score_scale * p.k_scale[item.kv_head] : p.score_scale, p.cap_log2);
    c.run(
        sm90_attention::KvPipeline{k_tiles, v_tiles, k_full, k_empty, v_full, v_empty},
        q_tiles + b * Q_BYTES + consumer * ROWS * ROW_BYTES, &q_full[b], my_tiles, item.n_tiles,
        turns,
        [&](int n, float(&s)[TILE_N / 2]) {
          if (n < n_ctx) {
            if (n == n_ctx - 1 && ctx_rows < TILE_N)
              sm90_attention::mask_scores<TILE_N>(s, tid, n * TILE_N, ctx, sm90_attention::kNoLimit,
                                                  sm90_attention::kNoLimit);
          } else {
            const int j0 = (n - n_ctx) * TILE_N;
            if (j0 + TILE_N > new_mask_from)
              sm90_attention::mask_scores<TILE_N>(s, tid, j0, q_len, limit0, limit1);
          }
        },
        [&](int n) {
          if (!zeroes || n != n_ctx - 1) return;
          if (consumer == 0) {
            unsigned char* v = v_tiles + ((g + n) % STAGES) * V_BYTES;
            constexpr int ROW_CHUNKS = V_BLOCKS * 8;  // 16-byte chunks of a whole row's blocks
            const int chunks = (TILE_N - ctx_rows) * ROW_CHUNKS;
            for (int i = tid; i < chunks; i += 128) {
              const int row = ctx_rows + i / ROW_CHUNKS, chunk = i % ROW_CHUNKS;
              *reinterpret_cast<uint4*>(v + prefix_prefill::sm90_wgmma::tile_chunk_offset(
                                                row, chunk, V_HEAD_DIM, TILE_N, INTERLEAVED)) =
                  make_uint4(0, 0, 0, 0);
            }
            sm90::fence_proxy_async_shared();  // before wgmma (and TMA, later) read these bytes
            sm90::mbarrier_arrive(v_zeroed);
          }
          sm90::mbarrier_wait(v_zeroed, zeroed_parity);
        },
        sm90_attention::ItemCursor{queue.parity(k), g, &q_empty[b]});
    g += item.n_tiles;
    if (zeroes) zeroed_parity ^= 1;

    // Normalise (the sink joins the denominator; an fp8 cache's V scale comes in here) and store
    // this thread's two rows straight from registers, while the producer loads the next item's
    // first tiles.
    c.reduce_row_sums();
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = r0 + 8 * h;
      const bool valid = r < rows;  // every lane takes part in store_row's shuffles
      const int token = t0 + r / p.group, q_head = item.kv_head * p.group + r % p.group;
      const float sum = c.row_sum[h];
      float inv = 0.0f;  // no visible key: zeros, even with a sink
      if (valid && sum > 0.0f) {
        if (p.sink_log2 != nullptr) {
          const float top = c.max_log2(h), sink = p.sink_log2[q_head];
          const float both = fmaxf(top, sink);
          const float keep = exp2f(top - both);
          inv = keep / (sum * keep + exp2f(sink - both));
        } else {
          inv = 1.0f / sum;
        }
        if (KV_SCALES) inv *= p.v_scale[item.kv_head];
      }
      c.store_row(
          static_cast<unsigned short*>(p.out) +
              ((long long)(item.info.q_start + token) * p.num_q_heads + q_head) * V_HEAD_DIM,
          h, inv, valid);
    }
  }
}

}  // namespace attn
