// workload_totals: the sizes the whole-batch limits are checked against (workload_validation.hpp).

#include <algorithm>
#include <limits>

#include "workloads/page_plan.hpp"
#include "workloads/workload_validation.hpp"

namespace attn {

namespace {

int64_t saturating_add(int64_t a, int64_t b) {
  int64_t out;
  return __builtin_add_overflow(a, b, &out) ? kInt64Max : out;
}

int64_t saturating_mul(int64_t a, int64_t b) {
  int64_t out;
  return __builtin_mul_overflow(a, b, &out) ? kInt64Max : out;
}

int64_t largest(const LengthSpec& length) {
  return length.is_fixed() ? length.value : length.max;
}

int64_t trace_rows_used(const TraceSpec& trace) {
  const int64_t rows = int64_t(trace.rows.size());
  const int64_t first = std::min(trace.first, rows);
  return trace.count ? std::min(rows - first, *trace.count) : rows - first;
}

}  // namespace

WorkloadTotals workload_totals(const WorkloadSpec& spec) {
  WorkloadTotals t;
  const int64_t page_size = std::max(1, spec.kv_cache.page_size);
  for (const SequenceSpec& seq : spec.sequences) {
    t.num_seqs = saturating_add(t.num_seqs, seq.trace ? trace_rows_used(*seq.trace) : seq.count);
  }

  PagePlanner planner(spec);
  auto count = [&](const SequenceLengths& lengths, int64_t times) {
    const int64_t kv_len = saturating_add(lengths.context_len, lengths.query_len);
    const int64_t pages = kv_len / page_size + (kv_len % page_size != 0 ? 1 : 0);
    t.total_kv = saturating_add(t.total_kv, saturating_mul(times, kv_len));
    t.total_q = saturating_add(t.total_q, saturating_mul(times, lengths.query_len));
    t.page_entries = saturating_add(t.page_entries, saturating_mul(times, pages));
    t.max_pages_per_seq = std::max(t.max_pages_per_seq, pages);
  };
  if (t.num_seqs <= kMaxSequences) {
    for_each_sequence(spec, [&](const SequenceLengths& lengths) {
      count(lengths, 1);
      planner.add(lengths);
    });
    t.used_pages = planner.distinct_pages();
    t.pool_pages = planner.pool_pages();
  } else {
    // Too many to draw (the count is reported anyway): bound each entry by its largest lengths.
    for (const SequenceSpec& seq : spec.sequences) {
      if (seq.trace) continue;  // at most 2^20 rows each: immaterial beside > 2^20 sequences
      const SequenceLengths lengths{largest(seq.context_len), largest(seq.query_len)};
      count(lengths, seq.count);
      const int64_t kv_len = saturating_add(lengths.context_len, lengths.query_len);
      const int64_t pages = kv_len / page_size + (kv_len % page_size != 0 ? 1 : 0);
      t.used_pages = saturating_add(t.used_pages, saturating_mul(seq.count, pages));
    }
    t.pool_pages = spec.kv_cache.num_pages.value_or(t.used_pages);
  }
  t.num_pages = saturating_add(t.pool_pages, 1);
  t.block_table_entries = saturating_mul(t.num_seqs, t.max_pages_per_seq);
  const int64_t kv_size = int64_t(size_of(spec.model.effective_kv_dtype()));
  // One token's K row and V row together (V is v_head_dim wide); mla: its one latent row.
  const int64_t row_dims = spec.model.latent() ? int64_t(spec.model.head_dim)
                                               : int64_t(spec.model.head_dim) +
                                                     int64_t(spec.model.effective_v_head_dim());
  const int64_t kv_row =
      saturating_mul(saturating_mul(int64_t(spec.model.num_kv_heads), row_dims), kv_size);
  t.kv_pool_bytes = saturating_mul(saturating_mul(t.num_pages, page_size), kv_row);
  const int64_t q_size = int64_t(size_of(spec.model.dtype));
  const int64_t q_row = saturating_mul(
      saturating_mul(int64_t(spec.model.num_q_heads), int64_t(spec.model.head_dim)), q_size);
  t.query_bytes = saturating_mul(t.total_q, q_row);
  return t;
}

}  // namespace attn
