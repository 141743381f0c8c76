// blocksparse.sm90_wgmma: block-sparse varlen attention (seed 003's semantics, as
// blocksparse.sm80_mma) on Hopper (sm_90a), FlashAttention-3 style: TMA loads completing on
// mbarriers, wgmma from shared memory, a producer warpgroup and one or two consumer warpgroups
// whose softmax of each key tile overlaps the tensor cores. The consumer is flash_fwd.sm90_wgmma's
// (kernels/common/ sm90_attention.cuh, read that first); the persistent grid is
// prefix_prefill.sm90_wgmma's; what differs is which key tiles a CTA visits and which keys a row
// sees.
//
// Computes, for every sequence s (cu_seqlens), new token i at position p = context + i
// (context = kv_len - q_len) and q head h (kv head h / group),
//   out[s, i, h] = softmax_j(scale * q[s, i, h] . k[s, j, h / group]) v[s, j, h / group]
// over the keys j that workloads/visibility's key_visible admits: the layout of q head h keeps
// block (p / block_size, j / block_size), and with causal j <= p (bottom-right aligned), else
// j < kv_len. A row that sees no key writes zeros.
//
// Layout: Q [total_q, num_q_heads, head_dim] and out [.., v_head_dim]; K and V contiguous
// [total_kv, num_kv_heads, head_dim] and [.., v_head_dim] (flash_fwd_gather_kv, once, outside the
// timing; V_HEAD_DIM is head_dim, or 128 beside 192). The TMA maps view Q, K and V as 3-D tensors
// (dims, heads, tokens); a box of 64 dims x 1 head x rows at dim 64 c is column block c of one
// head's rows, zero-filled past the row at head dims 80 and 96 (flash_fwd.sm90_wgmma's boxes and
// shared-memory layout).
//
// Work decomposition (block = 128 x (1 + CONSUMERS) threads; grid persistent):
// - A work item is TILE_M = 64 x CONSUMERS positions [pos0, pos0 + TILE_M) of one sequence and one
//   q head. Tiles are aligned to absolute positions, as blocksparse.sm80_mma's (a chunk after a
//   context reads the block rows its positions occupy), and 64 divides block_size, so each
//   consumer's 64 rows lie in one block row. The host's plan (blocksparse_sm90_plan, built once
//   with the launch) lists the items heaviest tile first, the q heads of a tile adjacent (the
//   group's heads read the same kv head's tiles of mostly the same kept blocks while they are in
//   L2; the benchmark's K/V, 128 MiB, do not fit in it), and for each item its entries: the union
//   of its consumers' walks (blocksparse::sm80_mma::tile_walk of each one's block row: the row's
//   kept blocks in runs of 64 keys, of the diagonal block only those up to the warpgroup's last
//   position), in key order, each tagged with the consumers that keep it. With blocks of 64 the two
//   consumers' rows are adjacent block rows, whose kept blocks differ by about one (the local
//   window slides by a block; the vertical stripes are the same), so one load serves both for
//   nearly every entry.
// - A key tile of TILE_N keys gathers TILE_N / 64 consecutive entries of the item, whichever
//   blocks they come from (one TMA box of 64 rows per entry and 64-dim column block, side by side
//   in the stage): the score tile's columns are keys of different blocks, each run masked on its
//   own. So a layout of 64-key blocks still runs 128-key tiles, with half the softmax steps,
//   barriers and O rescales per key of 64-key tiles and a wgmma N of 128 for S = Q K^T. The last
//   tile of an item is padded with an entry no consumer keeps (its keys hidden).
// - The grid is persistent (prefix_prefill.sm90_wgmma's scheme): CTA b starts with item b and
//   then draws the next from a counter (sm90_persistent::next_item) once its producer has issued
//   the current item's loads; key tiles are numbered across a CTA's items, so the producer fills
//   the stages with the next item's tiles while the consumers finish the current one; with two Q
//   buffers (where they fit) the next item's Q loads then too.
// - Warpgroup 0 is the producer (setmaxnreg.dec): one thread announces each item's index in a
//   shared slot, loads its Q (one box of TILE_M rows per 64-dim column block; the box starts at
//   the tile's row 0, which may lie in the context, a negative row of the tensor or the previous
//   sequence's rows: TMA fills rows outside the tensor with zeros; rows that are not new tokens
//   are computed but never stored), then for each entry the K and V boxes of rows kv_begin + key0
//   into the next stage, K and V on their own full/empty mbarriers. Rows past the sequence's end
//   are the next sequence's keys (masked) or TMA's zero fill past the tensor; V rows there meet
//   P = 0 (finite data only).
// - Warpgroups 1 .. CONSUMERS are consumers (setmaxnreg.inc), sm90_attention::Consumer::run over
// the
//   item's key tiles up to the last one holding an entry the warpgroup keeps (the rest only pass
//   their barriers); two consumers ping-pong (IssueTurns). A run of 64 keys the warpgroup's block
//   row does not keep (the other row's, or padding) is hidden whole; a kept run is masked element
//   by element only where it reaches a key hidden from some row (causal: past the warpgroup's
//   first position; or past the sequence's end); the other kept runs lie wholly before every row.
//   A warpgroup with no new token in its rows walks nothing.
//
// Tunables and why they exist:
//   TILE_N       keys per stage, 64 or 128 (one or two gathered entries): scores and P in
//                registers vs softmax, barrier and rescale overhead per key
//   STAGES       TMA buffers of K and of V in flight (the kept blocks of a row are scattered, so
//                each entry is a fresh load, never a neighbour of the last)
//   CONSUMERS    1 or 2 consumer warpgroups: two share each K/V load between two 64-row block rows
//                (half the loads per row) and hide each other's softmax
//   CTAS_PER_SM  1 or 2 resident CTAs (one consumer only: __launch_bounds__ min blocks, setmaxnreg
//                split, traits): two hide each other's softmax and barrier waits without ping-pong
#pragma once

