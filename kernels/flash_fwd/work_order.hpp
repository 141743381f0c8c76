// The order in which the CTAs of flash_fwd.sm90_wgmma's persistent grid draw their work items.
//
// A work item is one query tile of one sequence for one q head. The CTAs draw items from a
// shared counter in the order given here, so the order decides two things:
// - L2 reuse: the items in flight at once should read K/V of few kv heads. Head-major order (every
//   query tile of head 0, then head 1, ...) keeps one or two heads' K/V in flight, the order in
//   which the hardware hands out the CTAs of a grid of one CTA per item.
// - The tail: with a causal mask the items differ in cost (the bottom query tile of a sequence
//   sees every key, the top one few), and so do shared-rows items (weigh_shared_rows). Head-major
//   lists each head's items heaviest first, so the last head's heaviest items are drawn when only
//   that head's work is left, and the CTAs that draw them finish well after the others: a tail of
//   idle multiprocessors.
// A stacked tile (WorkOrderShape::stacked) is one item for several consecutive q heads, listed
// where its first head's item would be.
// flash_fwd_work_order keeps head-major order for the leading items and orders the items of the
// last (q head, sequence) pairs together, heaviest first over all of them (longest processing
// time first), so that the grid ends on light items. How many pairs: as many as a simulation of
// the grid's greedy draw says pays, among those whose K and V fit an L2 budget (with shared-rows
// items, the longest of those it rates best, within the whole L2: prefer_long_tail).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/flash_fwd/flash_fwd_variants.hpp"

namespace attn {

struct WorkOrderShape {
  int num_q_heads = 1;
  int group = 1;  // q heads per kv head (consecutive q heads share one)
  int ctas = 1;   // CTAs of the persistent grid
  // Per sequence, the K and V bytes of one kv head (its keys x head_dim x 2 tensors); one entry
  // per sequence of the batch.
  std::vector<int64_t> kv_seq_bytes;
  int64_t l2_bytes = 0;  // the device's L2 cache; 0: unknown (head-major order only)
  // Where the simulation rates tails alike, take the longest (else the shortest). For items some
  // of which are much lighter than the rest (weigh_shared_rows): the longer tail draws more of the
  // light items last, where they even out the CTAs' ends, which the simulation's fixed costs do
  // not see. Measured on an H200 (BENCHMARKS.md, flash_fwd, "shared rows weighed"), µs: d64
  // 16x1024 331.28 / 331.89 / 331.82 -> 328.98 / 327.73 / 328.58, 4x4096 1138.21 / 1140.14 /
  // 1136.13 -> 1131.76 / 1131.25 / 1136.24. The same rule for every order ran d64 16x1024 causal
  // no faster (210.91 / 211.98 / 211.38 -> 211.36 / 211.38 / 213.12), so it is not the default.
  bool prefer_long_tail = false;
  // Stacked tiles (sm90_wgmma's stacks, flash_fwd::sm90_wgmma::stacks_heads): where stacked[i],
  // tiles[i] is one item per `stack_heads` consecutive q heads (listed for the q heads that are
  // multiples of it, where the stack's first head's item would be), not one per q head. Indexed as
  // the tiles; empty: none.
  std::vector<bool> stacked;
  int stack_heads = 1;
};

// The share of L2 the tail's K and V may take; the rest holds the Q tiles, outputs and the items
// before the tail, which stream through it. Measured on an H200 (60 MiB of L2; BENCHMARKS.md,
// flash_fwd, "work order"): with 3/4, d256 16x1024 causal took a tail of 34 MiB and ran 0.6%
// slower than head-major, which the simulation had put 1.4% ahead.
constexpr double kTailL2Share = 0.5;
// The share where the longest tail is preferred (WorkOrderShape::prefer_long_tail): the whole L2.
// Measured on an H200 (BENCHMARKS.md, flash_fwd, "shared rows weighed"), against half, µs: d64
// 16x1024 325.84 / 325.97 / 327.25 -> 325.07 / 324.74 / 325.10, 4x4096 1122.32 / 1126.30 /
// 1123.14 -> 1111.95 / 1114.93 / 1115.57; twice the L2 was no better (325.60 / 325.76 / 325.70,
// 1111.22 / 1111.98 / 1116.83).
constexpr double kLongTailL2Share = 1.0;
// A work item's fixed cost (its start and end: Q's load, the pipeline's fill, the output's
// store), in key tiles: about 3800 cycles per item beside 4030 to 4659 per key tile at head dim
// 128 (BENCHMARKS.md, flash_fwd, "the item ends traced"), so known only roughly; and a tail
// that pays under one fixed cost may not under another (the greedy draw's end is lumpy). The
// order is chosen for the mean, over these, of the simulated end relative to head-major's.
constexpr double kItemOverheadTiles[] = {0.5, 1.0, 1.5};
// Tail sizes tried, evenly spaced up to the budget's.
constexpr int64_t kTailCandidates = 64;

// The work items, [items][3]: (sequence, query tile, q head). `tiles` are one head's query tiles
// heaviest first (flash_fwd_query_tiles). The (q head, sequence) pairs are numbered head-major
// (sequence fastest); `tail_pairs` (optional) receives how many of the last were ordered
// together (0: head-major throughout).
std::vector<int32_t> flash_fwd_work_order(const std::vector<QueryTile>& tiles,
                                          const WorkOrderShape& shape,
                                          int64_t* tail_pairs = nullptr);

// `tiles` (one head's query tiles, flash_fwd_query_tiles, QueryTilesFrom::end) with the items
// whose rows sm90_wgmma's consumer warpgroups share (flash_fwd::sm90_wgmma::shares_rows, without a
// causal mask: the top tile of a sequence holding only the last warpgroup's rows, with at least
// `warpgroups` key tiles, flash_fwd::sm90_wgmma::shared_rows_item) weighed as the key tiles each
// warpgroup multiplies, their key tiles / warpgroups rounded up; heaviest first again (ties keep
// their order). Weighed as whole items they looked as heavy as the others, so neither the head's
// order nor the tail put them last.
std::vector<QueryTile> weigh_shared_rows(std::vector<QueryTile> tiles,
                                         const std::vector<int64_t>& query_lens, int tile_m,
                                         int warpgroups);

// Which of `tiles` (one head's query tiles, flash_fwd_query_tiles, QueryTilesFrom::end) sm90_wgmma
// stacks where its config does (WorkOrderShape::stacked): with `warpgroups` consumer warpgroups of
// 64 rows, the top tile of a sequence whose rows are all the last warpgroup's
// (flash_fwd::sm90_wgmma::stacked_item).
std::vector<bool> stacked_tiles(const std::vector<QueryTile>& tiles,
                                const std::vector<int64_t>& query_lens, int tile_m, int warpgroups);

// When the last of `ctas` CTAs finishes if each, once free, draws the next item of `costs` in
// order (all start at 0 with the first `ctas` items).
double greedy_makespan(const std::vector<double>& costs, int ctas);

}  // namespace attn
