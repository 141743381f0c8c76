// Parameters of the GPU batch fill (batch_fill.cuh), filled by the host (batch_fill.cpp).
//
// A pool's element (page, slot, head, dim) lives at
//   page * page_stride + slot * slot_stride + head * head_stride
//     + (dim / dim_pack) * dim_outer_stride + (dim % dim_pack) * dim_inner_stride
// which covers NHD, HND and both vLLM pools (vLLM's K packs dim_pack = 16 bytes of elements). The
// host derives these strides from workloads' pool_offset, the one definition of the layouts, and
// checks them against it, so the device holds no layout formula of its own.
#pragma once

namespace attn {

struct PoolStrides {
  long long page_stride;
  long long slot_stride;
  long long head_stride;
  long long dim_outer_stride;
  long long dim_inner_stride;
  int dim_pack;
};

struct BatchFillParams {
  void* out;               // Q [total_q, num_q_heads, head_dim], or a K/V pool
  long long elements;      // Q: its elements; pool: page entries * page_size * heads * head_dim
  unsigned long long key;  // stream_key(data_seed, stream)
  // Pool fills only:
  const int* page_indptr;              // [num_seqs + 1]
  const int* page_indices;             // [page_indptr[num_seqs]]
  const long long* kv_lens;            // [num_seqs]
  const long long* cu_seqlens_kv;      // [num_seqs + 1]
  const int* prefix_source;            // [num_seqs]
  const long long* shared_prefix_len;  // [num_seqs]
  const float* scales;                 // fp8: [1] or [num_kv_heads]; else null
  int num_scales;
  unsigned int stream;  // DataStream: key or value
  int num_seqs;
  int num_heads;
  int head_dim;
  int page_size;
  PoolStrides strides;
};

}  // namespace attn
