#include "workloads/page_plan.hpp"

#include <algorithm>
#include <limits>

namespace attn {

namespace {

int64_t saturating_add(int64_t a, int64_t b) {
  int64_t out;
  return __builtin_add_overflow(a, b, &out) ? std::numeric_limits<int64_t>::max() : out;
}

}  // namespace

PagePlanner::PagePlanner(const WorkloadSpec& spec)
    : spec_(spec), page_size_(std::max(1, spec.kv_cache.page_size)) {
  sharing_ = spec.kv_cache.allocation == PageAllocation::shared_prefix &&
             spec.kv_cache.shared_prefix.has_value();
  if (sharing_) {
    group_size_ = std::max(1, spec.kv_cache.shared_prefix->group_size);
    prefix_pages_ = std::max<int64_t>(0, spec.kv_cache.shared_prefix->tokens) / page_size_;
  }
}

SequencePages PagePlanner::add(const SequenceLengths& lengths) {
  SequencePages out;
  const int64_t s = next_seq_++;
  const int64_t kv_len = saturating_add(lengths.context_len, lengths.query_len);
  out.pages = kv_len / page_size_ + (kv_len % page_size_ != 0 ? 1 : 0);
  out.prefix_source = int32_t(s / group_size_ * group_size_);
  const int64_t context_pages = lengths.context_len / page_size_;
  if (out.prefix_source == s) {
    source_context_pages_ = context_pages;
  } else if (sharing_) {
    out.shared_pages = std::min({prefix_pages_, context_pages, source_context_pages_});
  }
  distinct_pages_ = saturating_add(distinct_pages_, out.pages - out.shared_pages);
  return out;
}

int64_t PagePlanner::pool_pages() const {
  if (spec_.kv_cache.num_pages) return *spec_.kv_cache.num_pages;
  if (spec_.kv_cache.allocation == PageAllocation::fragmented) {
    return saturating_add(distinct_pages_, distinct_pages_);
  }
  return distinct_pages_;
}

}  // namespace attn
