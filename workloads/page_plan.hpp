// How many pages a batch needs before any page id is chosen: pages per sequence, the pages a
// shared prefix saves, and the pool's capacity. One computation for the limits check
// (workload_totals, which streams the sequences without storing them) and the allocator
// (generate_batch), so the two cannot disagree.
#pragma once

#include <cstdint>

#include "workloads/workload_spec.hpp"

namespace attn {

struct SequencePages {
  int64_t pages = 0;          // ceil(kv_len / page_size)
  int32_t prefix_source = 0;  // the sequence whose pages lead this one's; itself without sharing
  int64_t shared_pages = 0;   // leading pages that are prefix_source's (0 for a source)
};

// Shared-prefix rule (allocation shared_prefix): sequences [g * group_size, (g + 1) * group_size)
// form group g, whose first sequence is the source. Every other sequence s of the group shares
//   min(tokens / page_size, context_len[s] / page_size, context_len[source] / page_size)
// whole pages with it: only complete pages of context can be shared, since a page holding a
// sequence's own new tokens differs between sequences. Sums saturate at INT64_MAX.
class PagePlanner {
 public:
  explicit PagePlanner(const WorkloadSpec& spec);

  // The next sequence of the batch, in order.
  SequencePages add(const SequenceLengths& lengths);

  // Pages the batch occupies: all pages minus the shared ones of non-source sequences.
  int64_t distinct_pages() const { return distinct_pages_; }
  // Pool capacity excluding the poison page: kv_cache.num_pages, or by default distinct_pages
  // (fragmented: twice that, room for the simulated serving history).
  int64_t pool_pages() const;

 private:
  const WorkloadSpec& spec_;
  int64_t page_size_ = 1;
  int64_t group_size_ = 1;
  int64_t prefix_pages_ = 0;
  bool sharing_ = false;
  int64_t next_seq_ = 0;
  int64_t source_context_pages_ = 0;
  int64_t distinct_pages_ = 0;
};

}  // namespace attn
