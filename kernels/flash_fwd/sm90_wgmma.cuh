// flash_fwd.sm90_wgmma: dense flash attention forward on Hopper (sm_90a), FlashAttention-3 style:
// TMA loads completing on mbarriers, wgmma from shared memory, a producer warpgroup and one to
// three consumer warpgroups, and each tile's softmax overlapped with the tensor cores.
//
// Computes, for every sequence s of a variable-length batch (cu_seqlens), query i < q_len and q
// head h (kv head h / group),
//   out[s, i, h] = softmax_j(scale * q[s, i, h] . k[s, j, h / group]) v[s, j, h / group]
//   lse[s, i, h] = log(sum_j exp(scale * q . k_j))            (natural log, optional)
// over the keys j < kv_len the mask lets through: all of them, or with CAUSAL j <= i + (kv_len -
// q_len) (aligned to the bottom right when the lengths differ). A row that sees no key writes
// zeros and lse = -inf. The same semantics as flash_fwd.sm80_mma.
//
// Layout: Q [total_q, num_q_heads, head_dim] and out [total_q, num_q_heads, v_head_dim]; K and V
// contiguous [total_kv, num_kv_heads, head_dim] and [.., v_head_dim] (flash_fwd_gather_kv makes
// them so from the paged pool, once, outside the timing; V_HEAD_DIM is head_dim, or 128 beside a
// head_dim of 192). The TMA maps view Q, K and V as 3-D tensors (dims, heads, tokens), the row
// innermost: a box of 64 columns x 1 head x rows at dim 64 c is column block c of one head's rows,
// and at head dims 80 and 96 the second box's columns past the row are zero-filled by TMA (no
// memory read; no wgmma reads them either: sm90_attention.cuh). Rows outside the tensor
// (past its end, or before its start: a negative row coordinate) are zero-filled by TMA; keys
// past the end of a sequence (the next sequence's) are loaded but masked, query rows before a
// sequence's first (the top query tile, Item) are never stored.
//
// Work decomposition (a persistent grid; block = 128 x (1 + CONSUMERS)):
// - A work item is TILE_M = 64 x CONSUMERS query rows of one sequence and one q head. The items
//   are the query tiles of every sequence times the q heads, in the host's order (p.work,
//   flash_fwd_work_order): head-major, each head's tiles heaviest first, the order in which the
//   hardware handed out the CTAs of the earlier grid of one CTA per item, except that the last
//   heads' items may be ordered together, heaviest first, so that the grid ends on light items.
// - The grid is at most one CTA per SM (context.target.sm_count): CTA b starts with item b and
//   then draws the next undone item from a counter in global memory once its producer has
//   issued the current item's loads (sm90_persistent::next_item; the last CTA to draw past the
//   end zeroes the counters for the next launch). So one CTA's prologue (Q's load, the pipeline's
//   fill) and epilogue (the stores) overlap its neighbours' items instead of being exposed: key
//   tiles are numbered across the CTA's items (tile g in stage g % STAGES), so the producer fills
//   the stages with the next item's first tiles while the consumers finish the current one and
//   store it. With two Q buffers (where they fit, flash_fwd::sm90_wgmma::q_buffers) the next item's
//   Q loads then too; each consumer thread releases a Q buffer once its last S = Q K^T of the item
//   is done (or, where the output goes out through it, once it copied its share of it out). The
//   producer announces each item in a shared slot beside the buffer's barriers: its index (-1 when
//   there are none left) and what the consumers need of it (flash_fwd::sm90_wgmma::SlotField), so
//   that they read no global memory at an item's start (sm90_persistent::ItemQueue).
// - Warpgroup 0 is the producer: after setmaxnreg.dec, one thread issues TMA loads of each item's
//   Q and of K and V for each key tile of TILE_N keys into STAGES buffers each. K and V have their
//   own full barriers (TMA completes its bytes on them) and empty barriers (one arrival per
//   consumer warp once its wgmmas reading the buffer are done), so S = Q K^T can start before V
//   has landed.
// - Warpgroups 1..CONSUMERS are consumers (setmaxnreg.inc): each owns 64 query rows, their fp32
//   output accumulator and online-softmax statistics in registers.
// - Per key tile n, a consumer issues S_n = Q K_n^T (wgmma SS, both from shared memory), then
//   O += P_{n-1} V_{n-1} (wgmma RS: P from registers as the A operand, V from shared memory),
//   waits for S_n only, and runs the masking and softmax of S_n while the P V product runs on the
//   tensor cores (FA3's intra-warpgroup overlap); then waits for P V, rescales O and converts S_n
//   into the next P. At head dim 64, where the softmax's FP32 work is largest per product, P V
//   also multiplies P by 8 columns of ones (wgmma m64n72k16, V's second column block being the
//   ones), so O's extra columns hold each row's sum and the softmax adds none itself
//   (flash_fwd::sm90_wgmma::tensor_row_sums).
// - Across items (head dims 64 and 128 with two Q buffers) a consumer streams: the last P V of
//   an item goes with the next item's first S, and the item's output is stored right after them
//   (the consumer section below says when).
// - Shared rows (head dim 64, three consumers, not causal): an item whose rows are all the last
//   warpgroup's (the 64-row top tile, Item) has each warpgroup take every third key tile of
//   those rows; the last warpgroup merges the others' partial O and statistics from a scratch
//   area and stores the rows (flash_fwd::sm90_wgmma::shares_rows).
// - Stacked heads (head dim 64, two or three consumers, causal): that top tile, for up to
//   CONSUMERS consecutive q heads, is one item (listed once per stack): warpgroup w takes head
//   q_head + w, its 64 rows loaded into w's rows of the Q buffer (p.q_rows_map), the heads' key
//   tiles in turn in the CTA's stream; each warpgroup stores its own head's rows
//   (flash_fwd::sm90_wgmma::stacks_heads).
// - Causal: key tiles past the item's last visible key are never loaded (an item whose rows see
//   no key loads neither those nor its Q); a consumer whose rows see fewer tiles skips the
//   products of the rest (it only passes their barriers). The mask is applied only on tiles
//   that reach a hidden key of the warpgroup's rows. At head dim 64 with three consumers, a
//   warpgroup whose rows see none of its last tile's second half (with 128-key tiles every other
//   warpgroup) multiplies and softmaxes that tile's first half only
//   (flash_fwd::sm90_wgmma::halves_last_tile).
// - The last key tile, without a causal mask: where TILE_N does not divide the keys, a sequence's
//   last tile holds fewer (1024 keys in 176-key tiles: 144 in the sixth). LAST_KEYS, which the
//   host works out from the batch (flash_fwd::sm90_wgmma::last_tile_keys: the most any sequence's
//   last tile holds, in whole k16 steps), bounds every item's: its S is one wgmma m64nLAST_KEYS per
//   k16 step, its softmax and pack take those keys and its P V LAST_KEYS / 16 k16 steps. Keys past
//   them are past every sequence's end (P = 0), so a one-tile item's whole-tile P may go through
//   the same P V. TILE_N: the whole tile (under a causal mask, and where ptxas serialised the
//   narrow tile's wgmmas: flash_fwd::sm90_wgmma::narrows_last_tile).
//
// Shared memory (from a 1024-byte boundary, the period of the 128-byte swizzle):
//   Q [Q_BUFFERS][BLOCKS][TILE_M][64], K [STAGES][BLOCKS][TILE_N][64] (BLOCKS = column_blocks(
//   HEAD_DIM), whole 64-column blocks), V [STAGES][column_blocks(V_HEAD_DIM)][TILE_N][64],
//   at head dim 64 [16][64] ones (the row sums, below), barriers, item slots.
// Every [rows][64] column block is what a TMA box with CU_TENSOR_MAP_SWIZZLE_128B writes: rows of
// 128 bytes, 16-byte chunks XOR-swizzled by (row % 8), 8-row atoms 1024 bytes apart.
// - Q (A of S = Q K^T, K-major) and K (B of S, K-major: B is [N = keys, K = dims]): descriptor
//   K-major, SBO = 1024; k16 step kk reads column block kk / 4 at byte (kk % 4) x 32.
// - V (B of O = P V, [K = keys, N = dims]): its rows are keys with dims contiguous, i.e. B is
//   MN-major. wgmma reads it through a descriptor with the transpose bit (imm-trans-b = 1, allowed
//   for 16-bit types): SBO = 1024 (8 keys of 128 bytes), LBO = TILE_N x 128 (the next column block
//   of 64 dims); k16 step kk starts at key 16 kk, byte 2048 kk. One wgmma m64nV_HEAD_DIMk16 covers
//   every dim (N <= 256).
//
// Tunables and why they exist:
//   TILE_M     64 x CONSUMERS query rows per work item: K/V traffic per query row
//   TILE_N     keys per stage: scores in registers (any multiple of 16 from 64 to 256 where they
//              fit beside the head_dim accumulators, see the traits: FlashAttention-3's 176 at
//              head_dim 128, 80 at 256) vs barrier and softmax overhead per key, and how well the
//              tiles divide the sequences' keys
//   STAGES     TMA buffers of K and of V in flight
//   CONSUMERS  1 to 3 consumer warpgroups: more share each K/V tile (fewer loads per row) and
//              hide each other's softmax; three (160 registers each, tiles up to 128 keys at
//              head_dim 64, 80 at 128) where the exponentials take as long as the products
#pragma once

