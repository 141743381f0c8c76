// The layout type's queries, and the layout seed 003's model family builds from parameters.
#include "workloads/block_sparse_layout.hpp"

#include <algorithm>
#include <limits>

#include "base/errors.hpp"
#include "workloads/workload_spec.hpp"

namespace attn {

BlockSparseLayout::Row BlockSparseLayout::row(int head, int q_block) const {
  ATTN_ASSERT(head >= 0 && head < num_heads, "block-sparse head out of range");
  ATTN_ASSERT(q_block >= 0 && q_block < num_blocks, "block-sparse query block out of range");
  const int32_t* offsets = crow.data() + size_t(head) * size_t(num_blocks + 1) + size_t(q_block);
  const int32_t* cols = col.data() + size_t(head) * size_t(max_nnz);
  return {cols + offsets[0], cols + offsets[1]};
}

bool BlockSparseLayout::block_kept(int head, int q_block, int k_block) const {
  const Row r = row(head, q_block);
  return std::binary_search(r.begin, r.end, int32_t(k_block));
}

int64_t BlockSparseLayout::kept_blocks(int head) const {
  ATTN_ASSERT(head >= 0 && head < num_heads, "block-sparse head out of range");
  return crow[size_t(head) * size_t(num_blocks + 1) + size_t(num_blocks)];
}

double BlockSparseLayout::density() const {
  const double triangle = double(num_blocks) * double(num_blocks + 1) / 2.0 * double(num_heads);
  if (triangle == 0.0) return 0.0;
  double kept = 0.0;
  for (int h = 0; h < num_heads; ++h) kept += double(kept_blocks(h));
  return kept / triangle;
}

namespace {

// One head's rule over block rows: row i keeps the `local_blocks` blocks ending at the diagonal,
// and every earlier block j with (j + offset) % stride == 0, offset = h * head_sliding_step + 1.
// Counted and listed in O(1) per row and O(1) per column, so that a 128k context does not cost a
// scan of the whole triangle.
struct HeadRule {
  int64_t local_blocks;
  int64_t stride;
  int64_t first_vertical;  // the smallest j >= 0 with (j + offset) % stride == 0

  HeadRule(int64_t local, int64_t vertical_stride, int64_t offset)
      : local_blocks(local),
        stride(vertical_stride),
        first_vertical(((-offset) % vertical_stride + vertical_stride) % vertical_stride) {}

