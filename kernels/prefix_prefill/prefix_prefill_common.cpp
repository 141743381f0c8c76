#include "kernels/prefix_prefill/prefix_prefill_variants.hpp"

#include <algorithm>

#include "kernels/registry.hpp"

namespace attn {

std::unique_ptr<Variant> make_prefix_prefill_mma();
std::unique_ptr<Variant> make_prefix_prefill_masked();
std::unique_ptr<Variant> make_prefix_prefill_sm90_wgmma();
std::unique_ptr<Variant> make_prefix_prefill_cpu_reference();

void add_prefix_prefill_variants(Registry& registry) {
  registry.add(make_prefix_prefill_mma());
  registry.add(make_prefix_prefill_masked());
  registry.add(make_prefix_prefill_sm90_wgmma());
  registry.add(make_prefix_prefill_cpu_reference());
}

FeatureSet prefix_prefill_features() {
  return FeatureSet()
      .with(feature::kQueries, {"decode", "prefill", "mixed"})
      .with(feature::kMask, {"causal", "non_causal"})
      .note(feature::kMask, "explicit", "prefix_prefill.sm80_mma_masked reads explicit masks")
      .note(feature::kMask, "the blocksparse family runs block-sparse masks")
      .with(feature::kSlidingWindow)
      .with(feature::kLogitsSoftCap)
      .with(feature::kAttentionSinks)
      .with(feature::kSharedPrefix)
      .with(feature::kKvLayout, {"nhd", "hnd", "vllm"})
      .with(feature::kDtype, {"bf16", "fp16"})
      .with(feature::kKvDtype, {"fp8_e4m3.per_tensor", "fp8_e4m3.per_head"})
      .with(feature::kHeadDim, {64, 128, 256})
      .note(feature::kHeadDim, "prefix_prefill.sm80_mma runs head dims 80, 96 and 192")
      .note(feature::kVHeadDim, "prefix_prefill.sm80_mma runs a V head dim narrower than Q/K's")
      .with_range(feature::kPageSize, 1, 256);
}

Support prefix_prefill_supports_limits(const Batch& batch) {
  if (!batch.sink_logits.empty() &&
      batch.sink_logits.size() != size_t(batch.spec.model.num_q_heads)) {
    return Support::no("sink logits must have one value per q head");
  }
  if (batch.num_seqs < 1) return Support::no("the batch has no sequence");
  // Positions and token indices are 32-bit in the kernel (byte offsets are 64-bit).
  if (batch.max_kv_len() >= (int64_t(1) << 30) || batch.total_q >= (int64_t(1) << 30)) {
    return Support::no("sequences or batches of 2^30 tokens or more are not supported");
  }
  return Support::yes();
}

bool prefix_prefill_v_dim_major(const Batch& batch) {
  return batch.spec.kv_cache.layout == KvLayout::vllm;
}

PoolStrides prefix_prefill_pool_strides(const Batch& batch, bool value) {
  const long long e = static_cast<long long>(size_of(batch.kv_dtype));
  // D: the row width of this pool, head_dim for K and v_head_dim for V.
  const long long P = batch.page_size, H = batch.spec.model.num_kv_heads,
                  D = value ? batch.spec.model.effective_v_head_dim() : batch.spec.model.head_dim;
  switch (batch.spec.kv_cache.layout) {
    case KvLayout::nhd:  // [pages, page_size, kv_heads, D]
      return {P * H * D * e, D * e, H * D * e, 16};
    case KvLayout::hnd:  // [pages, kv_heads, page_size, D]
      return {H * P * D * e, P * D * e, D * e, 16};
    case KvLayout::vllm:
      if (value) return {H * D * P * e, D * P * e, e, P * e};  // [pages, kv_heads, D, page]
      return {H * D * P * e, D * P * e, 16, P * 16};           // [pages, kv_heads, D / x, page, x]
  }
  return {};
}

std::vector<PrefixPrefillSeq> prefix_prefill_seq_table(const Batch& batch) {
  constexpr int kAlign = PrefixPrefillNewTokens::kNewRowAlign;
  std::vector<PrefixPrefillSeq> seqs(size_t(batch.num_seqs));
  int64_t new_rows = 0;
  for (size_t s = 0; s < seqs.size(); ++s) {
    seqs[s].context_len = int(batch.context_lens[s]);
    seqs[s].query_len = int(batch.query_lens[s]);
    seqs[s].q_start = int(batch.cu_seqlens_q[s]);
    seqs[s].new_start = int(new_rows);
    new_rows += (batch.query_lens[s] + kAlign - 1) / kAlign * kAlign;
  }
  return seqs;
}

int64_t prefix_prefill_new_rows(const std::vector<PrefixPrefillSeq>& seqs) {
  constexpr int kAlign = PrefixPrefillNewTokens::kNewRowAlign;
  const int64_t rows =
      seqs.empty() ? 0
                   : seqs.back().new_start + (seqs.back().query_len + kAlign - 1) / kAlign * kAlign;
  return std::max<int64_t>(rows, kAlign);
}

PrefixPrefillNewTokens gather_new_tokens(Problem& problem, ExecContext& context, CUfunction gather,
                                         std::vector<DeviceBuffer>& owned) {
  const Batch& batch = problem.batch();
  const ModelShape& m = batch.spec.model;
  constexpr int kAlign = PrefixPrefillNewTokens::kNewRowAlign;
  auto round_up = [](int64_t value) { return (value + kAlign - 1) / kAlign * kAlign; };
  auto allocate = [&](size_t bytes) {
    owned.emplace_back(*context.cuda, std::max<size_t>(bytes, 16));
    return owned.back().address();
  };
  auto upload = [&](const void* data, size_t bytes) {
    const CUdeviceptr address = allocate(bytes);
    if (bytes > 0) owned.back().upload(data, bytes);
    return address;
  };

  const std::vector<PrefixPrefillSeq> seqs = prefix_prefill_seq_table(batch);
  PrefixPrefillNewTokens fresh;
  fresh.new_rows = prefix_prefill_new_rows(seqs);
  fresh.seqs = reinterpret_cast<const PrefixPrefillSeq*>(
      upload(seqs.data(), seqs.size() * sizeof(PrefixPrefillSeq)));
  const int element = int(size_of(batch.kv_dtype));
  const size_t new_rows_bytes = size_t(fresh.new_rows) * size_t(m.num_kv_heads) * size_t(element);
  fresh.k_new = reinterpret_cast<void*>(allocate(new_rows_bytes * size_t(m.head_dim)));
  fresh.v_new =
      reinterpret_cast<void*>(allocate(new_rows_bytes * size_t(m.effective_v_head_dim())));

  const bool v_dim_major = prefix_prefill_v_dim_major(batch);
  PrefixPrefillGatherParams g{};
  g.k_pool = problem.k_pool();
  g.v_pool = problem.v_pool();
  g.slot_mapping = reinterpret_cast<const long long*>(
      upload(batch.slot_mapping.data(), batch.slot_mapping.size() * sizeof(int64_t)));
  g.seqs = fresh.seqs;
  g.k_new = fresh.k_new;
  g.v_new = fresh.v_new;
  g.k_strides = prefix_prefill_pool_strides(batch, false);
  g.v_strides = prefix_prefill_pool_strides(batch, true);
  g.new_rows = fresh.new_rows;
  g.k_chunk_elements = 16 / element;
  g.v_chunk_elements = v_dim_major ? 1 : 16 / element;
  g.v_dim_major = v_dim_major ? 1 : 0;
  g.element_bytes = element;
  g.num_kv_heads = m.num_kv_heads;
  g.head_dim = m.head_dim;
  g.v_head_dim = m.effective_v_head_dim();
  g.page_size = batch.page_size;
  const int64_t longest = round_up(batch.max_query_len());
  LaunchShape shape;
  shape.grid_x =
      unsigned(std::clamp<int64_t>((longest * m.num_kv_heads * m.head_dim + 255) / 256, 1, 4096));
  shape.grid_y = unsigned(batch.num_seqs);
  shape.block_x = 256;
  attn::launch(*context.cuda, gather, shape, *context.stream, g);
  return fresh;
}

namespace {

// The KV tiles a q tile of `tokens` new tokens from t0 walks (the kernels' key ranges, on the
// host): its cost, for the schedule.
int64_t kv_tiles_of(const Batch& batch, int seq, int64_t t0, int64_t tokens, int block_n,
                    bool explicit_mask) {
  const int64_t ctx = batch.context_lens[size_t(seq)], kv_len = batch.kv_lens[size_t(seq)];
  int64_t lo = 0, hi = kv_len;
  if (!explicit_mask) {
    if (batch.sliding_window > 0) lo = std::max<int64_t>(0, ctx + t0 - batch.sliding_window + 1);
    if (batch.causal) hi = ctx + t0 + tokens;
  }
  const int64_t first_ctx = lo / block_n;
  const int64_t n_ctx = lo < ctx ? (std::min(ctx, hi) + block_n - 1) / block_n - first_ctx : 0;
  const int64_t first_new = std::max<int64_t>(0, lo - ctx) / block_n;
  const int64_t n_new = hi > ctx ? (hi - ctx + block_n - 1) / block_n - first_new : 0;
  return n_ctx + n_new;
}

// A sequence's q tiles of tile_tokens new tokens as (first new token, cost in KV tiles), heaviest
// first (stable: ties keep the tokens' order).
struct QTile {
  int t0;
  int64_t cost;
};
std::vector<QTile> q_tiles_of(const Batch& batch, int seq, int tile_tokens, int block_n,
                              bool explicit_mask) {
  std::vector<QTile> tiles;
  const int64_t query_len = batch.query_lens[size_t(seq)];
  for (int64_t t0 = 0; t0 < query_len; t0 += tile_tokens) {
    const int64_t tokens = std::min<int64_t>(tile_tokens, query_len - t0);
    tiles.push_back({int(t0), kv_tiles_of(batch, seq, t0, tokens, block_n, explicit_mask)});
  }
  std::stable_sort(tiles.begin(), tiles.end(),
                   [](const QTile& a, const QTile& b) { return a.cost > b.cost; });
  return tiles;
}

}  // namespace

namespace {

struct ScheduledTile {
  int seq;
  QTile q;
};

// The q tiles of the given sequences, heaviest first; ties keep the sequences' order, then the
// tokens'.
std::vector<ScheduledTile> heaviest_first(const Batch& batch, const std::vector<int>& seqs,
                                          int tile_tokens, int block_n, bool explicit_mask) {
  std::vector<ScheduledTile> tiles;
  for (int s : seqs) {
    for (const QTile& q : q_tiles_of(batch, s, tile_tokens, block_n, explicit_mask)) {
      tiles.push_back({s, q});
    }
  }
  std::stable_sort(tiles.begin(), tiles.end(), [](const ScheduledTile& a, const ScheduledTile& b) {
    return a.q.cost > b.q.cost;
  });
  return tiles;
}

}  // namespace

std::vector<int> prefix_prefill_tile_schedule(const Batch& batch, int tile_tokens, int block_n,
                                              bool explicit_mask) {
  std::vector<int> seqs(size_t(batch.num_seqs));
  for (int s = 0; s < batch.num_seqs; ++s) seqs[size_t(s)] = s;
  std::vector<int> table;
  for (const ScheduledTile& t : heaviest_first(batch, seqs, tile_tokens, block_n, explicit_mask)) {
    table.push_back(t.seq);
    table.push_back(t.q.t0);
  }
  return table;
}

std::vector<int> prefix_prefill_cta_schedule(const Batch& batch, int tile_tokens, int block_n,
                                             int thin_rows) {
  struct Cta {
    int seq, t0, kv_head;
    int64_t cost;
  };
  const int kv_heads = batch.spec.model.num_kv_heads;
  const int group = batch.spec.model.num_q_heads / kv_heads;
  std::vector<int> full_seqs, thin_seqs;
  for (int s = 0; s < batch.num_seqs; ++s) {
    (batch.query_lens[size_t(s)] * group <= thin_rows ? thin_seqs : full_seqs).push_back(s);
  }
  // Full sequences: heaviest first by cost class (a power of two), and within a class kv head by
  // kv head, each head's tiles heaviest first.
  std::vector<Cta> full, thin;
  const std::vector<ScheduledTile> full_tiles =
      heaviest_first(batch, full_seqs, tile_tokens, block_n, false);
  for (int h = 0; h < kv_heads; ++h) {
    for (const ScheduledTile& t : full_tiles) full.push_back({t.seq, t.q.t0, h, t.q.cost});
  }
  const auto cost_class = [](int64_t cost) {
    int c = 0;
    while (cost > 1) cost >>= 1, ++c;
    return c;
  };
  std::stable_sort(full.begin(), full.end(), [&](const Cta& a, const Cta& b) {
    return cost_class(a.cost) > cost_class(b.cost);
  });
  // Thin sequences: (sequence, kv head) units heaviest first over all heads, a unit's tiles
  // together.
  struct Unit {
    int seq, kv_head;
    int64_t cost;
  };
  std::vector<Unit> units;
  for (int s : thin_seqs) {
    int64_t cost = 0;
    for (const QTile& q : q_tiles_of(batch, s, tile_tokens, block_n, false)) cost += q.cost;
    for (int h = 0; h < kv_heads; ++h) units.push_back({s, h, cost});
  }
  std::stable_sort(units.begin(), units.end(),
                   [](const Unit& a, const Unit& b) { return a.cost > b.cost; });
  for (const Unit& u : units) {
    for (const QTile& q : q_tiles_of(batch, u.seq, tile_tokens, block_n, false)) {
      thin.push_back({u.seq, q.t0, u.kv_head, q.cost});
    }
  }
  // Merge the two lists so that each has handed out the same fraction of its cost at every point:
  // take from the list that is behind (done / total, cross-multiplied; ties to the thin list).
  int64_t full_total = 0, thin_total = 0;
  for (const Cta& c : full) full_total += c.cost;
  for (const Cta& c : thin) thin_total += c.cost;
  std::vector<int> table;
  size_t f = 0, t = 0;
  int64_t full_done = 0, thin_done = 0;
  while (f < full.size() || t < thin.size()) {
    const bool take_thin =
        f == full.size() || (t < thin.size() && thin_done * full_total <= full_done * thin_total);
    const Cta& cta = take_thin ? thin[t++] : full[f++];
    (take_thin ? thin_done : full_done) += cta.cost;
    table.push_back(cta.seq);
    table.push_back(cta.t0);
    table.push_back(cta.kv_head);
  }
  return table;
}

Work prefix_prefill_work(const Batch& batch) {
  return minimum_work(batch, KvStorage::paged);
}

}  // namespace attn
