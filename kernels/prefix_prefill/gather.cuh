// The prefix_prefill variants' one-off gather (run by prepare(), not timed): the new tokens' K
// and V copied from their cache slots (slot_mapping) into contiguous rows K_new / V_new, as seed
// 002's kernel receives them; and the paged-pool addressing it shares with prefix_prefill.sm80_mma.
#pragma once

#include "kernels/prefix_prefill/sm80_mma_params.hpp"

namespace attn {
namespace prefix_prefill::sm80_mma {

// Element `e` of a key: the key's page through the block table, then the layout's strides.
__device__ __forceinline__ long long paged_offset(const PoolStrides& s, int page, int slot,
                                                  int head, long long index) {
  return (long long)page * s.page + (long long)head * s.head + (long long)slot * s.token +
         index * s.chunk;
}

}  // namespace prefix_prefill::sm80_mma

// prepare()'s one-off gather of the new tokens' K and V (see PrefixPrefillGatherParams). A thread
// per (row, kv head, K dim); V's rows are v_head_dim wide, at most K's, so the threads of its
// dims copy V too.
__global__ void prefix_prefill_gather(const PrefixPrefillGatherParams p) {
  const PrefixPrefillSeq info = p.seqs[blockIdx.y];
  const int padded = (info.query_len + 15) / 16 * 16;
  const long long per_row = (long long)p.num_kv_heads * p.head_dim;
  const long long elements = padded * per_row;
  const char* k_pool = static_cast<const char*>(p.k_pool);
  const char* v_pool = static_cast<const char*>(p.v_pool);
  unsigned char* k_new = static_cast<unsigned char*>(p.k_new);
  unsigned char* v_new = static_cast<unsigned char*>(p.v_new);
  for (long long index = blockIdx.x * (long long)blockDim.x + threadIdx.x; index < elements;
       index += (long long)gridDim.x * blockDim.x) {
    const int i = int(index / per_row);
    const int head = int(index / p.head_dim % p.num_kv_heads), dim = int(index % p.head_dim);
    const long long row = info.new_start + i;
    const long long k_dst = ((row * p.num_kv_heads + head) * p.head_dim + dim) * p.element_bytes;
    const bool has_v = dim < p.v_head_dim;
    const long long v_dst =
        (p.v_dim_major ? ((long long)head * p.v_head_dim + dim) * p.new_rows + row
                       : (row * p.num_kv_heads + head) * p.v_head_dim + dim) *
        p.element_bytes;
    long long k_src = -1, v_src = -1;
    if (i < info.query_len) {
      const long long slot = p.slot_mapping[info.q_start + i];
      const int page = int(slot / p.page_size), offset = int(slot % p.page_size);
      k_src = prefix_prefill::sm80_mma::paged_offset(p.k_strides, page, offset, head,
                                                     dim / p.k_chunk_elements) +
              (dim % p.k_chunk_elements) * p.element_bytes;
      v_src = prefix_prefill::sm80_mma::paged_offset(p.v_strides, page, offset, head,
                                                     dim / p.v_chunk_elements) +
              (dim % p.v_chunk_elements) * p.element_bytes;
    }
    for (int b = 0; b < p.element_bytes; ++b) {
      k_new[k_dst + b] = k_src >= 0 ? (unsigned char)k_pool[k_src + b] : 0;
      if (has_v) v_new[v_dst + b] = v_src >= 0 ? (unsigned char)v_pool[v_src + b] : 0;
    }
  }
}

}  // namespace attn
