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
// flash_fwd_work_order keeps head-major order for the leading heads and orders the last heads'
// items together, heaviest first over all of them (longest processing time first), so that the
// grid ends on light items. The tail takes as many heads as a simulation of the grid's greedy
// draw says pays, among those whose K and V fit the L2 budget.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/flash_fwd/flash_fwd_variants.hpp"

namespace attn {

struct WorkOrderShape {
  int num_q_heads = 1;
  int group = 1;              // q heads per kv head (consecutive q heads share one)
  int ctas = 1;               // CTAs of the persistent grid
  int64_t kv_head_bytes = 0;  // K and V of one kv head over the whole batch
  int64_t l2_bytes = 0;       // the device's L2 cache; 0: unknown (head-major order only)
};

// The share of L2 the tail's K and V may take; the rest holds the Q tiles, outputs and the heads
// before the tail, which stream through it.
constexpr double kTailL2Share = 0.75;
// A work item's fixed cost (its start and end: Q's load, the pipeline's fill, the output's
// store), in key tiles: about 3800 cycles per item beside 4030 to 4659 per key tile at head dim
// 128 (BENCHMARKS.md, flash_fwd, "the item ends traced").
constexpr double kItemOverheadTiles = 1.0;

// The work items, [items][3]: (sequence, query tile, q head). `tiles` are one head's query tiles
// heaviest first (flash_fwd_query_tiles). `tail_heads` (optional) receives how many of the last
// heads were ordered together (0: head-major).
std::vector<int32_t> flash_fwd_work_order(const std::vector<QueryTile>& tiles,
                                          const WorkOrderShape& shape, int* tail_heads = nullptr);

// When the last of `ctas` CTAs finishes if each, once free, draws the next item of `costs` in
// order (all start at 0 with the first `ctas` items).
double greedy_makespan(const std::vector<double>& costs, int ctas);

}  // namespace attn
