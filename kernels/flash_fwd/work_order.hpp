// The order in which the CTAs of flash_fwd.sm90_wgmma's persistent grid draw their work items.
//
// A work item is one query tile of one sequence for one q head. The CTAs draw items from a
// shared counter in the order given here, so the order decides two things:
// - L2 reuse: the items in flight at once should read K/V of few kv heads. Head-major order (every
//   query tile of head 0, then head 1, ...) keeps one or two heads' K/V in flight, the order in
//   which the hardware hands out the CTAs of a grid of one CTA per item.
// - The tail: with a causal mask the items differ in cost (the bottom query tile of a sequence
//   sees every key, the top one few). Head-major lists each head's items heaviest first, so the
//   last head's heaviest items are drawn when only that head's work is left, and the CTAs that
//   draw them finish well after the others: a tail of idle multiprocessors.
// flash_fwd_work_order keeps head-major order for the leading items and orders the items of the
// last (q head, sequence) pairs together, heaviest first over all of them (longest processing
// time first), so that the grid ends on light items. How many pairs: as many as a simulation of
// the grid's greedy draw says pays, among those whose K and V fit an L2 budget.
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
};

// The share of L2 the tail's K and V may take; the rest holds the Q tiles, outputs and the items
// before the tail, which stream through it. Measured on an H200 (60 MiB of L2; BENCHMARKS.md,
// flash_fwd, "work order"): with 3/4, d256 16x1024 causal took a tail of 34 MiB and ran 0.6%
// slower than head-major, which the simulation had put 1.4% ahead.
constexpr double kTailL2Share = 0.5;
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

// When the last of `ctas` CTAs finishes if each, once free, draws the next item of `costs` in
// order (all start at 0 with the first `ctas` items).
double greedy_makespan(const std::vector<double>& costs, int ctas);

}  // namespace attn