#include "kernels/common/sm90_attention.cuh"
#include "kernels/common/sm90_persistent.cuh"
#include "kernels/flash_fwd/gather_kv.cuh"
#include "kernels/flash_fwd/sm90_wgmma_params.hpp"
#include "kernels/flash_fwd/sm90_wgmma_traits.hpp"

namespace attn {

namespace flash_fwd::sm90_wgmma {

// Key tiles the query rows [0, row_end) of a sequence need: all of its keys, or with CAUSAL those
// up to the last row's last visible key (none when row_end <= 0).
__device__ __forceinline__ int key_tiles(int row_end, int q_len, int kv_len, int tile_n,
                                         bool causal) {
  if (row_end <= 0) return 0;
  int keys = kv_len;
  if (causal) keys = max(0, min(kv_len, min(row_end, q_len) + kv_len - q_len));
  return (keys + tile_n - 1) / tile_n;
}

// One work item of the persistent grid: query rows m0 .. m0 + TILE_M - 1 of one sequence and one
// q head (entry `index` of p.work), and the key tiles they need. Query tile m of a
// sequence ends at row q_len - m TILE_M (QueryTilesFrom::end): where TILE_M does not divide
// q_len, the top tile starts above row 0 (m0 < 0: TMA loads zeros or the previous sequence's
// rows there, and they are never stored), and under a causal mask that partial tile is the one
// that sees the fewest keys. Three consumers at head dim 64 make 1024 rows five tiles of 192 and
// one of 64: from the end the 64 see one key tile of 128, from the start they would see all
// eight with two of the three consumer warpgroups idle. Measured on an H200 (BENCHMARKS.md,
// flash_fwd, "query tiles from the end"): d64 16x1024 causal 224.22 / 224.35 -> 217.62 / 216.18
// us, 4x4096 causal 650.64 / 645.06 -> 635.62 / 636.78.
template <int TILE_M, int TILE_N, bool CAUSAL>
struct Item {
  int m0, q_head, q_begin, q_len, kv_begin, kv_len;
  int n_tiles;  // those its last valid row needs (with CAUSAL the most of any row)

