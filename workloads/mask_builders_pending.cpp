// TEMPORARY (issue 3, workloads core branch): stand-ins for the mask builders helper D implements
// in workloads/block_sparse_layout.cpp, explicit_mask.cpp and visibility.cpp, so this branch
// links on its own. DELETE THIS FILE when D's branch is merged.
#include "base/errors.hpp"
#include "workloads/block_sparse_layout.hpp"
#include "workloads/explicit_mask.hpp"
#include "workloads/visibility.hpp"

namespace attn {

BlockSparseLayout build_block_sparse_layout(const WorkloadSpec&, int64_t) {
  throw InputError("mask.block_sparse", {"not built yet (the layout builder is pending)"});
}

ExplicitMask build_explicit_mask(const Batch&) {
  throw InputError("mask.explicit", {"not built yet (the explicit mask builder is pending)"});
}

// The causal and sliding-window rule only.
bool key_visible(const Batch& batch, int seq, int, int64_t q_index, int64_t key_pos) {
  const int64_t position = batch.context_lens[size_t(seq)] + q_index;
  if (batch.causal && key_pos > position) return false;
  if (batch.sliding_window > 0 && key_pos <= position - batch.sliding_window) return false;
  return true;
}

}  // namespace attn
