#include "workloads/batch.hpp"

#include <algorithm>
#include <numeric>

#include "base/errors.hpp"
#include "workloads/counter_rng.hpp"
#include "workloads/workload_validation.hpp"

namespace attn {

namespace {

// Counter stream of the page shuffle; apart from the data streams (DataStream: 1, 2, 3) so that
// the permutation and the tensor values are independent.
constexpr unsigned kPageShuffleStream = 16;

// A uniform integer in [0, bound) from 64 random bits (Lemire's multiply-shift). The bias is at
// most bound / 2^64 (< 2^-33 here): immaterial for a page shuffle, and it keeps one draw per step.
uint64_t below(uint64_t bits, uint64_t bound) {
  return uint64_t((static_cast<unsigned __int128>(bits) * bound) >> 64);
}

// Fisher-Yates over [0, n): step i (from n-1 down to 1) swaps i with a draw in [0, i], the draw
// being counter i of the shuffle stream. Portable: the same permutation on every platform.
std::vector<int32_t> shuffled_pages(int64_t n, uint64_t seed) {
  std::vector<int32_t> pages(static_cast<size_t>(n));
  std::iota(pages.begin(), pages.end(), 0);
  const unsigned long long key = stream_key(seed, kPageShuffleStream);
  for (int64_t i = n - 1; i > 0; --i) {
    const uint64_t j = below(counter_bits(key, uint64_t(i)), uint64_t(i) + 1);
    std::swap(pages[size_t(i)], pages[size_t(j)]);
  }
  return pages;
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
  std::vector<std::string> problems = validate_workload(spec);
  if (!problems.empty()) throw InputError("workload \"" + spec.name + "\"", problems);
  const WorkloadTotals totals = workload_totals(spec);

  Batch b;
  b.spec = spec;
  b.spec_hash = content_hash(spec);
  b.softmax_scale = float(spec.effective_softmax_scale());
  b.dtype = spec.model.dtype;
  b.kv_dtype = spec.model.effective_kv_dtype();
  b.causal = spec.mask.causal;
  b.data_seed = spec.seed;
  b.page_size = spec.kv_cache.page_size;

  // Sequences: each entry repeated `count` times, in order.
  b.num_seqs = int(totals.num_seqs);
  b.context_lens.reserve(size_t(b.num_seqs));
  b.query_lens.reserve(size_t(b.num_seqs));
  for (const SequenceLengths& seq : expand_sequences(spec)) {
    b.context_lens.push_back(seq.context_len);
    b.query_lens.push_back(seq.query_len);
  }
  b.kv_lens.resize(size_t(b.num_seqs));
  b.cu_seqlens_q.assign(size_t(b.num_seqs) + 1, 0);
  b.cu_seqlens_kv.assign(size_t(b.num_seqs) + 1, 0);
  b.page_indptr.assign(size_t(b.num_seqs) + 1, 0);
  b.last_page_len.assign(size_t(b.num_seqs), 0);
  const int64_t page_size = b.page_size;
  for (size_t s = 0; s < size_t(b.num_seqs); ++s) {
    const int64_t kv_len = b.context_lens[s] + b.query_lens[s];
    const int64_t pages = (kv_len + page_size - 1) / page_size;
    b.kv_lens[s] = kv_len;
    b.cu_seqlens_q[s + 1] = b.cu_seqlens_q[s] + b.query_lens[s];
    b.cu_seqlens_kv[s + 1] = b.cu_seqlens_kv[s] + kv_len;
    b.page_indptr[s + 1] = int32_t(b.page_indptr[s] + pages);
    b.last_page_len[s] = pages == 0 ? 0 : int32_t(kv_len - (pages - 1) * page_size);
    b.max_pages_per_seq = std::max(b.max_pages_per_seq, int(pages));
  }
  b.total_q = b.cu_seqlens_q.back();
  b.prefix_source.resize(size_t(b.num_seqs));
  std::iota(b.prefix_source.begin(), b.prefix_source.end(), 0);
  b.shared_prefix_len.assign(size_t(b.num_seqs), 0);
  b.total_kv = b.cu_seqlens_kv.back();

  // Pages: the used ones plus the poison page. Sequential hands them out in order with the
  // poison page last; shuffled takes them from a permutation of the whole pool, the poison page
  // being the entry after the last used one (so it sits anywhere in the pool too).
  const int64_t used_pages = b.page_indptr.back();
  b.num_pages = used_pages + 1;
  if (spec.kv_cache.allocation == PageAllocation::sequential) {
    b.page_indices.resize(size_t(used_pages));
    std::iota(b.page_indices.begin(), b.page_indices.end(), 0);
    b.poison_page = int32_t(used_pages);
  } else {
    std::vector<int32_t> order = shuffled_pages(b.num_pages, spec.seed);
    b.poison_page = order[size_t(used_pages)];
    order.resize(size_t(used_pages));
    b.page_indices = std::move(order);
  }

  const size_t width = size_t(b.max_pages_per_seq);
  b.block_table.assign(size_t(b.num_seqs) * width, b.poison_page);
  for (size_t s = 0; s < size_t(b.num_seqs); ++s) {
    std::copy(b.page_indices.begin() + b.page_indptr[s],
              b.page_indices.begin() + b.page_indptr[s + 1], b.block_table.begin() + s * width);
  }

  // New tokens are the last query_len positions of each sequence.
  b.slot_mapping.resize(size_t(b.total_q));
  for (size_t s = 0; s < size_t(b.num_seqs); ++s) {
    for (int64_t i = 0; i < b.query_lens[s]; ++i) {
      const int64_t position = b.context_lens[s] + i;
      const int64_t page = b.page_indices[size_t(b.page_indptr[s] + position / page_size)];
      b.slot_mapping[size_t(b.cu_seqlens_q[s] + i)] = page * page_size + position % page_size;
    }
  }
  return b;
}

}  // namespace attn
