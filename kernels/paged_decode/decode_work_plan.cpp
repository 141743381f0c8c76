#include "kernels/paged_decode/sm80_mma_split_plan.hpp"

#include <algorithm>
#include <numeric>

#include "kernels/paged_decode/sm80_mma_traits.hpp"

namespace attn {

namespace {

// Compute blocks of each sequence's visible keys (the window's, when it hides some).
std::vector<int64_t> visible_blocks(const Batch& batch, int block_tokens) {
  std::vector<int64_t> blocks(size_t(batch.num_seqs));
  for (int s = 0; s < batch.num_seqs; ++s) {
    int64_t keys = batch.kv_lens[size_t(s)];
    if (batch.sliding_window > 0) keys = std::min(keys, batch.sliding_window);
    blocks[size_t(s)] = (keys + block_tokens - 1) / block_tokens;
  }
  return blocks;
}

// Blocks one CTA should stream so that the grid fills every resident slot: four waves when each
// slot would get at least 32 blocks (the partial last wave then costs little; on 64 x 4096 this
// gives the 4 splits a sweep found best), one wave otherwise; never fewer than two blocks.
int64_t blocks_per_cta(const std::vector<int64_t>& blocks, int64_t kv_heads, int sm_count,
                       int resident_per_sm) {
  const int64_t slots = int64_t(std::max(1, sm_count)) * std::max(1, resident_per_sm);
  const int64_t total = std::accumulate(blocks.begin(), blocks.end(), int64_t(0)) * kv_heads;
  const int64_t waves = total >= 32 * slots ? 4 : 1;
  return std::max<int64_t>(2, (total + waves * slots - 1) / (waves * slots));
}

}  // namespace

Sm80MmaSplitPlan plan_tensorcore_splits(const Batch& batch, int block_tokens, int fixed_splits,
                                        int sm_count, int resident_per_sm) {
  const std::vector<int64_t> blocks = visible_blocks(batch, block_tokens);
  const int64_t share = fixed_splits > 0 ? 0
                                         : blocks_per_cta(blocks, batch.spec.model.num_kv_heads,
                                                          sm_count, resident_per_sm);
  Sm80MmaSplitPlan plan;
  struct Item {
    int32_t seq, split;
    int64_t blocks;
  };
  std::vector<Item> items;
  for (int s = 0; s < batch.num_seqs; ++s) {
    const int64_t n = blocks[size_t(s)];
    const int64_t splits =
        fixed_splits > 0
            ? fixed_splits
            : std::clamp<int64_t>((n + share - 1) / share, 1, paged_decode::sm80_mma::kMaxSplits);
    plan.seq_splits.push_back(int32_t(splits));
    plan.seq_partial.push_back(int32_t(plan.partial_rows));
    if (splits > 1) plan.partial_rows += splits;
    // The kernel's rule: ceil(blocks / splits) per split, the last ones shorter or empty.
    const int64_t per_split = (n + splits - 1) / splits;
    for (int64_t k = 0; k < splits; ++k) {
      const int64_t begin = std::min(n, k * per_split);
      items.push_back({int32_t(s), int32_t(k), std::min(n, begin + per_split) - begin});
    }
  }
  std::stable_sort(items.begin(), items.end(),
                   [](const Item& a, const Item& b) { return a.blocks > b.blocks; });
  plan.work.reserve(2 * items.size());
  for (const Item& item : items) {
    plan.work.push_back(item.seq);
    plan.work.push_back(item.split);
  }
  return plan;
}

}  // namespace attn
