#include "kernels/flash_fwd/flash_fwd_variants.hpp"

#include <algorithm>
#include <climits>

#include "kernels/registry.hpp"
#include "workloads/visibility.hpp"

namespace attn {

std::unique_ptr<Variant> make_flash_fwd_sm80_mma();
std::unique_ptr<Variant> make_flash_fwd_sm90_wgmma();
std::unique_ptr<Variant> make_flash_fwd_cpu_reference();

void add_flash_fwd_variants(Registry& registry) {
  registry.add(make_flash_fwd_sm80_mma());
  registry.add(make_flash_fwd_sm90_wgmma());
  registry.add(make_flash_fwd_cpu_reference());
}

Support flash_fwd_supports_batch(const Batch& batch) {
  if (batch.decode_only()) {
    return Support::no(
        "a decode batch (one query token per sequence) is paged_decode's; flash_fwd needs a "
        "sequence with more than one query token");
  }
  if (batch.sliding_window > 0) return Support::no("sliding window is not part of flash_fwd");
  if (batch.logits_soft_cap > 0) return Support::no("logits soft-cap is not part of flash_fwd");
  if (!batch.sink_logits.empty()) return Support::no("attention sinks are not part of flash_fwd");
  if (batch.block_sparse) return Support::no("block-sparse masks are not part of flash_fwd");
  if (batch.explicit_mask) return Support::no("explicit masks are not part of flash_fwd");
  if (batch.kv_dtype != batch.dtype) {
    return Support::no("KV dtype " + to_string(batch.kv_dtype) +
                       " (quantised KV cache) is not part of flash_fwd; K/V must be " +
                       to_string(batch.dtype) + " like Q");
  }
  return Support::yes();
}

Work flash_fwd_work(const Batch& batch) {
  const ModelShape& m = batch.spec.model;
  const double element = double(size_of(batch.dtype));
  Work work;
  const double q_and_out = 2.0 * double(batch.total_q) * m.num_q_heads * m.head_dim * element;
  const double kv = 2.0 * double(batch.total_kv) * m.num_kv_heads * m.head_dim * element;
  work.bytes = q_and_out + kv;
  work.flops = 4.0 * m.head_dim * double(visible_pairs(batch));
  return work;
}

Support gathered_kv_supports(const Batch& batch) {
  const ModelShape& m = batch.spec.model;
  if (m.dtype != DType::bf16 && m.dtype != DType::fp16) {
    return Support::no("dtype " + to_string(m.dtype) + " is not bf16 or fp16");
  }
  if (batch.spec.kv_cache.layout == KvLayout::vllm) {
    return Support::no("the vllm K/V layout is not gathered (nhd and hnd are)");
  }
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
