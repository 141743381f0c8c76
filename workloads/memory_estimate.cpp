#include "workloads/memory_estimate.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <limits>

#include "workloads/block_sparse_layout.hpp"
#include "workloads/workload_validation.hpp"

namespace attn {

namespace {

// Bytes per sequence of the Batch's per-sequence arrays (context, query and kv lengths and their
// two prefix sums: 5 x 8; page_indptr, last_page_len, prefix_source: 3 x 4; shared_prefix_len: 8)
// and of generate_batch's temporaries (the drawn lengths: 16; shared pages: 8), rounded up.
constexpr int64_t kBytesPerSequence = 96;
// A parsed JSON document costs up to ~20 bytes per byte of input (strict_json.hpp); with the
// bytes themselves and the per-head vectors of a layout file, 24.
constexpr int64_t kBytesPerMaskFileByte = 24;

int64_t add(int64_t a, int64_t b) {
  int64_t out;
  return __builtin_add_overflow(a, b, &out) ? kInt64Max : out;
}

int64_t mul(int64_t a, int64_t b) {
  int64_t out;
  return __builtin_mul_overflow(a, b, &out) ? kInt64Max : out;
}

// The size of a mask file (mask files are read from paths only, never built in), or 0 when it
// cannot be read: the reader then refuses it.
int64_t file_size(const std::string& file, const std::string& resolved_path) {
  const std::string& path = resolved_path.empty() ? file : resolved_path;
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 ? int64_t(info.st_size) : 0;
}

}  // namespace

BatchMemory estimate_batch_memory(const WorkloadSpec& spec) {
  const WorkloadTotals t = workload_totals(spec);
  const ModelShape& m = spec.model;
  BatchMemory out;

  // Page ids in the order the allocator hands them out; the fragmented policy keeps a ring of
  // free pages and the pages of the requests it simulates besides (page_allocation.cpp).
  const int64_t page_order =
      mul(spec.kv_cache.allocation == PageAllocation::fragmented ? 12 : 4, t.num_pages);
  int64_t trace_rows = 0;
  for (const SequenceSpec& seq : spec.sequences) {
    if (seq.trace) trace_rows = add(trace_rows, int64_t(seq.trace->rows.size()));
  }
  out.metadata = add(add(mul(kBytesPerSequence, t.num_seqs), mul(4, t.page_entries)),
                     add(add(mul(8, t.total_q), page_order), mul(16, trace_rows)));
  out.block_table = mul(4, t.block_table_entries);

  int64_t longest = 0, grid = 0;
  for_each_sequence(spec, [&](const SequenceLengths& lengths) {
    const int64_t kv_len = lengths.context_len + lengths.query_len;
    longest = std::max(longest, kv_len);
    grid = add(grid, mul(lengths.query_len, kv_len));
  });
  if (spec.mask.block_sparse) {
    const BlockSparseSpec& sparse = *spec.mask.block_sparse;
    if (sparse.file.empty()) {
      out.masks =
          block_sparse_layout_size(sparse, m.num_q_heads, longest, "workload \"" + spec.name + "\"")
              .bytes();
    } else {
      // The layout a file expands to is known once it is read: at most one row offset and one
      // column per 2 bytes of the file (a digit and a comma) for each q head, and at most the
      // limit's entries of each.
      const int64_t bytes = file_size(sparse.file, sparse.resolved_path);
      out.masks = std::min(mul(4, mul(m.num_q_heads, bytes)), 8 * kMaxBlockSparseEntries);
      out.mask_files = mul(kBytesPerMaskFileByte, bytes);
    }
  }
  if (spec.mask.explicit_mask) {
    out.masks = add(grid, mul(8, add(t.num_seqs, 1)));
    const ExplicitMaskSpec& mask = *spec.mask.explicit_mask;
    if (mask.kind == ExplicitMaskKind::file) {
      out.mask_files = mul(kBytesPerMaskFileByte, file_size(mask.file, mask.resolved_path));
    }
  }

  out.query = t.query_bytes;
  out.kv_pools = t.kv_pool_bytes;
  const int64_t rows = mul(t.total_q, m.num_q_heads);
  out.reference = add(mul(4, mul(rows, m.effective_v_head_dim())), mul(4, rows));
  return out;
}

}  // namespace attn
