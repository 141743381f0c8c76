#include "workloads/batch.hpp"

#include <algorithm>
#include <numeric>

#include "base/errors.hpp"
#include "workloads/counter_rng.hpp"
#include "workloads/data_rule.hpp"
#include "workloads/page_allocation.hpp"
#include "workloads/page_plan.hpp"
#include "workloads/workload_validation.hpp"

namespace attn {

namespace {

// Counter stream of the seeded sink logits.
constexpr unsigned kSinkLogitStream = 18;

// Dequantisation scales of an fp8 cache (data_rule.hpp): per head, the head's amplitude mapped
// onto the fp8 range; per tensor, the largest amplitude of the heads.
std::vector<float> fp8_scales(const WorkloadSpec& spec, DataStream stream) {
  const int heads = spec.model.num_kv_heads;
  std::vector<float> scales(static_cast<size_t>(heads));
  for (int h = 0; h < heads; ++h) scales[size_t(h)] = fp8_scale_for(kv_amplitude(stream, h, true));
  if (spec.model.kv_scale == KvScaleGranularity::per_tensor) {
    return {*std::max_element(scales.begin(), scales.end())};
  }
  return scales;
}

// One sink logit per q head: the explicit ones, or seeded uniform in [-1, 3) (around the size of
// a typical logit, so that the sink takes a visible but not dominant share of the softmax).
std::vector<float> sink_logits(const WorkloadSpec& spec) {
  if (!spec.model.attention_sinks) return {};
  std::vector<float> out(static_cast<size_t>(spec.model.num_q_heads));
  const unsigned long long key = stream_key(spec.seed, kSinkLogitStream);
  for (int h = 0; h < spec.model.num_q_heads; ++h) {
    out[size_t(h)] = spec.model.sink_logits.empty()
                         ? 1.0f + 2.0f * counter_uniform_pm1(key, uint64_t(h))
                         : float(spec.model.sink_logits[size_t(h)]);
  }
  return out;
}

}  // namespace

bool Batch::decode_only() const {
  return std::all_of(query_lens.begin(), query_lens.end(), [](int64_t q) { return q == 1; });
}

int64_t Batch::max_query_len() const {
  return query_lens.empty() ? 0 : *std::max_element(query_lens.begin(), query_lens.end());
}

int64_t Batch::max_kv_len() const {
  return kv_lens.empty() ? 0 : *std::max_element(kv_lens.begin(), kv_lens.end());
}

Batch generate_batch(const WorkloadSpec& spec) {
  // Specs built in code skip parse_workload: check them here, before anything is allocated.
  size_t omitted = 0;
  std::vector<std::string> problems = validate_workload(spec, &omitted);
  if (!problems.empty()) throw InputError("workload \"" + spec.name + "\"", problems, omitted);

  Batch b;
  b.spec = spec;
  b.spec_hash = content_hash(spec);
  b.softmax_scale = float(spec.effective_softmax_scale());
  b.logits_soft_cap = float(spec.model.logits_soft_cap.value_or(0.0));
  b.sliding_window = spec.model.sliding_window.value_or(0);
  b.causal = spec.mask.causal;
  b.sink_logits = sink_logits(spec);
  b.dtype = spec.model.dtype;
  b.kv_dtype = spec.model.effective_kv_dtype();
  if (b.kv_dtype == DType::fp8_e4m3) {
    b.k_scales = fp8_scales(spec, DataStream::key);
    // mla: the one latent pool is read as K and as V, so V's scale is K's.
    b.v_scales = spec.model.latent() ? b.k_scales : fp8_scales(spec, DataStream::value);
  }
  b.data_seed = spec.seed;
  b.page_size = spec.kv_cache.page_size;

  // Sequences in batch order, and how many pages each needs and shares.
  const std::vector<SequenceLengths> lengths = expand_sequences(spec);
  const size_t n = lengths.size();
  b.num_seqs = int(n);
  b.context_lens.resize(n);
  b.query_lens.resize(n);
  b.kv_lens.resize(n);
  b.cu_seqlens_q.assign(n + 1, 0);
  b.cu_seqlens_kv.assign(n + 1, 0);
  b.page_indptr.assign(n + 1, 0);
  b.last_page_len.assign(n, 0);
  b.prefix_source.resize(n);
  b.shared_prefix_len.assign(n, 0);
  std::vector<int64_t> shared_pages(n, 0);
  PagePlanner planner(spec);
  const int64_t page_size = b.page_size;
  for (size_t s = 0; s < n; ++s) {
    const SequencePages pages = planner.add(lengths[s]);
    const int64_t kv_len = lengths[s].context_len + lengths[s].query_len;
    b.context_lens[s] = lengths[s].context_len;
    b.query_lens[s] = lengths[s].query_len;
    b.kv_lens[s] = kv_len;
    b.cu_seqlens_q[s + 1] = b.cu_seqlens_q[s] + lengths[s].query_len;
    b.cu_seqlens_kv[s + 1] = b.cu_seqlens_kv[s] + kv_len;
    b.page_indptr[s + 1] = int32_t(b.page_indptr[s] + pages.pages);
    b.last_page_len[s] = pages.pages == 0 ? 0 : int32_t(kv_len - (pages.pages - 1) * page_size);
    b.max_pages_per_seq = std::max(b.max_pages_per_seq, int(pages.pages));
    b.prefix_source[s] = pages.prefix_source;
    shared_pages[s] = pages.shared_pages;
    b.shared_prefix_len[s] = pages.shared_pages * page_size;
  }
  b.total_q = b.cu_seqlens_q.back();
  b.total_kv = b.cu_seqlens_kv.back();

  // Pages: a sequence's shared leading pages are its source's; the rest come off the policy's
  // order, which ends with the poison page right after the batch's last page. Pool pages beyond
  // those are spare: nobody's, NaN like the poison page.
  const std::vector<int32_t> order =
      page_order(spec.kv_cache.allocation, planner.pool_pages(), spec.seed);
  b.num_pages = int64_t(order.size());
  b.page_indices.resize(size_t(b.page_indptr.back()));
  size_t next = 0;
  for (size_t s = 0; s < n; ++s) {
    const int32_t begin = b.page_indptr[s];
    const int32_t source_begin = b.page_indptr[size_t(b.prefix_source[s])];
    for (int32_t k = 0; k < b.page_indptr[s + 1] - begin; ++k) {
      b.page_indices[size_t(begin + k)] =
          k < shared_pages[s] ? b.page_indices[size_t(source_begin + k)] : order[next++];
    }
  }
  b.poison_page = order[next];

  // New tokens are the last query_len positions of each sequence.
  b.slot_mapping.resize(size_t(b.total_q));
  for (size_t s = 0; s < n; ++s) {
    for (int64_t i = 0; i < b.query_lens[s]; ++i) {
      const int64_t position = b.context_lens[s] + i;
      const int64_t page = b.page_indices[size_t(b.page_indptr[s] + position / page_size)];
      b.slot_mapping[size_t(b.cu_seqlens_q[s] + i)] = page * page_size + position % page_size;
    }
  }

  // Masks beyond causal and window: built from the finished batch (block_sparse_layout.hpp,
  // explicit_mask.hpp).
  if (spec.mask.block_sparse) b.block_sparse = build_block_sparse_layout(spec, b.max_kv_len());
  if (spec.mask.explicit_mask) b.explicit_mask = build_explicit_mask(b);
  return b;
}

std::vector<int32_t> padded_block_table(const Batch& batch) {
  const size_t n = size_t(batch.num_seqs);
  const size_t width = size_t(batch.max_pages_per_seq);
  std::vector<int32_t> table(n * width, batch.poison_page);
  for (size_t s = 0; s < n; ++s) {
    std::copy(batch.page_indices.begin() + batch.page_indptr[s],
              batch.page_indices.begin() + batch.page_indptr[s + 1], table.begin() + s * width);
  }
  return table;
}

}  // namespace attn
