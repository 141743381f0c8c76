// How many copies of a problem's inputs the graph timer cycles through, so that each launch reads
// its inputs from DRAM rather than from what the previous launches left in the L2.
#pragma once

#include <cstddef>

namespace attn {

// The most copies: a tiny problem does not need thousands.
inline constexpr size_t kMaxRotationCopies = 64;

// Enough copies that the launches of one graph together read at least twice the L2: `footprint`
// is what one launch must read (the variant's unique minimum bytes: a window reads its window, a
// shared prefix once), `l2` the L2's size. At most kMaxRotationCopies, and at most as many as fit
// in half of `free` device memory at `copy` bytes each (the problem's buffers), so that a tiny
// window over a huge cache does not exhaust the device; at least 1 (the problem itself). With
// fewer copies than the L2 asks for, part of each launch's reads may come from the L2: a rate
// above the DRAM ceiling says so (docs/measurement.md).
size_t rotation_copies(double footprint, double l2, double copy, double free);

}  // namespace attn
