// The GPU batch fill: Q and the paged K/V pools of a batch, computed on the device from the same
// per-element rule as the host generator (workloads/data_rule.hpp), so the bytes are identical to
// a host fill whatever the launch shape: every element is a pure function of its logical index.
//
// fill_query:   element i of Q is query_element(key, i).
// fill_kv_pool: one thread per (page entry, slot, head, dim) of the page table's entries; the
//   slot's sequence position reads its data token (a shared prefix reads its source's), and the
//   value (fp8: value / scale, then the code) is written where the layout puts it. Slots no entry
//   covers (the tail of a last page, the poison page, spare pages) keep the NaN the host side
//   writes first. Pages listed by several sequences (shared prefixes) get the same values from
//   each: the data rule redirects to the source sequence.
//
// Conversions round to nearest even like the host's: cvt.rn for bf16/fp16, and fp8 in integer
// arithmetic (kernels/common/fp8_e4m3.hpp). Compiled with --fmad=false so no product is fused
// into a differently rounded fma.
#pragma once

#include "kernels/common/dtype_code.hpp"
#include "kernels/common/fp8_e4m3.hpp"
#include "kernels/fill/batch_fill_params.hpp"
#include "workloads/data_rule.hpp"

namespace attn {

template <int DTYPE>
__device__ __forceinline__ void store_element(void* base, long long i, float value) {
  if constexpr (DTYPE == kDTypeBf16) {
    unsigned short h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(value));
    static_cast<unsigned short*>(base)[i] = h;
  } else if constexpr (DTYPE == kDTypeFp16) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(value));
    static_cast<unsigned short*>(base)[i] = h;
  } else if constexpr (DTYPE == kDTypeFp8E4m3) {
    static_cast<unsigned char*>(base)[i] = float_to_e4m3_rn(value);
  } else {
    static_cast<float*>(base)[i] = value;
  }
}

template <int DTYPE>
__global__ void fill_query(const BatchFillParams p) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < p.elements;
       i += stride) {
    store_element<DTYPE>(p.out, i, query_element(p.key, (unsigned long long)i));
  }
}

// The sequence that page entry k belongs to: the last s with page_indptr[s] <= k (an empty
// sequence's successor has the same indptr, so the last one is the non-empty owner).
__device__ __forceinline__ int sequence_of_entry(const int* page_indptr, int num_seqs,
                                                 long long k) {
  int lo = 0, hi = num_seqs - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (page_indptr[mid] <= k)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

template <int DTYPE>
__global__ void fill_kv_pool(const BatchFillParams p) {
  const DataStream stream = static_cast<DataStream>(p.stream);
  const PoolStrides s = p.strides;
  const long long step = (long long)gridDim.x * blockDim.x;
  for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < p.elements; e += step) {
    const int dim = int(e % p.head_dim);
    long long rest = e / p.head_dim;
    const int head = int(rest % p.num_heads);
    rest /= p.num_heads;
    const int slot = int(rest % p.page_size);
    const long long entry = rest / p.page_size;
    const int seq = sequence_of_entry(p.page_indptr, p.num_seqs, entry);
    const long long position = (entry - p.page_indptr[seq]) * p.page_size + slot;
    if (position >= p.kv_lens[seq]) continue;  // past the sequence's end: stays NaN
    const long long token =
        kv_data_token(p.cu_seqlens_kv, p.prefix_source, p.shared_prefix_len, seq, position);
    float value = kv_element(p.key, kv_data_index(token, head, dim, p.num_heads, p.head_dim),
                             kv_amplitude(stream, head, DTYPE == kDTypeFp8E4m3));
    if (DTYPE == kDTypeFp8E4m3) value = value / p.scales[p.num_scales == 1 ? 0 : head];
    const long long page = p.page_indices[entry];
    const long long offset = page * s.page_stride + slot * s.slot_stride + head * s.head_stride +
                             (dim / s.dim_pack) * s.dim_outer_stride +
                             (dim % s.dim_pack) * s.dim_inner_stride;
    store_element<DTYPE>(p.out, offset, value);
  }
}

}  // namespace attn
