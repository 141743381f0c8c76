// flash_fwd_gather_kv: copies K and V of a variable-length batch from the paged pool (NHD or HND)
// into contiguous [total_kv, num_kv_heads, head_dim] (K) and [total_kv, num_kv_heads, v_head_dim]
// (V) tensors, the layout the dense kernels
// (flash_fwd.sm80_mma, flash_fwd.sm90_wgmma, blocksparse) read. Run once in prepare(), outside
// any timing. Host side: gather_kv_contiguous (gathered_kv.hpp).
#pragma once

#include "kernels/flash_fwd/gather_kv_params.hpp"

namespace attn {

// Copies K and V of every sequence from the paged pool into contiguous tensors, one 16-byte chunk
// of K (and the same chunk of V, where V's narrower rows have it) per thread and step
// (grid-stride), element_bytes to an element: an fp8 cache's codes stay codes (the kernels
// dequantise them on their way into shared memory). Not part of the timed attention: it stands
// in for a caller whose K/V are contiguous already.
__global__ void flash_fwd_gather_kv(const FlashFwdGatherParams p) {
  const int row_bytes = p.head_dim * p.element_bytes, v_row_bytes = p.v_head_dim * p.element_bytes;
  const int chunks = row_bytes / 16;
  const long long total = p.total_kv * p.num_kv_heads * chunks;
  const unsigned char* k_pool = static_cast<const unsigned char*>(p.k_pool);
  const unsigned char* v_pool = static_cast<const unsigned char*>(p.v_pool);
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
       i += (long long)gridDim.x * blockDim.x) {
    const int chunk = int(i % chunks);
    const long long row = i / chunks;  // token * num_kv_heads + head
    const int head = int(row % p.num_kv_heads);
    const long long token = row / p.num_kv_heads;
    int lo = 0, hi = p.num_seqs;  // the sequence s with cu[s] <= token < cu[s + 1]
    while (hi - lo > 1) {
      const int mid = (lo + hi) / 2;
      if (p.cu_seqlens_kv[mid] <= token) {
        lo = mid;
      } else {
        hi = mid;
      }
    }
    const int pos = int(token - p.cu_seqlens_kv[lo]);
    const int page = p.block_table[(long long)lo * p.max_pages_per_seq + pos / p.page_size];
    // Pool strides are in elements; the copy in bytes.
    const long long from =
        ((long long)page * p.page_stride + (long long)(pos % p.page_size) * p.token_stride +
         head * p.head_stride) *
            p.element_bytes +
        chunk * 16;
    *reinterpret_cast<uint4*>(static_cast<unsigned char*>(p.k) + row * row_bytes + chunk * 16) =
        *reinterpret_cast<const uint4*>(k_pool + from);
    if (chunk * 16 < v_row_bytes) {
      const long long v_from =
          ((long long)page * p.v_page_stride + (long long)(pos % p.page_size) * p.v_token_stride +
           head * p.v_head_stride) *
              p.element_bytes +
          chunk * 16;
      *reinterpret_cast<uint4*>(static_cast<unsigned char*>(p.v) + row * v_row_bytes + chunk * 16) =
          *reinterpret_cast<const uint4*>(v_pool + v_from);
    }
  }
}

}  // namespace attn