  __device__ __forceinline__ Item(const FlashFwdSm90Params& p, int index) {
    const int seq = p.work[3 * index], tile = p.work[3 * index + 1];
    q_head = p.work[3 * index + 2];
    q_begin = p.cu_seqlens_q[seq];
    q_len = p.cu_seqlens_q[seq + 1] - q_begin;
    m0 = q_len - (tile + 1) * TILE_M;
    kv_begin = p.cu_seqlens_kv[seq];
    kv_len = p.cu_seqlens_kv[seq + 1] - kv_begin;
    n_tiles = key_tiles(m0 + TILE_M, q_len, kv_len, TILE_N, CAUSAL);
  }
};

// What a consumer knows of a work item: its slot in the work queue, as the producer wrote it
// (kSlotInts ints, SlotField).
struct ItemView {
  int index, m0, q_head, q_begin, q_len, kv_len, n_tiles;
  int heads;  // a stack's (flash_fwd::sm90_wgmma::stacks_heads; written only where the config
              // stacks)
  __device__ __forceinline__ explicit ItemView(const int (&slot)[kSlotInts])
      : index(slot[kSlotIndex]),
        m0(slot[kSlotM0]),
        q_head(slot[kSlotQHead]),
        q_begin(slot[kSlotQBegin]),
        q_len(slot[kSlotQLen]),
        kv_len(slot[kSlotKvLen]),
        n_tiles(slot[kSlotTiles]),
        heads(slot[kSlotHeads]) {}
  // The key tiles consumer warpgroup w needs (rows before the sequence's first need none).
  template <int TILE_N, bool CAUSAL>
  __device__ __forceinline__ int tiles_of(int w) const {
    const int row0 = m0 + w * kConsumerRows;
    return key_tiles(row0 + kConsumerRows, q_len, kv_len, TILE_N, CAUSAL);
  }
};

}  // namespace flash_fwd::sm90_wgmma

template <int DTYPE, int HEAD_DIM, int V_HEAD_DIM, int TILE_M, int TILE_N, int STAGES,
          int CONSUMERS, bool CAUSAL, int LAST_KEYS, bool KV_SCALES = false>
__global__ void __launch_bounds__(flash_fwd::sm90_wgmma::threads(CONSUMERS), 1)
    flash_fwd_sm90_wgmma(const __grid_constant__ FlashFwdSm90Params p) {
  static_assert(flash_fwd::sm90_wgmma::check(HEAD_DIM, TILE_M, TILE_N, STAGES, CONSUMERS,
                                             V_HEAD_DIM) == flash_fwd::sm90_wgmma::kOk,
                "invalid flash_fwd.sm90_wgmma config: see flash_fwd::sm90_wgmma::check");
  static_assert(LAST_KEYS % 16 == 0 && LAST_KEYS >= 16 && LAST_KEYS <= TILE_N,
                "LAST_KEYS: whole k16 steps of a key tile");
  static_assert(
      LAST_KEYS == TILE_N || flash_fwd::sm90_wgmma::narrows_last_tile(HEAD_DIM, TILE_N, CAUSAL),
      "the last tile is narrowed only where flash_fwd::sm90_wgmma::narrows_last_tile says");
  constexpr int Q_BYTES = flash_fwd::sm90_wgmma::q_bytes(HEAD_DIM, TILE_M);
  constexpr int K_BYTES = flash_fwd::sm90_wgmma::kv_tile_bytes(HEAD_DIM, TILE_N);
  constexpr int V_BYTES = flash_fwd::sm90_wgmma::kv_tile_bytes(V_HEAD_DIM, TILE_N);
  constexpr int BLOCKS = flash_fwd::sm90_wgmma::column_blocks(HEAD_DIM);
  constexpr int ROW_BYTES = flash_fwd::sm90_wgmma::kBlockRowBytes;  // 128
  constexpr int Q_BLOCK = TILE_M * ROW_BYTES;                       // one column block of Q, bytes
  static_assert(flash_fwd::sm90_wgmma::accumulator_row(0, 2) == 8 &&
                    flash_fwd::sm90_wgmma::accumulator_column(1, 5) == 11,
                "accumulator layout");
  constexpr int ROWS = flash_fwd::sm90_wgmma::kConsumerRows;  // 64 rows per consumer warpgroup
  // Item k of the CTA has its Q in buffer k % Q_BUFFERS.
  constexpr int Q_BUFFERS =
      flash_fwd::sm90_wgmma::q_buffers(HEAD_DIM, TILE_M, TILE_N, STAGES, V_HEAD_DIM);
  using Item = flash_fwd::sm90_wgmma::Item<TILE_M, TILE_N, CAUSAL>;
  // Not under a causal mask: there a sequence's top tile sees few keys (one tile when none are
  // cached), and the causal programs spilled 16 bytes with it at 2 and 3 stages; such tiles are
  // stacked there instead.
  constexpr bool SHARES_ROWS = flash_fwd::sm90_wgmma::shares_rows(HEAD_DIM, TILE_M) && !CAUSAL;
  constexpr bool STACKS = flash_fwd::sm90_wgmma::stacks_heads(HEAD_DIM, TILE_M, CAUSAL);
  // The warpgroup whose rows a shared or stacked tile's are.
  constexpr int kOwner = CONSUMERS - 1;
  const float kNegInf = -__int_as_float(0x7f800000);

  extern __shared__ unsigned char shared_raw[];
  unsigned char* shared = reinterpret_cast<unsigned char*>(
      (reinterpret_cast<unsigned long long>(shared_raw) + 1023) & ~1023ull);
  unsigned char* q_tiles = shared;                        // [Q_BUFFERS][BLOCKS][TILE_M][64]
  unsigned char* k_tiles = shared + Q_BUFFERS * Q_BYTES;  // [STAGES][BLOCKS][TILE_N][64]
  unsigned char* v_tiles = k_tiles + STAGES * K_BYTES;    // [STAGES][V blocks][TILE_N][64]
  // Row sums on the tensor cores (flash_fwd::sm90_wgmma::tensor_row_sums): [16][64] ones.
  constexpr bool ROW_SUMS = flash_fwd::sm90_wgmma::tensor_row_sums(HEAD_DIM);
  unsigned char* ones = v_tiles + STAGES * V_BYTES;
  unsigned long long* q_full =
      reinterpret_cast<unsigned long long*>(ones + flash_fwd::sm90_wgmma::ones_bytes(HEAD_DIM));
  unsigned long long* q_empty = q_full + Q_BUFFERS;
  unsigned long long* k_full = q_empty + Q_BUFFERS;
  unsigned long long* k_empty = k_full + STAGES;
  unsigned long long* v_full = k_empty + STAGES;
  unsigned long long* v_empty = v_full + STAGES;
  // The item each Q buffer announces, with what the consumers need of it
  // (flash_fwd::sm90_wgmma::SlotField).
  const sm90_persistent::ItemQueue<Q_BUFFERS, flash_fwd::sm90_wgmma::kSlotInts> queue{
      q_full, q_empty, reinterpret_cast<volatile int*>(v_empty + STAGES)};
  const sm90_attention::KvPipeline kv{k_tiles, v_tiles, k_full, k_empty, v_full, v_empty};

  if (threadIdx.x == 0) {
    queue.init(CONSUMERS);
    for (int s = 0; s < STAGES; ++s) {
      sm90::mbarrier_init(&k_full[s], 1);  // the producer's arrive.expect_tx
      sm90::mbarrier_init(&v_full[s], 1);
      sm90::mbarrier_init(&k_empty[s], CONSUMERS * 4);  // one arrival per consumer warp
      sm90::mbarrier_init(&v_empty[s], CONSUMERS * 4);
    }
    sm90::fence_barrier_init();
  }
  if constexpr (ROW_SUMS) {
    // Written by the threads and read by wgmma (the async proxy): each writer fences before the
    // barrier.
    for (int i = threadIdx.x; i < sm90_attention::kOnesBytes / 4; i += blockDim.x)
      reinterpret_cast<unsigned int*>(ones)[i] = packed_ones<DTYPE>();
    sm90::fence_proxy_async_shared();
  }
  __syncthreads();

  const int warpgroup = threadIdx.x / 128;
  if (warpgroup == 0) {
    // Producer: one thread issues every load. Key tiles are numbered across the CTA's items: tile
    // g goes to stage g % STAGES once every consumer warp released tile g - STAGES (a fresh empty
    // barrier passes parity 1), so the next item's first tiles load while the consumers finish
    // the current one.
    sm90::setmaxnreg_dec<flash_fwd::sm90_wgmma::producer_registers(CONSUMERS)>();
    if (threadIdx.x != 0) return;
    int next = blockIdx.x;  // the item announced next
    int g = 0;              // key tiles loaded so far
    for (int k = 0;; ++k) {
      // Item k: its Q goes to its buffer once every consumer thread is done with the buffer's
      // previous item. The item is looked up before that wait (with one Q buffer the wait ends
      // only as the consumers finish the current item). An item whose rows see no key needs no
      // Q: a plain arrival announces it.
      const Item item(p, min(next, p.items - 1));
      const int index = queue.claim(k, next, p.items);
      if (index < 0) return;
      queue.write(k, flash_fwd::sm90_wgmma::kSlotM0, item.m0);
      queue.write(k, flash_fwd::sm90_wgmma::kSlotQHead, item.q_head);
      queue.write(k, flash_fwd::sm90_wgmma::kSlotQBegin, item.q_begin);
      queue.write(k, flash_fwd::sm90_wgmma::kSlotQLen, item.q_len);
      queue.write(k, flash_fwd::sm90_wgmma::kSlotKvLen, item.kv_len);
      unsigned long long* full = &queue.full[queue.buffer(k)];
      if (STACKS && flash_fwd::sm90_wgmma::stacked_item(item.m0, CONSUMERS)) {
        // A stack: warpgroup w's rows (the top tile's, the last warpgroup's place in the
        // sequence) of q head q_head + w go to w's rows of the buffer, and key tile n of each
        // head follows the one before in turn.
        const int heads =
            flash_fwd::sm90_wgmma::stacked_heads(item.q_head, p.num_q_heads, CONSUMERS);
        const int row = item.q_begin + item.m0 + kOwner * ROWS;
        unsigned char* q_buffer = q_tiles + queue.buffer(k) * Q_BYTES;
        queue.write(k, flash_fwd::sm90_wgmma::kSlotTiles, heads * item.n_tiles);
        queue.write(k, flash_fwd::sm90_wgmma::kSlotHeads, heads);
        if (item.n_tiles > 0) {
          sm90::mbarrier_expect_bytes(full, heads * BLOCKS * ROWS * ROW_BYTES);
          for (int w = 0; w < heads; ++w) {
#pragma unroll
            for (int c = 0; c < BLOCKS; ++c) {
              sm90::tma_load_3d(q_buffer + c * Q_BLOCK + w * ROWS * ROW_BYTES, &p.q_rows_map,
                                c * 64, item.q_head + w, row, full);
            }
          }
        } else {
          sm90::mbarrier_arrive(full);
        }
        for (int n = 0; n < item.n_tiles; ++n) {
          for (int w = 0; w < heads; ++w, ++g) {
            sm90_attention::load_kv_tile_rows<HEAD_DIM, TILE_N, STAGES, V_HEAD_DIM>(
                k_tiles, v_tiles, kv, &p.k_map, &p.v_map, g, (item.q_head + w) / p.group,
                item.kv_begin + n * TILE_N);
          }
        }
        next = sm90_persistent::next_item(p.schedule, p.items);
        continue;
      }
      queue.write(k, flash_fwd::sm90_wgmma::kSlotTiles, item.n_tiles);
      if constexpr (STACKS) queue.write(k, flash_fwd::sm90_wgmma::kSlotHeads, 1);
      if (item.n_tiles > 0) {
        sm90::mbarrier_expect_bytes(full, Q_BYTES);
#pragma unroll
        for (int c = 0; c < BLOCKS; ++c) {
          sm90::tma_load_3d(q_tiles + queue.buffer(k) * Q_BYTES + c * Q_BLOCK, &p.q_map, c * 64,
                            item.q_head, item.q_begin + item.m0, full);
        }
      } else {
        sm90::mbarrier_arrive(full);
      }
      const int kv_head = item.q_head / p.group;
      for (int n = 0; n < item.n_tiles; ++n, ++g) {
        sm90_attention::load_kv_tile_rows<HEAD_DIM, TILE_N, STAGES, V_HEAD_DIM>(
            k_tiles, v_tiles, kv, &p.k_map, &p.v_map, g, kv_head, item.kv_begin + n * TILE_N);
      }
      // The next item is drawn once this one's loads are issued (a few tiles before the
      // consumers finish it), as a non-persistent grid would start a CTA where one ends.
      next = sm90_persistent::next_item(p.schedule, p.items);
    }
  }

  // ---- Consumers (kernels/common/sm90_attention.cuh) ----
  // Each consumer warpgroup walks the CTA's items as one stream of key tiles: per tile n it
  // issues S_n with the P V of the tile before, which may be the previous item's last (streaming:
  // once both are done the previous item's output is stored and the item's first softmax runs,
  // while the other warpgroup's products occupy the tensor cores). An item streams into the next
  // when both warpgroups need every key tile of it and some of the next, and Q has two buffers
  // (with one, the next Q loads only once this item's last S is done), at head dims up to 128;
  // otherwise its last P V is issued alone and its output stored before the next item starts.
  sm90::setmaxnreg_inc<flash_fwd::sm90_wgmma::consumer_registers(CONSUMERS)>();
  using View = flash_fwd::sm90_wgmma::ItemView;
  const int consumer = warpgroup - 1;
  const int tid = threadIdx.x % 128, lane = tid % 32;
  const long long row_stride = (long long)p.num_q_heads * V_HEAD_DIM;  // the output's
  // Streaming needs the next item's Q in the other buffer, and registers for S_0 beside O while
  // the previous item's output is stored: at head_dim 256 (128 of O) ptxas spilled 676 bytes.
  // Three consumers do not stream (their register rule, flash_fwd::sm90_wgmma::check, is measured
  // without).
  constexpr bool STREAM = Q_BUFFERS == 2 && HEAD_DIM <= 128 && CONSUMERS <= 2;
  // Half key tiles (flash_fwd::sm90_wgmma::halves_last_tile): a warpgroup's last key tile whose
  // second half every row of it hides is multiplied and softmaxed over its first half only.
  constexpr bool HALF_LAST =
      flash_fwd::sm90_wgmma::halves_last_tile(HEAD_DIM, TILE_N, CAUSAL) && !STREAM;
  // The last key tile's keys without a causal mask (LAST_KEYS, the kernel's comment).
  constexpr bool NARROW_LAST = LAST_KEYS < TILE_N;
  // The keys a short last tile takes: half of it (causal) or LAST_KEYS (not).
  constexpr int LAST = HALF_LAST ? TILE_N / 2 : LAST_KEYS;
  auto tiles_of = [&](const View& it, int w) { return it.template tiles_of<TILE_N, CAUSAL>(w); };
  sm90_attention::Consumer<DTYPE, HEAD_DIM, TILE_M, TILE_N, STAGES, false, ROW_SUMS, V_HEAD_DIM> c;
  c.init(tid, p.scale_log2, 0.0f, ones);
  // An fp8 cache's K scale multiplies q head `q_head`'s logits: set before an item's first
  // softmax, once the previous item's output (which reads the scale for its LSE) is out.
  auto scale_for = [&](int q_head) {
    if constexpr (KV_SCALES) {
      c.set_score_scale(p.scale_log2 * p.k_scale[min(q_head, p.num_q_heads - 1) / p.group]);
    }
  };

  // At head_dim 128 with two Q buffers the output goes out through the warpgroup's rows of the
  // item's Q buffer (STAGED): each thread writes its two rows there (4 bytes per column pair, no
  // bank conflicts), then TMA stores them (below; a copy by the threads, each 8 lanes one 128-byte
  // row piece with 16-byte stores, where the tile reaches above the sequence). Direct stores of the
  // fragments (4 bytes per column pair, 16 bytes per row and warp instruction) had the consumers
  // wait on the load-store queue at every item's end (ncu, BENCHMARKS.md). The buffer is then
  // released after the copy rather than after the item's last S; with one Q buffer that would hold
  // up the next item's Q. Measured on an H200: 2% less time at head_dim 128 (16x1024 and 4x4096),
  // 3% to 5% more at 64 (whose 8 KiB of output per warpgroup and item the direct stores take in
  // stride), so the other head dims store directly. The direct stores are now 16 bytes per lane
  // (Consumer::store_row); against those the staged epilogue is level at head_dim 128 (d128
  // 16x1024 241.84 / 242.16 us staged, 242.37 / 242.93 direct; BENCHMARKS.md, flash_fwd,
  // "16-byte output stores"), and it stays.
  constexpr bool STAGED = Q_BUFFERS == 2 && HEAD_DIM == 128 && V_HEAD_DIM == 128;
  static_assert(!SHARES_ROWS || (!STREAM && !STAGED),
                "shared rows: no item streams into them, and their output is stored directly");
  static_assert(!STACKS || !STAGED, "stacked items store their rows directly");
  static_assert(!HALF_LAST || !STAGED, "a half tile releases Q after its S (no staged output)");
  // A staged warpgroup tile of 64 whole rows goes out by TMA (p.o_map): one thread of the
  // warpgroup issues the stores and releases the Q buffer only once they have read it, a key tile
  // into its next item (pending_q), so no consumer thread waits on the copy. A tile reaching
  // above the sequence (m0 < 0) is copied by the threads. Measured on an H200 (BENCHMARKS.md,
  // flash_fwd, "query tiles from the end"), against the threads' copy: d128 16x1024 253.82 /
  // 254.03 -> 251.82 / 251.47 us; 16x1024 causal 168.35 / 168.32 -> 167.31 / 168.06.
  int pending_q = -1;  // the Q buffer whose TMA store this thread has yet to see read
  auto release_stored = [&] {
    if (STAGED && pending_q >= 0) {
      sm90::tma_store_wait();
      sm90::mbarrier_arrive(&queue.empty[pending_q]);
      pending_q = -1;
    }
  };
  // Named barriers 1 .. CONSUMERS are the turns (IssueTurns).
  const int epilogue_barrier = 1 + CONSUMERS + consumer;
  auto sync_warpgroup = [&] {
    asm volatile("bar.sync %0, 128;\n" ::"r"(epilogue_barrier) : "memory");
  };
  // Normalise and store this thread's two rows of item k, `it`: `sum`, the rows' totals (after
  // reduce_row_sums), and `max_log2`, their reference maxima, give the LSE.
  auto store_output = [&](int k, const View& it, const float(&sum)[2], const float(&max_log2)[2]) {
    unsigned short* out =
        static_cast<unsigned short*>(p.out) + it.q_begin * row_stride + it.q_head * V_HEAD_DIM;
    const int wg_row0 = it.m0 + consumer * ROWS;
    const int row0 = wg_row0 + flash_fwd::sm90_wgmma::accumulator_row(tid, 0);
    float inv[2];
    // An fp8 cache's V scale (the item's kv head's) multiplies the output.
    const float v_scale = KV_SCALES ? p.v_scale[it.q_head / p.group] : 1.0f;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = row0 + 8 * h;
      inv[h] = sum[h] > 0.0f ? v_scale / sum[h] : 0.0f;  // no key: zeros
      // Rows above the sequence (m0 < 0) are not stored; every lane takes part in the shuffles.
      if constexpr (!STAGED) c.store_row(out + row * row_stride, h, inv[h], row >= 0);
      if (row < 0) continue;
      if (p.lse != nullptr && lane % 4 == 0) {
        const float kLn2 = 0.69314718055994531f;
        p.lse[(long long)(it.q_begin + row) * p.num_q_heads + it.q_head] =
            sum[h] > 0.0f ? (max_log2[h] + log2f(sum[h])) * kLn2 : kNegInf;
      }
    }
    if constexpr (STAGED) {
      unsigned char* tile = q_tiles + queue.buffer(k) * Q_BYTES + consumer * ROWS * ROW_BYTES;
      const bool by_tma = wg_row0 >= 0;  // every row in the sequence (tiles end at its last row)
      sync_warpgroup();                  // every warp's products that read this item's Q are done
      c.stage_output(tile, Q_BLOCK, inv);
      if (by_tma) sm90::fence_proxy_async_shared();  // the staged rows, before TMA reads them
      sync_warpgroup();
      if (by_tma) {
        if (tid == 0) {
#pragma unroll
          for (int block = 0; block < BLOCKS; ++block) {
            sm90::tma_store_2d(&p.o_map, it.q_head * V_HEAD_DIM + block * 64, it.q_begin + wg_row0,
                               tile + block * Q_BLOCK);
          }
          sm90::tma_store_commit();
          pending_q = queue.buffer(k);
        } else {
          sm90::mbarrier_arrive(&queue.empty[queue.buffer(k)]);
        }
        return;
      }
      constexpr int CHUNKS = ROWS * (ROW_BYTES / 16);  // 16-byte chunks per column block
#pragma unroll
      for (int x = tid; x < BLOCKS * CHUNKS; x += 128) {
        const int block = x / CHUNKS, row = (x % CHUNKS) / 8, chunk = x % 8;
        if (wg_row0 + row >= 0) {
          const uint4 v = *reinterpret_cast<const uint4*>(tile + block * Q_BLOCK + row * ROW_BYTES +
                                                          (chunk ^ (row % 8)) * 16);
          *reinterpret_cast<uint4*>(out + (wg_row0 + row) * row_stride + block * 64 + chunk * 8) =
              v;
        }
      }
      sm90::mbarrier_arrive(&queue.empty[queue.buffer(k)]);  // this thread's reads are done
    }
  };
  // Item k's output from the statistics in c, then O = 0 and fresh statistics.
  auto finish_item = [&](int k, const View& it) {
    c.reduce_row_sums();
    const float max_log2[2] = {c.max_log2(0), c.max_log2(1)};
    store_output(k, it, c.row_sum, max_log2);
    c.clear_output();
    c.reset_statistics();
  };

