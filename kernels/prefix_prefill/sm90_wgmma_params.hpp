// Kernel parameters of prefix_prefill.sm90_wgmma, shared by the host (which fills them) and the
// device code (which reads them). The struct is a __grid_constant__ kernel parameter: TMA reads
// the tensor maps from parameter memory. 16-bit elements, except an fp8 cache's K/V (1 byte each:
// the pools and the gathered new tokens, read by the producer warpgroup, never by TMA).
#pragma once

#include "kernels/common/tensor_map_bytes.hpp"
#include "kernels/prefix_prefill/sm80_mma_params.hpp"
#include "kernels/prefix_prefill/sm90_fp8_copies_params.hpp"

namespace attn {

struct PrefixPrefillSm90Params {
  // q [total_q, num_q_heads, head_dim] as the 3-D tensor (head_dim, num_q_heads, total_q); a box
  // is 64 dims x group heads x tile_tokens tokens: the CTA's rows, token-major.
  TensorMapBytes q_map;
  // The K and V pools as 5-D tensors of page boxes landing interleaved (launch_inputs.hpp,
  // paged_pool_interleaved_tensor_map), or at head dims 80 and 96 as 4-D tensors of a column block
  // per box (paged_pool_tensor_map); encoded only where the context comes as TMA boxes
  // (prefix_prefill::sm90_wgmma::copies_context false).
  TensorMapBytes k_map;
  TensorMapBytes v_map;
  // K_new and V_new [new_rows, num_kv_heads * head_dim (V: v_head_dim)] as (64, 8 rows, kv heads x
  // column blocks, new_rows / 8): a box is tile_n rows of one kv head, interleaved; at head dims 80
  // and 96 as (dims, kv heads, new_rows), a box one column block of tile_n rows.
  TensorMapBytes k_new_map;
  TensorMapBytes v_new_map;
  void* out;                     // [total_q, num_q_heads, v_head_dim]
  const int* block_table;        // [num_seqs, max_pages_per_seq]
  const int* tiles;              // [items, 3]: (sequence, first token, kv head); see the schedule
  int* schedule;                 // [2], zero between launches: items handed out, CTAs done
  int items;                     // work items (rows of tiles); the grid is at most one per SM
  const PrefixPrefillSeq* seqs;  // [num_seqs]
  const float* sink_log2;        // [num_q_heads] sink logit * log2(e); null without sinks
  // The pools themselves, for the cp.async path: element (page, slot, kv head, dim) lies at
  // page * page_stride + slot * token_stride + kv_head * head_stride + dim.
  const unsigned short* k_pool;  // [pages, page_size, kv_heads, head_dim] (NHD) or
  const unsigned short* v_pool;  // [pages, kv_heads, page_size, head_dim] (HND)
  int page_stride;
  int token_stride;
  int head_stride;
  int num_q_heads;
  int group;        // num_q_heads / num_kv_heads
  int tile_tokens;  // new tokens per CTA: tile_m / group (rows = tokens x group, token-major)
  int page_size;
  int max_pages_per_seq;
  int causal;  // 0: a new token sees every new token of its sequence
  int hnd;     // 1: HND pools (the pool maps' coordinates differ from NHD's)
  // Logits as in PrefixPrefillParams: score_scale * q.k in the log2 domain, or with a soft-cap
  // (cap_log2 > 0) cap_log2 * tanh(score_scale * q.k).
  float score_scale;
  float cap_log2;
  // An fp8 cache (KV_FP8): the gathered new tokens' codes, K_new [new_rows, kv_heads, head_dim]
  // and V_new alike (the pools' codes are k_pool / v_pool, their strides in bytes), and the
  // dequantisation scales per kv head (a per-tensor scale repeated): K's multiplies the logits,
  // V's the output. Null otherwise.
  const unsigned char* k_new;
  const unsigned char* v_new;
  const float* k_scale;  // [num_kv_heads]
  const float* v_scale;  // [num_kv_heads]
  int new_rows;          // rows of K_new / V_new (zero-filled past them)
  // An fp8 cache with fp8_dequant=1 (KV_SCALES without KV_FP8): the codes the kernel converts to
  // the 16-bit copies its tensor maps read (sm90_fp8_copies.cuh). Zero otherwise.
  PrefixPrefillFp8Copies copies;
};

}  // namespace attn
