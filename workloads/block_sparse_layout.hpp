// A block-sparse attention layout per q head in CSR form over blocks of block_size tokens, as seed
// 003's kernels read it: row i (a query block) of head h lists the key blocks it attends to, in
// increasing order. Built from the spec's parameters (local blocks + vertical stride + head
// sliding step) or read from a layout file; docs/masks.md describes both.
//
// The layout is indexed by q head, never by kv head: under GQA the q heads of one group share K
// and V but each keeps its own pattern (seed 003 reads row `off_h`, the q head).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace attn {

struct WorkloadSpec;
struct BlockSparseSpec;

struct BlockSparseLayout {
  int block_size = 64;
  int num_heads = 0;          // q heads
  int num_blocks = 0;         // blocks of the longest sequence (rows and columns)
  std::vector<int32_t> crow;  // [num_heads, num_blocks + 1], offsets into this head's part of col
  std::vector<int32_t> col;   // [num_heads, max_nnz]: head h's columns at col[h * max_nnz ...],
                              // padded with -1 after its last kept block
  int max_nnz = 0;            // the longest head's number of kept blocks (col row stride)

  // The kept key blocks of one query block, in increasing order: [begin, end).
  struct Row {
    const int32_t* begin;
    const int32_t* end;
  };
  Row row(int head, int q_block) const;

  // Whether key block `k_block` is kept for query block `q_block` of q head `head`. A binary
  // search of the row: O(log nnz of the row).
  bool block_kept(int head, int q_block, int k_block) const;
  int64_t kept_blocks(int head) const;
  double density() const;  // kept blocks over the causal lower triangle's blocks
};

// The most column entries (num_heads * max_nnz) a layout may hold: 1 GiB of int32. Checked
// before allocating; a long context with small blocks asks for a larger block_size.
inline constexpr int64_t kMaxBlockSparseEntries = int64_t(1) << 28;

// The layout the spec's mask.block_sparse describes, sized for sequences up to max_kv_len tokens
// and for the spec's num_q_heads heads. Throws InputError when the parameters are out of range,
// or when a layout file is malformed, does not cover max_kv_len, or has a head count other than
// num_q_heads or 1 (one head: every q head uses it).
BlockSparseLayout build_block_sparse_layout(const WorkloadSpec& spec, int64_t max_kv_len);

// The shape of a layout as built for the workload: num_heads q heads of num_blocks rows, the
// longest head keeping max_nnz blocks. Its bytes: 4 * num_heads * (num_blocks + 1 + max_nnz).
struct BlockSparseLayoutSize {
  int64_t num_heads = 0;
  int64_t num_blocks = 0;
  int64_t max_nnz = 0;
  int64_t bytes() const { return 4 * num_heads * (num_blocks + 1 + max_nnz); }
};

// The size of the layout the parameters describe, counted without building it (O(heads x
// blocks)); throws as block_sparse_layout_from_parameters does when it is over the limit.
BlockSparseLayoutSize block_sparse_layout_size(const BlockSparseSpec& params, int num_q_heads,
                                               int64_t max_kv_len, const std::string& source);

// A layout file read and checked against the workload (its q heads, its longest sequence) as
// read_block_sparse_layout_file does, without building the layout: the size it would have.
BlockSparseLayoutSize check_block_sparse_layout_file(const std::string& path,
                                                     const std::string& expected_sha256,
                                                     int num_q_heads, int64_t max_kv_len);

// The two sources build_block_sparse_layout chooses between. `source` names the workload in
// messages about the parameters.
BlockSparseLayout block_sparse_layout_from_parameters(const BlockSparseSpec& params,
                                                      int num_q_heads, int64_t max_kv_len,
                                                      const std::string& source);
// Reads the layout file at `path` (format in docs/masks.md); `expected_sha256` as in
// read_mask_json_file.
BlockSparseLayout read_block_sparse_layout_file(const std::string& path,
                                                const std::string& expected_sha256, int num_q_heads,
                                                int64_t max_kv_len);

}  // namespace attn
