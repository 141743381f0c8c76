#include "workloads/traffic.hpp"

#include <algorithm>
#include <vector>

#include "workloads/visibility.hpp"

namespace attn {

namespace {

int64_t rows_in(const std::vector<KeyRange>& ranges) {
  int64_t rows = 0;
  for (const KeyRange& r : ranges) rows += r.size();
  return rows;
}

// The rows of sorted ranges at positions `limit` and after.
int64_t rows_from(const std::vector<KeyRange>& ranges, int64_t limit) {
  int64_t rows = 0;
  for (const KeyRange& r : ranges)
    rows += std::max<int64_t>(0, r.last - std::max(r.first, limit) + 1);
  return rows;
}

// Appends the parts of `ranges` before position `limit` to `out`.
void append_before(const std::vector<KeyRange>& ranges, int64_t limit, std::vector<KeyRange>& out) {
  for (const KeyRange& r : ranges) {
    if (r.first >= limit) break;
    out.push_back({r.first, std::min(r.last, limit - 1)});
  }
}

// The positions some range covers, the ranges in any order and possibly overlapping.
int64_t union_rows(std::vector<KeyRange> ranges) {
  std::sort(ranges.begin(), ranges.end(),
            [](const KeyRange& a, const KeyRange& b) { return a.first < b.first; });
  int64_t rows = 0, covered_to = -1;  // every position up to covered_to is counted
  for (const KeyRange& r : ranges) {
    const int64_t from = std::max(r.first, covered_to + 1);
    if (r.last >= from) rows += r.last - from + 1;
    covered_to = std::max(covered_to, r.last);
  }
  return rows;
}

// The pages of `page_size` tokens holding a position some range covers, the ranges sorted by
// their first position (they may overlap).
int64_t pages_touched(const std::vector<KeyRange>& ranges, int64_t page_size) {
  int64_t pages = 0, counted_to = -1;  // every page up to counted_to is counted
  for (const KeyRange& r : ranges) {
    const int64_t from = std::max(r.first / page_size, counted_to + 1), to = r.last / page_size;
    if (to >= from) pages += to - from + 1;
    counted_to = std::max(counted_to, to);
  }
  return pages;
}

}  // namespace

MinimumTraffic minimum_traffic(const Batch& batch, KvStorage storage) {
  const ModelShape& m = batch.spec.model;
  const size_t n = size_t(batch.num_seqs);
  MinimumTraffic t;
  const double q_rows = double(batch.total_q) * m.num_q_heads;
  t.q_bytes = q_rows * double(m.head_dim) * double(size_of(batch.dtype));
  t.out_bytes = q_rows * double(m.effective_v_head_dim()) * double(size_of(batch.dtype));

  // Visibility is the same for every kv head unless a block-sparse layout (per q head) says
  // otherwise: then each kv head is counted on its own, else kv head 0 stands for all.
  const bool per_head = key_ranges_depend_on_kv_head(batch);
  const int counted_heads = per_head ? m.num_kv_heads : 1;
  const int64_t weight = per_head ? 1 : m.num_kv_heads;
  const bool paged = storage == KvStorage::paged && batch.page_size > 0;
  const bool shared =
      paged && batch.prefix_source.size() == n && batch.shared_prefix_len.size() == n;

  // Sequences by the source of their shared prefix (a sequence without one is its own source).
  std::vector<std::vector<int>> members(n);
  for (size_t s = 0; s < n; ++s) {
    const bool shares = shared && batch.shared_prefix_len[s] > 0 && batch.prefix_source[s] >= 0 &&
                        size_t(batch.prefix_source[s]) < n;
    members[shares ? size_t(batch.prefix_source[s]) : s].push_back(int(s));
  }

  std::vector<std::vector<KeyRange>> ranges;  // [member * counted_heads + head]
  std::vector<KeyRange> scratch;
  for (size_t source = 0; source < n; ++source) {
    const std::vector<int>& group = members[source];
    if (group.empty()) continue;
    ranges.assign(group.size() * size_t(counted_heads), {});
    for (size_t i = 0; i < group.size(); ++i) {
      for (int g = 0; g < counted_heads; ++g) {
        ranges[i * size_t(counted_heads) + size_t(g)] = visible_key_ranges(batch, group[i], g);
      }
    }
    // Logical rows, and the pages of each sequence that hold a visible row of some kv head.
    for (size_t i = 0; i < group.size(); ++i) {
      scratch.clear();
      for (int g = 0; g < counted_heads; ++g) {
        const std::vector<KeyRange>& r = ranges[i * size_t(counted_heads) + size_t(g)];
        t.kv_rows += weight * rows_in(r);
        scratch.insert(scratch.end(), r.begin(), r.end());
      }
      if (paged) {
        if (per_head) {
          std::sort(scratch.begin(), scratch.end(),
                    [](const KeyRange& a, const KeyRange& b) { return a.first < b.first; });
        }
        t.page_entries += pages_touched(scratch, batch.page_size);
      }
    }
    // Unique rows: the source's rows, and the sharers' rows before their shared length, are the
    // same rows in memory (position p of a sharer's prefix is the source's position p); a
    // sharer's rows after it are its own.
    const bool has_sharers = group.size() > 1 || group.front() != int(source);
    for (int g = 0; g < counted_heads; ++g) {
      if (!has_sharers) {
        t.unique_kv_rows += weight * rows_in(ranges[size_t(g)]);
        continue;
      }
      scratch.clear();
      int64_t own = 0;
      for (size_t i = 0; i < group.size(); ++i) {
        const int s = group[i];
        const std::vector<KeyRange>& r = ranges[i * size_t(counted_heads) + size_t(g)];
        if (s == int(source)) {
          scratch.insert(scratch.end(), r.begin(), r.end());
        } else {
          const int64_t prefix = batch.shared_prefix_len[size_t(s)];
          append_before(r, prefix, scratch);
          own += rows_from(r, prefix);
        }
      }
      t.unique_kv_rows += weight * (union_rows(scratch) + own);
    }
  }

  // One K row and one V row per key row read; mla: one latent row (its V is inside it).
  const double kv_row_bytes =
      double(m.latent() ? m.head_dim : m.head_dim + m.effective_v_head_dim()) *
      double(size_of(batch.kv_dtype));
  t.kv_bytes = double(t.kv_rows) * kv_row_bytes;
  t.unique_kv_bytes = double(t.unique_kv_rows) * kv_row_bytes;
  t.page_table_bytes = 4.0 * double(t.page_entries);
  if (batch.kv_dtype == DType::fp8_e4m3 && t.kv_rows > 0) {
    t.scale_bytes = 4.0 * double(batch.k_scales.size() +
                                 (m.latent() ? 0 : batch.v_scales.size()));  // mla: V's is K's
  }
  if (batch.explicit_mask) t.mask_bytes = double(batch.explicit_mask->bits.size());
  return t;
}

double useful_flops(const Batch& batch) {
  const ModelShape& m = batch.spec.model;
  return 2.0 * double(m.head_dim + m.effective_v_head_dim()) * double(visible_pairs(batch));
}

}  // namespace attn
