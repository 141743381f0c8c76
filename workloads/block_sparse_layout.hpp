// A block-sparse attention layout per q head in CSR form over blocks of block_size tokens, as seed
// 003's kernels read it: row i (a query block) of head h lists the key blocks it attends to, in
// increasing order. Built from the spec's parameters (local blocks + vertical stride + head
// sliding step) or read from a layout file; see docs/workload.md, "Masks".
#pragma once

#include <cstdint>
#include <vector>

namespace attn {

struct WorkloadSpec;

struct BlockSparseLayout {
  int block_size = 64;
  int num_heads = 0;   // q heads
  int num_blocks = 0;  // blocks of the longest sequence (rows and columns)
  std::vector<int32_t> crow;  // [num_heads, num_blocks + 1], offsets into this head's part of col
  std::vector<int32_t> col;   // [num_heads, max_nnz]: head h's columns at col[h * max_nnz ...]
  int max_nnz = 0;            // the longest head's number of kept blocks (col row stride)

  // Whether key block `k_block` is kept for query block `q_block` of q head `head`.
  bool block_kept(int head, int q_block, int k_block) const;
  int64_t kept_blocks(int head) const;
  double density() const;  // kept blocks over the causal lower triangle's blocks
};

// The layout the spec's mask.block_sparse describes, sized for sequences up to max_kv_len tokens.
// Throws InputError when a file layout does not cover max_kv_len or num_q_heads.
BlockSparseLayout build_block_sparse_layout(const WorkloadSpec& spec, int64_t max_kv_len);

}  // namespace attn
