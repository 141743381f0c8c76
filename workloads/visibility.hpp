// Which keys a query sees: the one definition every reference and test uses. Combines the
// causal flag (bottom-right aligned), the sliding window, the block-sparse layout and the explicit
// mask of a batch (docs/workload.md, "Masks").
#pragma once

#include <cstdint>

#include "workloads/batch.hpp"

namespace attn {

// Query `q_index` (0-based among sequence `seq`'s new tokens; its position is context_len +
// q_index) of q head `q_head` and key position `key_pos` (0 .. kv_len - 1).
bool key_visible(const Batch& batch, int seq, int q_head, int64_t q_index, int64_t key_pos);

}  // namespace attn
