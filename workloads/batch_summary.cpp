#include "workloads/batch_summary.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <vector>

#include "workloads/batch_data.hpp"
#include "workloads/traffic.hpp"
#include "workloads/visibility.hpp"

namespace attn {

namespace {

std::string printf_string(const char* pattern, double a, double b = 0) {
  char text[64];
  std::snprintf(text, sizeof(text), pattern, a, b);
  return text;
}

std::string human_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 4) {
    bytes /= 1024;
    ++unit;
  }
  return printf_string(unit == 0 ? "%.0f " : "%.2f ", bytes) + units[unit];
}

std::string human_count(double n) {
  const char* units[] = {"", "K", "M", "G", "T", "P"};
  int unit = 0;
  while (n >= 1000 && unit < 5) {
    n /= 1000;
    ++unit;
  }
  return printf_string(unit == 0 ? "%.0f" : "%.2f", n) + units[unit];
}

std::vector<std::string> features_of(const Batch& batch) {
  const WorkloadSpec& spec = batch.spec;
  std::vector<std::string> out;
  std::string dtypes = "dtype " + to_string(batch.dtype) + ", kv " + to_string(batch.kv_dtype);
  if (batch.kv_dtype == DType::fp8_e4m3) {
    dtypes += batch.k_scales.size() == 1 ? " (per-tensor scales)" : " (per-head scales)";
  }
  out.push_back(dtypes);
  out.push_back("layout " + to_string(spec.kv_cache.layout) + ", allocation " +
                to_string(spec.kv_cache.allocation));
  out.push_back(batch.causal ? "causal" : "non-causal");
  if (batch.sliding_window > 0)
    out.push_back("sliding window " + std::to_string(batch.sliding_window));
  if (batch.logits_soft_cap > 0)
    out.push_back(printf_string("logits soft-cap %g", batch.logits_soft_cap));
  if (!batch.sink_logits.empty()) out.push_back("attention sinks (one logit per q head)");
  if (batch.block_sparse) {
    out.push_back("block-sparse, blocks of " + std::to_string(batch.block_sparse->block_size) +
                  printf_string(", density %.3f", batch.block_sparse->density()));
  }
  if (batch.explicit_mask && spec.mask.explicit_mask)
    out.push_back("explicit mask (" + to_string(spec.mask.explicit_mask->kind) + ")");
  const int64_t shared =
      std::count_if(batch.shared_prefix_len.begin(), batch.shared_prefix_len.end(),
                    [](int64_t n) { return n > 0; });
  if (shared > 0) out.push_back("shared prefix in " + std::to_string(shared) + " sequences");
  out.push_back(printf_string("softmax scale %.6g", batch.softmax_scale));
  return out;
}

// Buckets [0], [1], [2, 3], [4, 7], ... from the shortest to the longest length present.
std::vector<LengthBucket> log2_histogram(const std::vector<int64_t>& lengths) {
  auto bucket_of = [](int64_t n) {
    int b = 0;
    while (n > 0) {
      ++b;
      n >>= 1;
    }
    return b;  // 0 for 0, 1 for 1, 2 for 2..3, ...
  };
  std::vector<LengthBucket> buckets;
  if (lengths.empty()) return buckets;
  const auto [shortest, longest] = std::minmax_element(lengths.begin(), lengths.end());
  for (int b = bucket_of(*shortest); b <= bucket_of(*longest); ++b) {
    LengthBucket bucket;
    bucket.lo = b == 0 ? 0 : int64_t(1) << (b - 1);
    bucket.hi = b == 0 ? 0 : (int64_t(1) << b) - 1;
    buckets.push_back(bucket);
  }
  for (int64_t n : lengths) ++buckets[size_t(bucket_of(n) - bucket_of(*shortest))].count;
  return buckets;
}

}  // namespace