  auto stage = [](int t) { return t % STAGES; };  // key tile t of the CTA's stream
  auto phase = [](int t) { return unsigned(t / STAGES) & 1u; };
  // Passes the barriers of tile t, which another warpgroup multiplies, so the producer's
  // accounting (every consumer warp releases every tile) holds.
  auto pass_tile = [&](int t) {
    sm90::mbarrier_wait(&kv.k_full[stage(t)], phase(t));
    c.release(&kv.k_empty[stage(t)]);
    sm90::mbarrier_wait(&kv.v_full[stage(t)], phase(t));
    c.release(&kv.v_empty[stage(t)]);
  };
  // Key tile t of the stream at once (shared rows and stacks): S, waited for, its softmax by the
  // caller, then P V, waited for; no warpgroup holds a stage the producer needs for another
  // warpgroup's next tile, and the warpgroups' products overlap one another's softmax.
  auto scores_at = [&](const unsigned char* q_rows, int t) {
    sm90::mbarrier_wait(&kv.k_full[stage(t)], phase(t));
    c.issue_scores(q_rows, kv.k_tiles + stage(t) * K_BYTES);
    sm90::wgmma_wait<0>();
    c.release(&kv.k_empty[stage(t)]);
  };
  auto values_at = [&](int t) {
    sm90::mbarrier_wait(&kv.v_full[stage(t)], phase(t));
    c.issue_values(kv.v_tiles + stage(t) * V_BYTES);
    sm90::wgmma_wait<0>();
    c.release(&kv.v_empty[stage(t)]);
  };

