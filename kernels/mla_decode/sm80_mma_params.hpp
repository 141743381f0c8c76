// Kernel parameters of mla_decode.sm80_mma, shared by the host (which fills them) and the device
// code (which reads them). Pointers are device addresses.
#pragma once

namespace attn {

// One CTA column's work (mla_split_plan.hpp) with its sequence's query tokens and keys copied in:
// a CTA reads this one 32-byte item, then its page table and rows, and no per-sequence array.
struct alignas(16) MlaWorkItem {
  int seq, split, splits;
  int key_begin, key_end;  // the split's keys
  int q0;                  // the sequence's first query token (cu_seqlens_q[seq])
  int q_len;               // its query tokens
  int kv_len;              // its keys
};

struct MlaSm80Params {
  const void* q;           // [total_q, num_q_heads, rank + rope]: a row [q_nope absorbed | q_rope]
  const void* latent;      // [pages, page_size, rank + rope]: a row [c | k_rope]
  const int* block_table;  // [num_seqs, max_pages_per_seq], padding points at the poison page
  void* out;               // [total_q, num_q_heads, rank]
  // Work list (mla_decode/mla_split_plan.hpp): CTA column c computes split work[c].split of
  // sequence work[c].seq, keys [key_begin, key_end), for the row tile blockIdx.y. A sequence with
  // more than one split keeps the normalised partial rows in partial_out rows seq_partial[s] +
  // split ..., and the last of its CTAs to finish a row tile merges them.
  const MlaWorkItem* work;  // [ctas]
  const int* seq_partial;   // [num_seqs] first partial slot of each sequence
  int* split_counters;      // [num_seqs, row_tiles] finished splits; zero between launches
  float* partial_out;       // [partial slots, max rows per sequence, rank]
  float* partial_lse;       // [partial slots, max rows per sequence], log2-sum-exp of the logits
  float kv_scale;           // fp8 latent dequantisation scale (1 for 16-bit caches)
  float scale_log2;         // softmax_scale * log2(e)
  int num_q_heads;
  int page_size;
  int max_pages_per_seq;
  int max_rows;  // max query tokens per sequence x num_q_heads: rows of one partial slot
  int row_tiles;
  int causal;  // query token i of q_len sees keys 0 .. kv_len - q_len + i; else every key
};

}  // namespace attn
