// The least memory traffic a batch makes an attention kernel move: the bytes behind GB/s and the
// fraction of the read ceiling. Counted from what the masks let a query see
// (visible_key_ranges, visibility.hpp), never from the whole KV cache, in one place for every
// kernel family.
//
// What is counted (each at most once per sequence, except as said):
//   Q and output  every query row of every q head: total_q x num_q_heads x the Q dtype, times
//                 head_dim for Q (read once) and v_head_dim for the output (written once;
//                 kv_lora_rank for mla).
//   K and V       per sequence and kv head, the rows (one token's elements) that some query of
//                 some q head of that kv head's GQA group sees: window, causal range, the
//                 block-sparse layout of each q head (the union over the group) and the explicit
//                 mask's columns. head_dim (K) plus v_head_dim (V) times the KV element size
//                 (fp8: 1 byte) per row. A sequence without queries reads nothing.
//                 mla: one latent row (kv_lora_rank + qk_rope_head_dim elements, c and k_rope)
//                 per visible key, once: the row is K and its first kv_lora_rank elements V.
//   page table    (paged storage) one 4-byte entry per page of a sequence that holds at least one
//                 visible row of some kv head; pages no query sees need no entry.
//   fp8 scales    the K and V dequantisation scales (4 bytes each: one per tensor or per kv head),
//                 once for the batch (mla: the latent pool's one scale).
//   mask          an explicit mask's grid as stored, one byte per (query, key) entry.
// Not counted: sequence lengths and other per-sequence metadata (a few bytes per sequence),
// attention sinks (one float per q head) and anything a kernel writes besides the output.
//
// Logical and unique. With allocation shared_prefix a group of sequences points at the same pages
// for a common prefix (Batch::prefix_source, Batch::shared_prefix_len). The logical count reads
// those rows once per sequence that sees them, as a kernel that works sequence by sequence asks
// for them; the unique count reads each row in memory once (the rows of the prefix that some
// sequence of the group sees, once for the group). Moving less than the logical count from DRAM
// is possible only where data comes from L2: shared pages, or data left there by an earlier
// launch. Contiguous storage (K/V gathered per sequence) shares nothing: unique == logical.
#pragma once

#include <cstdint>

#include "workloads/batch.hpp"

namespace attn {

// Where a kernel reads K and V from: the paged pools through the page table, or contiguous per
// sequence buffers gathered from them before timing (flash_fwd, blocksparse).
enum class KvStorage { paged, contiguous };

struct MinimumTraffic {
  // (sequence, kv head, key) rows of K (and as many of V) read: logical, and distinct in memory.
  int64_t kv_rows = 0;
  int64_t unique_kv_rows = 0;
  int64_t page_entries = 0;  // page-table entries read (paged storage)
  double q_bytes = 0;
  double out_bytes = 0;
  double kv_bytes = 0;         // K and V, logical
  double unique_kv_bytes = 0;  // K and V, each row in memory once
  double page_table_bytes = 0;
  double scale_bytes = 0;
  double mask_bytes = 0;

  double bytes() const {  // logical minimum
    return q_bytes + out_bytes + kv_bytes + page_table_bytes + scale_bytes + mask_bytes;
  }
  double unique_bytes() const {  // unique minimum: shared prefix rows once for the batch
    return q_bytes + out_bytes + unique_kv_bytes + page_table_bytes + scale_bytes + mask_bytes;
  }
};

// Closed form per sequence and kv head without a block-sparse layout or an explicit mask; per kept
// block with a layout; one pass over the grid with a mask: a 128k-token prefill is counted in
// milliseconds.
MinimumTraffic minimum_traffic(const Batch& batch, KvStorage storage);

// The useful FLOPs of the batch: per visible (q head, query, key) pair, head_dim multiply-adds for
// Q.K and v_head_dim for P.V, 2 FLOPs each: 2 * (head_dim + v_head_dim) * visible_pairs (4 *
// head_dim * visible_pairs when V is as wide as K). mla (effective_v_head_dim is kv_lora_rank):
// 2 * (kv_lora_rank + qk_rope_head_dim) for the score and 2 * kv_lora_rank for the output in
// latent space.
double useful_flops(const Batch& batch);

}  // namespace attn
