#include "workloads/mask_checks.hpp"

#include <algorithm>
#include <vector>

#include "base/errors.hpp"
#include "workloads/block_sparse_layout.hpp"
#include "workloads/explicit_mask.hpp"

namespace attn {

namespace {

std::string workload_source(const WorkloadSpec& spec) {
  return "workload \"" + spec.name + "\"";
}

int64_t longest_kv_len(const WorkloadSpec& spec) {
  int64_t longest = 0;
  for_each_sequence(spec, [&](const SequenceLengths& lengths) {
    longest = std::max(longest, lengths.context_len + lengths.query_len);
  });
  return longest;
}

}  // namespace

void check_mask_limits(const WorkloadSpec& spec) {
  if (spec.mask.block_sparse && spec.mask.block_sparse->file.empty()) {
    block_sparse_layout_size(*spec.mask.block_sparse, spec.model.num_q_heads, longest_kv_len(spec),
                             workload_source(spec));
  }
  if (spec.mask.explicit_mask) {
    int64_t total = 0;
    bool over = false;
    for_each_sequence(spec, [&](const SequenceLengths& lengths) {
      int64_t grid = 0;
      over = over ||
             __builtin_mul_overflow(lengths.query_len, lengths.context_len + lengths.query_len,
                                    &grid) ||
             __builtin_add_overflow(total, grid, &total) || total > kMaxExplicitMaskEntries;
    });
    if (over) {
      throw InputError(workload_source(spec),
                       {"/mask/explicit_mask: the batch's explicit mask needs more than " +
                        std::to_string(kMaxExplicitMaskEntries) +
                        " entries (the sum of query_len x kv_len over sequences); use shorter "
                        "sequences or a mask rule (causal, sliding_window, block_sparse)"});
    }
  }
}

void check_mask_files(const WorkloadSpec& spec) {
  if (spec.mask.block_sparse && !spec.mask.block_sparse->file.empty()) {
    const BlockSparseSpec& sparse = *spec.mask.block_sparse;
    const std::string& path = sparse.resolved_path.empty() ? sparse.file : sparse.resolved_path;
    check_block_sparse_layout_file(path, sparse.sha256, spec.model.num_q_heads,
                                   longest_kv_len(spec));
  }
  if (spec.mask.explicit_mask && spec.mask.explicit_mask->kind == ExplicitMaskKind::file) {
    const ExplicitMaskSpec& mask = *spec.mask.explicit_mask;
    const std::string& path = mask.resolved_path.empty() ? mask.file : mask.resolved_path;
    check_explicit_mask_file(expand_sequences(spec), path, mask.sha256);
  }
}

}  // namespace attn
