// How paged_decode.sm80_mma deals a batch's keys to CTAs: a split count per sequence and the
// work list the kernel's 1-D grid walks (sm80_mma.cuh, "Work decomposition").
#pragma once

#include <cstdint>
#include <vector>

#include "workloads/batch.hpp"

namespace attn {

struct Sm80MmaSplitPlan {
  std::vector<int32_t> seq_splits;   // [num_seqs] splits of each sequence, 1..kMaxSplits
  std::vector<int32_t> seq_partial;  // [num_seqs] first partial-result row of each sequence
  std::vector<int32_t> work;         // [2 * items] (sequence, split) pairs, longest split first
  int64_t partial_rows = 0;          // sum of seq_splits over sequences with more than one split
  int items() const { return int(work.size() / 2); }
};

// fixed_splits > 0: every sequence gets exactly that many splits (empty ones included: they merge
// as nothing). fixed_splits == 0 (auto): a per-CTA share of compute blocks is chosen so the grid
// fills the GPU (sm_count x resident_per_sm CTA slots): four waves when there is plenty of work,
// so a short last wave costs little, otherwise one; each sequence then gets as many splits as it
// has shares (at least one, at most kMaxSplits), so a long sequence among short ones is cut up
// and a short one is not.
Sm80MmaSplitPlan plan_tensorcore_splits(const Batch& batch, int block_tokens, int fixed_splits,
                                        int sm_count, int resident_per_sm);

}  // namespace attn
