// TEMPORARY (issue 3, consumers branch): causal + sliding-window key_visible so the references
// build before the masks branch (issue3-masks, workloads/visibility.cpp) is merged. Delete this
// file when merging that branch; it knows nothing of block-sparse or explicit masks.
#include "workloads/visibility.hpp"

namespace attn {

bool key_visible(const Batch& batch, int seq, int q_head, int64_t q_index, int64_t key_pos) {
  (void)q_head;
  const int64_t position = batch.context_lens[size_t(seq)] + q_index;
  if (batch.causal && key_pos > position) return false;
  if (batch.sliding_window > 0 && key_pos <= position - batch.sliding_window) return false;
  return key_pos >= 0 && key_pos < batch.kv_lens[size_t(seq)];
}

}  // namespace attn

namespace attn {

// TEMPORARY: pair by pair; the masks branch counts in closed form.
int64_t visible_pairs(const Batch& batch) {
  int64_t pairs = 0;
  for (int s = 0; s < batch.num_seqs; ++s)
    for (int h = 0; h < batch.spec.model.num_q_heads; ++h)
      for (int64_t i = 0; i < batch.query_lens[size_t(s)]; ++i)
        for (int64_t j = 0; j < batch.kv_lens[size_t(s)]; ++j) pairs += key_visible(batch, s, h, i, j);
  return pairs;
}

}  // namespace attn