  int64_t local_begin(int64_t i) const { return std::max<int64_t>(0, i - local_blocks + 1); }
  int64_t vertical_count(int64_t i) const {  // vertical columns left of the local band
    const int64_t end = local_begin(i);
    return end > first_vertical ? (end - 1 - first_vertical) / stride + 1 : 0;
  }
  int64_t row_count(int64_t i) const { return vertical_count(i) + (i + 1 - local_begin(i)); }
  template <typename Emit>
  void emit_row(int64_t i, Emit&& emit) const {  // in increasing column order
    const int64_t band = local_begin(i);
    for (int64_t j = first_vertical; j < band; j += stride) emit(j);
    for (int64_t j = band; j <= i; ++j) emit(j);
  }
};

}  // namespace

namespace {

// The parameters' head rules and the layout's size, every limit checked: nothing is allocated
// beyond one rule per head.
struct ParameterLayoutPlan {
  std::vector<HeadRule> rules;
  BlockSparseLayoutSize size;
};

ParameterLayoutPlan plan_parameter_layout(const BlockSparseSpec& params, int num_q_heads,
                                          int64_t max_kv_len, const std::string& source) {
  std::vector<std::string> problems;
  const std::string at = "/mask/block_sparse/";
  if (params.block_size < 1) problems.push_back(at + "block_size: must be at least 1");
  if (params.local_blocks < 0) problems.push_back(at + "local_blocks: must be at least 0");
  if (params.vertical_stride < 1) problems.push_back(at + "vertical_stride: must be at least 1");
  if (num_q_heads < 1) problems.push_back("/model/num_q_heads: must be at least 1");
  if (!problems.empty()) throw InputError(source, problems);
  ATTN_ASSERT(max_kv_len >= 0, "negative max_kv_len");

  const int64_t num_blocks = (max_kv_len + params.block_size - 1) / params.block_size;
  const auto too_large = [&](int64_t entries) {
    return InputError(
        source, {at + "block_size: a layout of " + std::to_string(num_blocks) +
                 " blocks per sequence over " + std::to_string(num_q_heads) + " heads needs " +
                 std::to_string(entries) + " entries or more, over the limit of " +
                 std::to_string(kMaxBlockSparseEntries) + "; use larger blocks"});
  };
  // The row offsets alone bound the work of counting the kept blocks below.
  if ((num_blocks + 1) * num_q_heads > kMaxBlockSparseEntries) {
    throw too_large((num_blocks + 1) * num_q_heads);
  }
  ParameterLayoutPlan plan;
  int64_t max_nnz = 0;
  for (int h = 0; h < num_q_heads; ++h) {
    const int64_t rule_head = params.homo_head ? 0 : h;
    plan.rules.emplace_back(params.local_blocks, params.vertical_stride,
                            rule_head * int64_t(params.head_sliding_step) + 1);
    int64_t nnz = 0;
    for (int64_t i = 0; i < num_blocks; ++i) nnz += plan.rules.back().row_count(i);
    max_nnz = std::max(max_nnz, nnz);
  }
  if (max_nnz * num_q_heads > kMaxBlockSparseEntries) throw too_large(max_nnz * num_q_heads);
  plan.size = {num_q_heads, num_blocks, max_nnz};
  return plan;
}

}  // namespace

BlockSparseLayoutSize block_sparse_layout_size(const BlockSparseSpec& params, int num_q_heads,
                                               int64_t max_kv_len, const std::string& source) {
  return plan_parameter_layout(params, num_q_heads, max_kv_len, source).size;
}

BlockSparseLayout block_sparse_layout_from_parameters(const BlockSparseSpec& params,
                                                      int num_q_heads, int64_t max_kv_len,
                                                      const std::string& source) {
  const ParameterLayoutPlan plan = plan_parameter_layout(params, num_q_heads, max_kv_len, source);
  const std::vector<HeadRule>& rules = plan.rules;
  const int64_t num_blocks = plan.size.num_blocks;
  const int64_t max_nnz = plan.size.max_nnz;
  BlockSparseLayout layout;
  layout.block_size = params.block_size;
  layout.num_heads = num_q_heads;
  layout.num_blocks = int(num_blocks);
  layout.max_nnz = int(max_nnz);
  layout.crow.assign(size_t(num_q_heads) * size_t(num_blocks + 1), 0);
  layout.col.assign(size_t(num_q_heads) * size_t(max_nnz), -1);
  for (int h = 0; h < num_q_heads; ++h) {
    int32_t* crow = layout.crow.data() + size_t(h) * size_t(num_blocks + 1);
    int32_t* col = layout.col.data() + size_t(h) * size_t(max_nnz);
    int32_t n = 0;
    for (int64_t i = 0; i < num_blocks; ++i) {
      rules[size_t(h)].emit_row(i, [&](int64_t j) { col[n++] = int32_t(j); });
      crow[i + 1] = n;
    }
  }
  return layout;
}

BlockSparseLayout build_block_sparse_layout(const WorkloadSpec& spec, int64_t max_kv_len) {
  ATTN_ASSERT(spec.mask.block_sparse.has_value(), "the spec has no block-sparse mask");
  const BlockSparseSpec& params = *spec.mask.block_sparse;
  if (!params.file.empty()) {
    const std::string& path = params.resolved_path.empty() ? params.file : params.resolved_path;
    return read_block_sparse_layout_file(path, params.sha256, spec.model.num_q_heads, max_kv_len);
  }
  return block_sparse_layout_from_parameters(params, spec.model.num_q_heads, max_kv_len,
                                             "workload \"" + spec.name + "\"");
}

}  // namespace attn