  // Shared rows (flash_fwd::sm90_wgmma::shares_rows): item k, `it`, whose rows are all the last
  // warpgroup's, from key tile g0 of the CTA's stream. Each warpgroup multiplies those rows (the
  // last warpgroup's Q) by key tiles consumer, consumer + CONSUMERS, ... without turns (scores_at,
  // values_at); then the others save their partial results in the scratch area and the last
  // warpgroup merges them and stores the rows. Measured on an H200 (BENCHMARKS.md, flash_fwd,
  // "shared rows").
  float* scratch = const_cast<float*>(reinterpret_cast<volatile float*>(
      queue.slots + Q_BUFFERS * flash_fwd::sm90_wgmma::kSlotInts));
  auto sync_consumers = [] {
    asm volatile("bar.sync %0, %1;\n" ::"r"(1 + 2 * CONSUMERS), "r"(CONSUMERS * 128) : "memory");
  };
  auto shared_rows_item = [&](int k, const View& it, int g0) {
    const unsigned char* q_rows = q_tiles + queue.buffer(k) * Q_BYTES + kOwner * ROWS * ROW_BYTES;
    auto mask = [&](int n, float(&s)[TILE_N / 2]) {  // not causal: keys past the sequence
      if (n * TILE_N + TILE_N > it.kv_len)
        sm90_attention::mask_scores<TILE_N>(s, tid, n * TILE_N, it.kv_len, sm90_attention::kNoLimit,
                                            sm90_attention::kNoLimit);
    };
    scale_for(it.q_head);
    for (int n = 0; n < it.n_tiles; ++n) {
      const int t = g0 + n;
      if (n % CONSUMERS != consumer) {
        pass_tile(t);
        continue;
      }
      scores_at(q_rows, t);
      c.softmax(n, mask);
      c.rescale_and_pack();
      values_at(t);
    }
    sm90::mbarrier_arrive(&queue.empty[queue.buffer(k)]);  // its last S is done
    using Partial = decltype(c);
    if (consumer != kOwner) c.save_partial(scratch + consumer * Partial::kPartialFloats * 128);
    sync_consumers();
    if (consumer == kOwner) {
#pragma unroll
      for (int w = 0; w < kOwner; ++w) c.merge_partial(scratch + w * Partial::kPartialFloats * 128);
    }
    sync_consumers();  // the scratch is read: the next such item may rewrite it
    if (consumer == kOwner) {
      finish_item(k, it);
    } else {
      c.clear_output();
      c.reset_statistics();
    }
  };