#include "kernels/blocksparse/sm90_wgmma_params.hpp"
#include "kernels/blocksparse/sm90_wgmma_traits.hpp"
#include "kernels/common/sm90_attention.cuh"
#include "kernels/common/sm90_persistent.cuh"
#include "kernels/flash_fwd/gather_kv.cuh"

namespace attn {

// KV_SCALES: K and V are 16-bit copies of an fp8 cache's codes (a pass before the kernel converts
// them, kernels/common/fp8_dequantize.cuh); the kv head's K scale joins the logits' scale and its V
// scale the output's normaliser.
template <int DTYPE, int HEAD_DIM, int V_HEAD_DIM, int TILE_N, int STAGES, int CONSUMERS,
          int CTAS_PER_SM, bool CAUSAL, bool KV_SCALES = false>
__global__ void __launch_bounds__(blocksparse::sm90_wgmma::threads(CONSUMERS), CTAS_PER_SM)
    blocksparse_sm90_wgmma(const __grid_constant__ BlockSparseSm90Params p) {
  using namespace blocksparse::sm90_wgmma;
  static_assert(
      check(HEAD_DIM, TILE_N, STAGES, CONSUMERS, CTAS_PER_SM, 0, V_HEAD_DIM) == sm90_attention::kOk,
      "invalid blocksparse.sm90_wgmma config: see blocksparse::sm90_wgmma::check");
  static_assert(register_split_fits(CONSUMERS, CTAS_PER_SM), "setmaxnreg split");
  constexpr int TILE_M = tile_m(CONSUMERS);
  constexpr int ROWS = kRowsPerConsumer;  // 64 rows per consumer warpgroup
  constexpr int Q_BYTES = sm90_attention::q_bytes(HEAD_DIM, TILE_M);
  constexpr int K_BYTES = sm90_attention::kv_tile_bytes(HEAD_DIM, TILE_N);
  constexpr int V_BYTES = sm90_attention::kv_tile_bytes(V_HEAD_DIM, TILE_N);
  constexpr int BLOCKS = sm90_attention::column_blocks(HEAD_DIM);
  constexpr int ROW_BYTES = sm90_attention::kBlockRowBytes;  // 128
  constexpr int Q_BLOCK = TILE_M * ROW_BYTES;                // one column block of Q, bytes
  // A key tile gathers PIECES entries of 64 keys (any kept blocks).
  constexpr int PIECES = entries_per_tile(TILE_N);
  // Item k of the CTA has its Q in buffer k % Q_BUFFERS.
  constexpr int Q_BUFFERS = q_buffers(HEAD_DIM, TILE_N, STAGES, CONSUMERS, CTAS_PER_SM, V_HEAD_DIM);

  extern __shared__ unsigned char shared_raw[];
  unsigned char* shared = reinterpret_cast<unsigned char*>(
      (reinterpret_cast<unsigned long long>(shared_raw) + 1023) & ~1023ull);
  unsigned char* q_tiles = shared;                        // [Q_BUFFERS][BLOCKS][TILE_M][64]
  unsigned char* k_tiles = shared + Q_BUFFERS * Q_BYTES;  // [STAGES][BLOCKS][TILE_N][64]
  unsigned char* v_tiles = k_tiles + STAGES * K_BYTES;    // [STAGES][V blocks][TILE_N][64]
  unsigned long long* q_full = reinterpret_cast<unsigned long long*>(v_tiles + STAGES * V_BYTES);
  unsigned long long* q_empty = q_full + Q_BUFFERS;
  unsigned long long* k_full = q_empty + Q_BUFFERS;
  unsigned long long* k_empty = k_full + STAGES;
  unsigned long long* v_full = k_empty + STAGES;
  unsigned long long* v_empty = v_full + STAGES;
  // The item each Q buffer announces, 16 bytes apart (sm90_persistent::ItemQueue).
  const sm90_persistent::ItemQueue<Q_BUFFERS> queue{
      q_full, q_empty, reinterpret_cast<volatile int*>(v_empty + STAGES)};

  if (threadIdx.x == 0) {
    queue.init(CONSUMERS);  // one arrival per consumer thread on q_empty
    for (int s = 0; s < STAGES; ++s) {
      sm90::mbarrier_init(&k_full[s], 1);  // the producer's arrive.expect_tx
      sm90::mbarrier_init(&v_full[s], 1);
      sm90::mbarrier_init(&k_empty[s], CONSUMERS * 4);  // one arrival per consumer warp
      sm90::mbarrier_init(&v_empty[s], CONSUMERS * 4);
    }
    sm90::fence_barrier_init();
  }
  __syncthreads();

  const sm90_attention::KvPipeline kv{k_tiles, v_tiles, k_full, k_empty, v_full, v_empty};
  const int warpgroup = threadIdx.x / 128;
  if (warpgroup == 0) {
    // Producer: one thread issues every load. Key tiles are numbered across the CTA's items: tile
    // g goes to stage g % STAGES once every consumer warp released tile g - STAGES (a fresh empty
    // barrier passes parity 1).
    sm90::setmaxnreg_dec<producer_registers(CONSUMERS, CTAS_PER_SM)>();
    if (threadIdx.x != 0) return;
    int next = blockIdx.x;  // the item announced next
    int g = 0;              // key tiles loaded so far
    for (int k = 0;; ++k) {
      // Item k: its Q goes into buffer b once every consumer thread is done with the buffer's
      // previous item.
      const int index = queue.claim(k, next, p.num_items);
      if (index < 0) return;
      const int b = queue.buffer(k);
      const int* item = p.items + (long long)index * kItemInts;
      const int seq = item[kItemSeq], q_head = item[kItemQHead];
      const int first = item[kItemFirstEntry], n_tiles = item[kItemTiles];
      const int q_begin = p.cu_seqlens_q[seq];
      const int kv_begin = p.cu_seqlens_kv[seq], kv_len = p.cu_seqlens_kv[seq + 1] - kv_begin;
      const int context = kv_len - (p.cu_seqlens_q[seq + 1] - q_begin);
      const int row0 = q_begin + item[kItemTile] * TILE_M - context;  // Q's row of position pos0
      sm90::mbarrier_expect_bytes(&q_full[b], Q_BYTES);
#pragma unroll
      for (int c = 0; c < BLOCKS; ++c) {
        sm90::tma_load_3d(q_tiles + b * Q_BYTES + c * Q_BLOCK, &p.q_map, c * 64, q_head, row0,
                          &q_full[b]);
      }
      for (int n = 0; n < n_tiles; ++n, ++g) {
        int rows[PIECES];
#pragma unroll
        for (int q = 0; q < PIECES; ++q)
          rows[q] = kv_begin + entry_key0(__ldg(p.entries + first + n * PIECES + q));
        sm90_attention::load_kv_tile_pieces<HEAD_DIM, TILE_N, STAGES, PIECES, V_HEAD_DIM>(
            k_tiles, v_tiles, kv, &p.k_map, &p.v_map, g, q_head / p.group, rows);
      }
      // The next item is drawn once this one's loads are issued (a few tiles before the
      // consumers finish it), as a non-persistent grid would start a CTA where one ends.
      next = sm90_persistent::next_item(p.schedule, p.num_items);
    }
  }

  // ---- Consumers (kernels/common/sm90_attention.cuh) ----
  sm90::setmaxnreg_inc<consumer_registers(CONSUMERS, CTAS_PER_SM)>();
  const int consumer = warpgroup - 1;
  const int tid = threadIdx.x % 128;
  // This thread's two rows of the warpgroup's 64 (accumulator layout): row_in and row_in + 8.
  const int row_in = sm90_attention::accumulator_row(tid, 0);
  const long long row_stride = (long long)p.num_q_heads * V_HEAD_DIM;  // the output's
  sm90_attention::Consumer<DTYPE, HEAD_DIM, TILE_M, TILE_N, STAGES, false, false, V_HEAD_DIM> c;
  int g = 0;  // key tiles of the CTA's earlier items
  sm90_attention::TurnStream stream{consumer};
  for (int k = 0;; ++k) {
    const int index = stream.announced(queue, k);
    if (index < 0) return;
    const int b = queue.buffer(k);
    const int* item = p.items + (long long)index * kItemInts;
    const int seq = item[kItemSeq], q_head = item[kItemQHead];
    const int first = item[kItemFirstEntry], n_tiles = item[kItemTiles];
    const int my_tiles = item[kItemConsumerTiles + consumer];
    const int other_tiles = CONSUMERS == 2 ? item[kItemConsumerTiles + 1 - consumer] : 0;
    const sm90_attention::IssueTurns turns = stream.next(my_tiles, other_tiles);
    const int q_begin = p.cu_seqlens_q[seq], q_len = p.cu_seqlens_q[seq + 1] - q_begin;
    const int kv_len = p.cu_seqlens_kv[seq + 1] - p.cu_seqlens_kv[seq];
    const int context = kv_len - q_len;  // positions [context, kv_len) are the new tokens
    const int pos_w = item[kItemTile] * TILE_M + consumer * ROWS;  // the warpgroup's row 0
    // Kept tiles reaching mask_from hide a key from at least one row (causal, or past the
    // sequence's end): they are masked element by element, the others not at all. This thread's
    // rows (positions pos_w + row_in, + 8) see, with CAUSAL, keys up to their position.
    const int mask_from = CAUSAL ? min(kv_len, pos_w + 1) : kv_len;
    const int limit0 = CAUSAL ? pos_w + row_in : sm90_attention::kNoLimit;
    const int limit1 = CAUSAL ? pos_w + row_in + 8 : sm90_attention::kNoLimit;
    // The entries of the tile being masked; the next tile's are read a tile ahead.
    int entry[PIECES];
#pragma unroll
    for (int q = 0; q < PIECES; ++q) entry[q] = my_tiles > 0 ? __ldg(p.entries + first + q) : 0;

    c.init(tid, KV_SCALES ? p.scale_log2 * p.k_scale[q_head / p.group] : p.scale_log2, 0.0f);
    c.run(
        kv, q_tiles + b * Q_BYTES + consumer * ROWS * ROW_BYTES, &q_full[b], my_tiles, n_tiles,
        turns,
        [&](int n, float(&s)[TILE_N / 2]) {
#pragma unroll
          for (int q = 0; q < PIECES; ++q) {
            const int e = entry[q];
            if (n + 1 < my_tiles) entry[q] = __ldg(p.entries + first + (n + 1) * PIECES + q);
            const int key0 = entry_key0(e);
            if (!entry_kept_by(e, consumer)) {  // the other row's block, or padding
              sm90_attention::mask_scores<TILE_N, PIECES>(s, tid, key0, 0, -1, -1, q);
            } else if (key0 + kEntryKeys > mask_from) {
              sm90_attention::mask_scores<TILE_N, PIECES>(s, tid, key0, kv_len, limit0, limit1, q);
            }
          }
        },
        [](int) {}, sm90_attention::ItemCursor{queue.parity(k), g, &q_empty[b]});
    g += n_tiles;

    // Normalise and store this thread's two rows of new tokens straight from registers, while
    // the producer loads the next item's first tiles.
    unsigned short* out =
        static_cast<unsigned short*>(p.out) + q_begin * row_stride + q_head * V_HEAD_DIM;
    c.reduce_row_sums();
    const float v_scale = KV_SCALES ? p.v_scale[q_head / p.group] : 1.0f;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int i = pos_w - context + row_in + 8 * h;                         // query index
      const float inv = c.row_sum[h] > 0.0f ? v_scale / c.row_sum[h] : 0.0f;  // no key: zeros
      c.store_row(out + i * row_stride, h, inv, i >= 0 && i < q_len);  // every lane: shuffles
    }
  }
}

}  // namespace attn
