// Which keys a query sees: the one definition every reference and test uses. Combines the
// causal flag (bottom-right aligned), the sliding window, the block-sparse layout and the explicit
// mask of a batch (docs/masks.md). Also the counts of visible keys that the useful-FLOP model
// (4 * head_dim * visible pairs) is built on, computed in closed form per sequence or per block
// so that a 128k-token prefill is counted in milliseconds, never pair by pair.
#pragma once

#include <cstdint>
#include <vector>

#include "workloads/batch.hpp"

namespace attn {

// Query `q_index` (0-based among sequence `seq`'s new tokens; its position is context_len +
// q_index) of q head `q_head` and key position `key_pos` (0 .. kv_len - 1; any other position is
// not a key of the sequence and reads as hidden).
//
// An explicit mask alone decides. Otherwise a key is visible when every rule that is on allows
// it: causal (key_pos <= position), sliding window (position - key_pos < sliding_window) and
// block-sparse (the layout keeps key block key_pos / block_size for query block position /
// block_size of this q head; inside a kept block visibility is per token, through the other
// rules).
bool key_visible(const Batch& batch, int seq, int q_head, int64_t q_index, int64_t key_pos);

// The number of keys key_visible admits for one query: O(1) without a block-sparse layout,
// O(kept blocks of the query's row) with one, a row of the grid with an explicit mask.
int64_t visible_key_count(const Batch& batch, int seq, int q_head, int64_t q_index);

// The number of (q head, query, key) triples key_visible admits over the whole batch. Closed form
// per sequence for causal and sliding window; per (head, query block, kept key block) for
// block-sparse, with a per-query count only for the few blocks a rule cuts through; the set bits
// times num_q_heads for an explicit mask. Saturates at INT64_MAX.
int64_t visible_pairs(const Batch& batch);

// Key positions first .. last of one sequence (inclusive).
struct KeyRange {
  int64_t first = 0;
  int64_t last = -1;
  int64_t size() const { return last - first + 1; }
};

// The keys of sequence `seq` that some query of some q head of kv head `kv_head`'s GQA group (q
// heads kv_head * group .. (kv_head + 1) * group - 1) sees: the K/V rows of that kv head a kernel
// has to read. Sorted, disjoint and not adjacent; empty for a sequence without queries. One range
// without a layout or mask (the first query's window start to the last key: each query's keys are
// one interval and the intervals overlap); per kept key block with a block-sparse layout, from the
// union over the group's heads, O(group x kept blocks of the sequence's rows); the columns with a
// set bit with an explicit mask (the same for every head), a pass over the sequence's grid.
std::vector<KeyRange> visible_key_ranges(const Batch& batch, int seq, int kv_head);

// Whether visible_key_ranges can differ between kv heads: only a block-sparse layout's rows are
// per q head.
bool key_ranges_depend_on_kv_head(const Batch& batch);

}  // namespace attn