  // A stack (flash_fwd::sm90_wgmma::stacks_heads): item k, `it`, from key tile g0 of the CTA's
  // stream. Warpgroup w < heads multiplies its own rows (those of q head it.q_head + w) by every
  // heads-th tile, w, w + heads, ..., without turns (scores_at, values_at), and passes the
  // others' barriers. Each then stores its head's rows.
  auto stacked_item = [&](int k, const View& it, int g0) {
    const int heads = it.heads, key_tiles = it.n_tiles / heads;
    const unsigned char* q_rows = q_tiles + queue.buffer(k) * Q_BYTES + consumer * ROWS * ROW_BYTES;
    // The causal mask: the last key this thread's first row sees (its place, it.m0 + kOwner *
    // ROWS + accumulator_row, plus the keys past the queries), and the first key some row of the
    // warpgroup does not see. The limits are worked out only for a tile that needs them.
    const int diagonal = it.m0 + kOwner * ROWS + it.kv_len - it.q_len;
    const int mask_from = max(0, min(it.kv_len, diagonal + 1));
    auto mask = [&](int n, float(&s)[TILE_N / 2]) {
      if (n * TILE_N + TILE_N <= mask_from) return;
      const int limit0 = diagonal + flash_fwd::sm90_wgmma::accumulator_row(tid, 0);
      sm90_attention::mask_scores<TILE_N>(s, tid, n * TILE_N, it.kv_len, limit0, limit0 + 8);
    };
    scale_for(it.q_head + consumer);
    for (int n = 0; n < key_tiles; ++n) {
      const int first = g0 + n * heads, end = first + heads;
      const int mine = first + consumer;  // this warpgroup's tile n, where it has a head
      for (int t = first; t < min(mine, end); ++t) pass_tile(t);
      if (consumer < heads) {
        scores_at(q_rows, mine);
        c.softmax(n, mask);
        c.rescale_and_pack();
        values_at(mine);
      }
      for (int t = mine + 1; t < end; ++t) pass_tile(t);
    }
    sm90::mbarrier_arrive(&queue.empty[queue.buffer(k)]);  // its last S is done
    if (consumer < heads) {
      View own = it;  // this warpgroup's head, its rows placed as the last warpgroup's
      own.q_head += consumer;
      own.m0 += (kOwner - consumer) * ROWS;
      finish_item(k, own);  // rows that see no key: zeros
    }
  };
  sm90_attention::TurnStream stream{consumer, false, CONSUMERS};
  int slot[flash_fwd::sm90_wgmma::kSlotInts];
  queue.announced(0, slot);
  View item(slot);
  int g = 0;             // key tiles of the CTA's earlier items
  bool carried = false;  // O holds `done`'s output but its last P V (of tile `last_values`)
  View done = item;
  int last_values = 0;
  for (int k = 0; item.index >= 0; ++k) {
    // flash_fwd::sm90_wgmma::shared_rows_item(item.m0, item.n_tiles, CONSUMERS), written out:
    // calling it here changed the machine code and cost 1.7% at d64 4x4096 (1122 -> 1141 us,
    // BENCHMARKS.md, flash_fwd, "shared rows weighed").
    if (SHARES_ROWS && item.m0 == -kOwner * ROWS && item.n_tiles >= CONSUMERS) {
      shared_rows_item(k, item, g);
      g += item.n_tiles;
      queue.announced(k + 1, slot);
      item = View(slot);
      continue;
    }
    if (STACKS && flash_fwd::sm90_wgmma::stacked_item(item.m0, CONSUMERS)) {
      stacked_item(k, item, g);
      g += item.n_tiles;
      queue.announced(k + 1, slot);
      item = View(slot);
      continue;
    }
    const int m0 = item.m0, q_len = item.q_len, kv_len = item.kv_len;
    const int offset = kv_len - q_len;         // causal: query i sees keys j <= i + offset
    const int wg_row0 = m0 + consumer * ROWS;  // the warpgroup's first row in the sequence
    const int my_tiles = tiles_of(item, consumer);
    // The fewest key tiles of the other warpgroups' rows: the consumers take turns to issue
    // (IssueTurns) while each of them has tiles. Three consumers take turns only on causal items
    // of more than kTurnTiles key tiles: measured on an H200 (BENCHMARKS.md, flash_fwd, "three
    // consumer warpgroups"), turns took d64 4x4096 causal from 660.16 to 648.19 us and 1x16384
    // causal from 2347.30 to 2320.69, but 16x1024 causal (at most 8 tiles) from 221.66 to 228.80,
    // 16x1024 from 330.85 to 337.30 and 4x4096 from 1159.41 to 1173.49.
    constexpr int kTurnTiles = 8;
    const bool turns_pay = CONSUMERS == 2 || (CAUSAL && item.n_tiles > kTurnTiles);
    int other_tiles = turns_pay ? item.n_tiles : 0;
#pragma unroll
    for (int w = 0; w < CONSUMERS; ++w) {
      if (w != consumer) other_tiles = min(other_tiles, tiles_of(item, w));
    }
    const sm90_attention::IssueTurns turns = stream.next(my_tiles, other_tiles);
    // Keys from mask_from on are hidden from at least one row of the warpgroup (causal, or past
    // the sequence's end): tiles reaching it are masked element by element, the others not at all.
    const int mask_from = CAUSAL ? max(0, min(kv_len, wg_row0 + offset + 1)) : kv_len;
    // This thread's two rows (accumulator layout, sm90.cuh): row0 and row0 + 8; with CAUSAL each
    // sees keys up to its row + offset.
    const int row0 = wg_row0 + flash_fwd::sm90_wgmma::accumulator_row(tid, 0);
    const int limit0 = CAUSAL ? row0 + offset : sm90_attention::kNoLimit;
    const int limit1 = CAUSAL ? row0 + 8 + offset : sm90_attention::kNoLimit;
    auto mask = [&](int n, float(&s)[TILE_N / 2]) {
      if (n * TILE_N + TILE_N > mask_from)
        sm90_attention::mask_scores<TILE_N>(s, tid, n * TILE_N, kv_len, limit0, limit1);
    };
    // The same on a short tile's registers: where the keys it takes reach mask_from (a half tile
    // always reaches its rows' diagonal; tested as a whole tile, as it was before the narrow ones).
    auto mask_last = [&](int n, float(&s)[LAST / 2]) {
      if (n * TILE_N + (HALF_LAST ? TILE_N : LAST) > mask_from)
        sm90_attention::mask_scores<LAST>(s, tid, n * TILE_N, kv_len, limit0, limit1);
    };
    // The warpgroup's last key tile needs only its first half where its rows see no key past that
    // (HALF_LAST), or its first LAST_KEYS (NARROW_LAST); a warpgroup of one tile takes it whole.
    const bool half_last =
        HALF_LAST && my_tiles >= 2 &&
        min(kv_len, min(wg_row0 + ROWS, q_len) + offset) <= (my_tiles - 1) * TILE_N + LAST;
    const bool short_last = half_last || (NARROW_LAST && my_tiles >= 2);
    const int b = queue.buffer(k);
    const unsigned char* q_rows = q_tiles + b * Q_BYTES + consumer * ROWS * ROW_BYTES;
    // Every consumer thread releases the Q buffer once its last S of the item is done (at once
    // without one): its arrival also orders its read of the item's slot before the rewrite.
    if (!STAGED && my_tiles == 0) sm90::mbarrier_arrive(&queue.empty[b]);
    if (my_tiles > 0) {
      // Slot 0: S_0, with the previous item's last P V when it streams into this one. Both are
      // waited for here (no wgmma stays in flight across a branch: ptxas would serialise them).
      turns.start();
      sm90::mbarrier_wait(&kv.k_full[stage(g)], phase(g));
      if (carried) {
        sm90::mbarrier_wait(&kv.v_full[stage(last_values)], phase(last_values));
        turns.take(0);
        c.issue_scores(q_rows, kv.k_tiles + stage(g) * K_BYTES);
        c.template issue_values<LAST_KEYS>(kv.v_tiles + stage(last_values) * V_BYTES);
        turns.pass(0);
        sm90::wgmma_wait<0>();
        c.release(&kv.v_empty[stage(last_values)]);
      } else {
        turns.take(0);
        c.issue_scores(q_rows, kv.k_tiles + stage(g) * K_BYTES);
        turns.pass(0);
        sm90::wgmma_wait<0>();
      }
      c.release(&kv.k_empty[stage(g)]);
      if (!STAGED && my_tiles == 1) sm90::mbarrier_arrive(&queue.empty[b]);
      if (carried) {
        // The previous item's output goes out before this item's softmax starts afresh (the
        // other warpgroup's products run meanwhile).
        finish_item(k - 1, done);
        carried = false;
      }
      scale_for(item.q_head);
      c.softmax(0, mask);
      c.rescale_and_pack();
    }
    for (int n = 1; n < my_tiles - int(short_last); ++n) {
      c.step(
          kv, q_rows, n, g + n, turns, mask,
          [&] {
            if (!STAGED && n == my_tiles - 1) sm90::mbarrier_arrive(&queue.empty[b]);
            if (n == 1) release_stored();  // a key tile after the previous item's TMA store
          },
          [](int) {});
    }
    if (short_last) {  // the last tile, its first LAST keys
      const int n = my_tiles - 1;
      c.template step<LAST>(
          kv, q_rows, n, g + n, turns, mask_last,
          [&] {
            if (!STAGED) sm90::mbarrier_arrive(&queue.empty[b]);
            if (n == 1) release_stored();
          },
          [](int) {});
    }
    release_stored();  // items of one key tile or none
    // The next item (its slot, and its Q landed). Stream into it when both warpgroups need every
    // tile of this item and some of the next; the ping-pong's turns then run on through the
    // next item's first slot instead of this item's last.
    const int last = g + my_tiles - 1;
    const bool may_stream =
        STREAM && my_tiles == item.n_tiles && (CONSUMERS == 1 || other_tiles == item.n_tiles);
    bool stream_out = false;
    if (may_stream) {
      queue.announced(k + 1, slot);
      const View next(slot);
      stream_out = next.index >= 0 && tiles_of(next, consumer) > 0 &&
                   (CONSUMERS == 1 || tiles_of(next, 1 - consumer) > 0);
    }
    if (my_tiles > 0 && !stream_out) {
      // Each branch waits for its own product (no wgmma in flight across a branch).
      sm90::mbarrier_wait(&kv.v_full[stage(last)], phase(last));
      turns.take(my_tiles);
      if (half_last || NARROW_LAST) {
        c.template issue_values<LAST>(kv.v_tiles + stage(last) * V_BYTES);
        turns.pass(my_tiles);
        sm90::wgmma_wait<0>();
      } else {
        c.issue_values(kv.v_tiles + stage(last) * V_BYTES);
        turns.pass(my_tiles);
        sm90::wgmma_wait<0>();
      }
      c.release(&kv.v_empty[stage(last)]);
    }
    // Tiles the CTA loads for the other warpgroup's rows: pass their barriers so the producer's
    // accounting (every consumer warp releases every tile) holds.
    for (int n = my_tiles; n < item.n_tiles; ++n) pass_tile(g + n);
    if (stream_out) {
      carried = true;
      done = item;
      last_values = last;
    } else {
      finish_item(k, item);  // rows that see no key: zeros
      if (!may_stream) queue.announced(k + 1, slot);
    }
    g += item.n_tiles;
    item = View(slot);
  }
  release_stored();
  if constexpr (STAGED) sm90::tma_store_wait<true>();  // before the CTA's shared memory goes
  sm90_attention::IssueTurns::finish(consumer, stream.handed);
}

}  // namespace attn
