#include "kernels/flash_fwd/flash_fwd_variants.hpp"

#include <algorithm>
#include <climits>

#include "kernels/registry.hpp"

namespace attn {

std::unique_ptr<Variant> make_flash_fwd_sm80_mma();
std::unique_ptr<Variant> make_flash_fwd_sm90_wgmma();
std::unique_ptr<Variant> make_flash_fwd_cpu_reference();

void add_flash_fwd_variants(Registry& registry) {
  registry.add(make_flash_fwd_sm80_mma());
  registry.add(make_flash_fwd_sm90_wgmma());
  registry.add(make_flash_fwd_cpu_reference());
}

FeatureSet flash_fwd_features() {
  return FeatureSet()
      .with(feature::kQueries, {"prefill", "mixed"})
      .note(feature::kQueries, "decode", "paged_decode runs decode batches")
      .with(feature::kMask, {"causal", "non_causal"})
      .with(feature::kSharedPrefix)
      .with(feature::kKvLayout, {"nhd", "hnd"})
      .with(feature::kDtype, {"bf16", "fp16"})
      .with(feature::kKvDtype, {"fp8_e4m3.per_tensor", "fp8_e4m3.per_head"})
      .with(feature::kHeadDim, {64, 128, 256})
      .with_range(feature::kPageSize, 1, 256);
}

Work flash_fwd_work(const Batch& batch) {
  return minimum_work(batch, KvStorage::contiguous);
}

Support gathered_kv_supports(const Batch& batch) {
  const ModelShape& m = batch.spec.model;
  if (!(batch.softmax_scale > 0.0f)) return Support::no("softmax_scale must be positive");
  // Offsets within one sequence are 32-bit element counts in the kernels.
  const int64_t longest = std::max(batch.max_kv_len(), batch.max_query_len());
  if (longest * int64_t(std::max(m.num_q_heads, m.num_kv_heads)) * m.head_dim > INT_MAX) {
    return Support::no("a sequence of " + std::to_string(longest) +
                       " tokens is too long for 32-bit offsets in the kernel");
  }
  if (batch.total_q > INT_MAX || batch.total_kv > INT_MAX) {
    return Support::no("more than 2^31 tokens in the batch");
  }
  return Support::yes();
}

namespace {

// Every query tile of tile_m rows of every sequence, in sequence order.
std::vector<QueryTile> query_tiles(const Batch& batch, int tile_m, int tile_n,
                                   QueryTilesFrom from) {
  std::vector<QueryTile> tiles;
  for (int s = 0; s < batch.num_seqs; ++s) {
    const int64_t q_len = batch.query_lens[size_t(s)], kv_len = batch.kv_lens[size_t(s)];
    const int64_t m_blocks = (q_len + tile_m - 1) / tile_m;
    for (int64_t m = 0; m < m_blocks; ++m) {
      // The tile's rows end (exclusive) at row_end; with a causal mask its last row sees the
      // most keys.
      const int64_t row_end =
          from == QueryTilesFrom::start ? std::min((m + 1) * tile_m, q_len) : q_len - m * tile_m;
      int64_t keys = kv_len;
      if (batch.causal) keys = std::clamp<int64_t>(row_end + kv_len - q_len, 0, kv_len);
      tiles.push_back({int32_t(s), int32_t(m), (keys + tile_n - 1) / tile_n});
    }
  }
  return tiles;
}

}  // namespace

std::vector<QueryTile> flash_fwd_query_tiles(const Batch& batch, int tile_m, int tile_n,
                                             QueryTilesFrom from) {
  std::vector<QueryTile> tiles = query_tiles(batch, tile_m, tile_n, from);
  std::stable_sort(tiles.begin(), tiles.end(), [](const QueryTile& a, const QueryTile& b) {
    return a.key_tiles > b.key_tiles;
  });
  return tiles;
}

std::vector<int32_t> flash_fwd_tile_schedule(const Batch& batch, int tile_m, int tile_n,
                                             QueryTilesFrom from) {
  std::vector<int32_t> out;
  for (const QueryTile& t : flash_fwd_query_tiles(batch, tile_m, tile_n, from)) {
    out.push_back(t.seq);
    out.push_back(t.m_block);
  }
  return out;
}

int64_t flash_fwd_key_tiles(const Batch& batch, int tile_m, int tile_n, QueryTilesFrom from) {
  int64_t total = 0;
  for (const QueryTile& t : query_tiles(batch, tile_m, tile_n, from)) total += t.key_tiles;
  return total;
}

}  // namespace attn
