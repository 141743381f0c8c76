#include "kernels/mla_decode/mla_split_plan.hpp"

#include <algorithm>

#include <string>
#include "base/errors.hpp"

namespace attn {

MlaSplitPlan plan_mla_splits(const std::vector<int64_t>& kv_lens, const std::vector<int>& row_tiles,
                             const MlaSplitInputs& in) {
  ATTN_ASSERT(kv_lens.size() == row_tiles.size(), "one row tile count per sequence");
  ATTN_ASSERT(in.block_tokens > 0 && in.max_splits > 0, "positive block and split limits");
  const size_t n = kv_lens.size();
  std::vector<int64_t> blocks(n);
  int64_t total_work = 0, total_tiles = 0;
  for (size_t s = 0; s < n; ++s) {
    blocks[s] = (kv_lens[s] + in.block_tokens - 1) / in.block_tokens;
    total_work += blocks[s] * row_tiles[s];
    total_tiles += row_tiles[s];
  }
  // Auto: a chunk of blocks per CTA such that the work fills one wave of CTAs in equal shares; no
  // split where the sequences' row tiles alone fill the wave.
  // Rounding each sequence's splits up can overshoot the wave (64 sequences of 65 blocks on 132
  // slots: chunks of 32 blocks make 3 splits each, 192 CTAs, a second wave 45% full), so the chunk
  // grows until the CTAs fit it.
  const int64_t wave = int64_t(std::max(1, in.sm_count)) * std::max(1, in.resident_per_sm);
  auto splits_of = [&](size_t s, int64_t chunk) {
    const int64_t splits = in.fixed_splits > 0
                               ? in.fixed_splits
                               : (chunk == INT64_MAX ? 1 : (blocks[s] + chunk - 1) / chunk);
    return std::clamp<int64_t>(splits, 1,
                               std::max<int64_t>(1, std::min<int64_t>(blocks[s], in.max_splits)));
  };
  auto ctas_of = [&](int64_t chunk) {
    int64_t ctas = 0;
    for (size_t s = 0; s < n; ++s) ctas += splits_of(s, chunk) * row_tiles[s];
    return ctas;
  };
  int64_t chunk =
      total_tiles >= wave ? INT64_MAX : std::max<int64_t>(1, (total_work + wave - 1) / wave);
  if (in.fixed_splits <= 0 && chunk != INT64_MAX) {
    const int64_t longest = blocks.empty() ? 1 : *std::max_element(blocks.begin(), blocks.end());
    while (chunk < longest && ctas_of(chunk) > wave) ++chunk;
  }
  MlaSplitPlan plan;
  plan.seq_partial.assign(n, 0);
  for (size_t s = 0; s < n; ++s) {
    const int64_t splits = splits_of(s, chunk);
    if (splits > 1) {
      plan.seq_partial[s] = plan.partial_slots;
      plan.partial_slots += int(splits);
    }
    plan.max_splits_used = std::max(plan.max_splits_used, int(splits));
    for (int64_t j = 0; j < splits; ++j) {
      const int64_t b0 = blocks[s] * j / splits, b1 = blocks[s] * (j + 1) / splits;
      const int64_t k0 = b0 * in.block_tokens, k1 = std::min(kv_lens[s], b1 * in.block_tokens);
      plan.work.insert(plan.work.end(),
                       {int32_t(s), int32_t(j), int32_t(splits), int32_t(k0), int32_t(k1)});
    }
  }
  plan.description = std::string(in.fixed_splits > 0 ? "fixed" : "balanced") + ": " +
                     std::to_string(plan.ctas()) + " CTAs of " + std::to_string(in.block_tokens) +
                     "-key blocks for " + std::to_string(n) + " sequences, up to " +
                     std::to_string(plan.max_splits_used) + " splits each";
  return plan;
}

}  // namespace attn
