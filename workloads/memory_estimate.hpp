// Host memory a workload takes, estimated from the spec before anything is allocated
// (docs/workload.md, "Memory"). Each part is one structure's bytes; a command holds some of them
// at once (apps/memory_budget.hpp adds them up per command and checks the budget). Mask files are
// counted at their largest, from their size alone: nothing here reads them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "workloads/workload_spec.hpp"

namespace attn {

struct BatchMemory {
  // The Batch itself: per-sequence lengths, offsets and prefix arrays (~100 bytes a sequence,
  // generate_batch's temporaries included), the CSR page table, the slot mapping, the page order
  // of the pool, the trace rows of the spec.
  int64_t metadata = 0;
  // The padded page table [num_seqs, max_pages_per_seq] of int32 (workloads/batch.hpp,
  // padded_block_table): built for the GPU's inputs and for a dump, never held by the Batch.
  int64_t block_table = 0;
  // The block-sparse layout (int32 row offsets and columns per q head) and the explicit mask
  // (one byte per (query, key) pair of every sequence, and its offsets).
  int64_t masks = 0;
  // Reading mask files: the bytes and the parsed document (up to ~20 bytes per byte of a file of
  // small numbers), and for a layout file the largest layout it can expand to (4 bytes x q heads
  // x the file's size, within the limit of the layout's entries).
  int64_t mask_files = 0;
  // Q [total_q, num_q_heads, head_dim]; an output of its dtype is at most as large (its rows are
  // v_head_dim wide, and v_head_dim <= head_dim)
  int64_t query = 0;
  int64_t kv_pools = 0;  // K and V (V's rows v_head_dim wide), poison and spare pages included
  // An fp32 output [total_q, num_q_heads, v_head_dim] and its log-sum-exp [total_q, num_q_heads]:
  // a reference output, or the CPU reference variant's.
  int64_t reference = 0;
};

// Requires a spec that passed validate_workload (its totals are within the limits). Reads no
// file (a mask file's size comes from stat). Throws InputError when a block-sparse layout from
// parameters is over its entry limit (block_sparse_layout_size).
BatchMemory estimate_batch_memory(const WorkloadSpec& spec);

}  // namespace attn