BatchSummary summarize_batch(const Batch& batch) {
  const ModelShape& m = batch.spec.model;
  BatchSummary s;
  s.sequences = batch.num_seqs;
  s.query_tokens = batch.total_q;
  s.kv_tokens = batch.total_kv;
  // Distinct pages (shared prefixes repeat theirs): one bit per pool page, not a tree node each.
  std::vector<bool> used(size_t(batch.num_pages), false);
  for (int32_t page : batch.page_indices) {
    if (!used[size_t(page)]) ++s.pages_used;
    used[size_t(page)] = true;
  }
  s.pages_capacity = batch.num_pages;
  const double kv_element = double(size_of(batch.kv_dtype));
  // K and V rows (V v_head_dim wide), or mla's one latent row (its V is inside it).
  const int row_dims = m.latent() ? m.head_dim : m.head_dim + m.effective_v_head_dim();
  s.kv_bytes = double(batch.total_kv) * m.num_kv_heads * row_dims * kv_element;
  s.kv_pool_bytes = double(pool_elements(batch, DataStream::key) +
                           (m.latent() ? 0 : pool_elements(batch, DataStream::value))) *
                    kv_element;
  s.q_bytes = double(query_elements(batch)) * double(size_of(batch.dtype));
  const MinimumTraffic traffic = minimum_traffic(batch, KvStorage::paged);
  s.minimum_bytes = traffic.bytes();
  s.unique_minimum_bytes = traffic.unique_bytes();
  s.visible_pairs = visible_pairs(batch);
  s.useful_flops = useful_flops(batch);
  s.features = features_of(batch);
  s.kv_length_histogram = log2_histogram(batch.kv_lens);
  return s;
}

std::string format_batch_summary(const Batch& batch, const BatchSummary& s) {
  const ModelShape& m = batch.spec.model;
  std::ostringstream out;
  out << "workload   " << batch.spec.name << " (" << batch.spec_hash << ")\n";
  if (!batch.spec.description.empty()) out << "           " << batch.spec.description << "\n";
  if (m.latent()) {
    out << "model      " << m.num_q_heads << " q heads, multi-head latent attention: kv_lora_rank "
        << m.kv_lora_rank << ", qk_rope_head_dim " << m.qk_rope_head_dim << " (latent rows of "
        << m.head_dim << ")\n";
  } else {
    out << "model      " << m.num_q_heads << " q heads, " << m.num_kv_heads << " kv heads (GQA "
        << batch.spec.group_size() << "), head_dim " << m.head_dim;
    if (m.effective_v_head_dim() != m.head_dim)
      out << " (V and output " << m.effective_v_head_dim() << ")";
    out << "\n";
  }
  out << "sequences  " << s.sequences << " (query tokens " << s.query_tokens << ", kv tokens "
      << s.kv_tokens << ", max query_len " << batch.max_query_len() << ", max kv_len "
      << batch.max_kv_len() << ")\n";
  out << "pages      " << s.pages_used << " used of " << s.pages_capacity
      << " in the pool (page size " << batch.page_size << ", the poison page included)\n";
  out << "bytes      KV " << human_bytes(s.kv_bytes) << " in the sequences' pages (pools "
      << human_bytes(s.kv_pool_bytes) << "), Q " << human_bytes(s.q_bytes) << "\n";
  out << "traffic    minimum " << human_bytes(s.minimum_bytes) << " logical per pass, "
      << human_bytes(s.unique_minimum_bytes)
      << " unique (Q, output, the K/V rows some query sees and their page-table entries; "
         "unique: rows of pages shared through a common prefix once)\n";
  out << "work       " << human_count(double(s.visible_pairs))
      << " visible (head, query, key) pairs, " << human_count(s.useful_flops)
      << (m.latent() ? "FLOP useful ((2 * (kv_lora_rank + qk_rope_head_dim) + 2 * kv_lora_rank) "
                       "* pairs)\n"
          : m.effective_v_head_dim() == m.head_dim
              ? "FLOP useful (4 * head_dim * pairs)\n"
              : "FLOP useful (2 * (head_dim + v_head_dim) * pairs)\n");
  out << "features   ";
  for (size_t i = 0; i < s.features.size(); ++i) out << (i ? "; " : "") << s.features[i];
  out << "\n\nkv_len histogram (log2 buckets)\n";
  int64_t most = 1;
  for (const auto& b : s.kv_length_histogram) most = std::max(most, b.count);
  for (const auto& b : s.kv_length_histogram) {
    char range[48];
    std::snprintf(range, sizeof(range), "%lld..%lld", (long long)b.lo, (long long)b.hi);
    const int bar = int((b.count * 40 + most - 1) / most);
    char line[160];
    std::snprintf(line, sizeof(line), "  %17s %8lld  %s\n", range, (long long)b.count,
                  std::string(size_t(bar), '#').c_str());
    out << line;
  }
  return out.str();
}

}  // namespace attn
