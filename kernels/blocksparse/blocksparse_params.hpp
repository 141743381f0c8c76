// Kernel parameters of the blocksparse family, shared by the host (which fills them) and the device
// code (which reads them). Pointers are device addresses; 16-bit elements (bf16 or fp16), or an
// fp8 cache's K/V codes (1 byte each) with their scales. K and V
// are contiguous, gathered once from the paged pool in prepare() (flash_fwd_gather_kv), as seed
// 003's kernel reads them.
#pragma once

namespace attn {

// blocksparse.sm80_mma: one CTA per (query tile, q head).
struct BlockSparseMmaParams {
  const void* q;             // [total_q, num_q_heads, head_dim]
  const void* k;             // [total_kv, num_kv_heads, head_dim]
  const void* v;             // [total_kv, num_kv_heads, v_head_dim]
  void* out;                 // [total_q, num_q_heads, v_head_dim]
  const int* cu_seqlens_q;   // [num_seqs + 1]
  const int* cu_seqlens_kv;  // [num_seqs + 1]
  // [num_tiles][2]: (sequence, position tile t: positions [t * TILE_M, (t + 1) * TILE_M)) of each
  // CTA column, heaviest first (blockIdx.x).
  const int* tiles;
  const int* crow;  // [num_q_heads, num_blocks + 1] the layout's CSR offsets per head
  const int* col;   // [num_q_heads, max_nnz] the kept block columns per head, increasing
  int num_blocks;
  int max_nnz;
  int block_size;  // tokens per layout block; a multiple of TILE_M and TILE_N
  int num_q_heads;
  int num_kv_heads;
  int group;         // num_q_heads / num_kv_heads
  float scale_log2;  // softmax_scale * log2(e): logits in the log2 domain
  // An fp8 cache: the dequantisation scales per kv head (a per-tensor scale repeated); K's
  // multiplies the logits, V's the output. Null otherwise.
  const float* k_scale;  // [num_kv_heads]
  const float* v_scale;  // [num_kv_heads]
};

// blocksparse.sm80_mma_decode: one CTA per (sequence, kv head), the group's q heads in the M rows.
struct BlockSparseDecodeParams {
  const void* q;             // [num_seqs, num_q_heads, head_dim] (one query token per sequence)
  const void* k;             // [total_kv, num_kv_heads, head_dim]
  const void* v;             // [total_kv, num_kv_heads, head_dim]
  void* out;                 // [num_seqs, num_q_heads, head_dim]
  const int* cu_seqlens_kv;  // [num_seqs + 1]
  // [num_ctas][2]: (sequence, kv head) of each CTA, heaviest first (blockIdx.x).
  const int* ctas;
  // [num_ctas + 1]: CTA c's key tiles are entries [entry_begin[c], entry_begin[c + 1]).
  const int* entry_begin;
  // [num_entries][2]: (first key of a TILE_N-key tile, sequence-local; bit r set when q head
  // kv_head * group + r keeps the tile's layout block). Tiles lie inside one layout block.
  const int* entries;
  int num_q_heads;
  int num_kv_heads;
  int group;         // num_q_heads / num_kv_heads, at most 16 (the mma's M rows)
  float scale_log2;  // softmax_scale * log2(e)
  // An fp8 cache: as BlockSparseMmaParams' (per kv head). Null otherwise.
  const float* k_scale;  // [num_kv_heads]
  const float* v_scale;  // [num_kv_heads]
};

}  // namespace attn
