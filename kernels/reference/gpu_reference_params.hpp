// Parameters of the GPU references (the naive one, gpu_reference.cuh, and the tiled one,
// gpu_tiled_reference.cuh) and the per-element rules both apply: which keys a query sees (a port of
// workloads/visibility.cpp key_visible), where an element of a paged pool lives, how a stored
// element decodes to float, and the fp8 scale of a kv head. Shared with the host (g++) so that CPU
// tests check these rules against the host's own code
// (tests/kernels/reference/gpu_reference_test.cpp); nothing here is shared with the optimised
// variants. No standard headers: NVRTC compiles this.
#pragma once

#include "base/host_device.hpp"
#include "kernels/common/dtype_code.hpp"

namespace attn {

// The batch's masks as the kernel reads them: the same fields key_visible() reads, uploaded as
// they are on the host (Batch, BlockSparseLayout, ExplicitMask).
struct GpuReferenceMask {
  const long long* context_lens;  // [num_seqs]
  const long long* kv_lens;       // [num_seqs]
  int causal;                     // 0 or 1
  long long sliding_window;       // 0: none
  // Block-sparse layout (BlockSparseLayout), when has_block_sparse.
  int has_block_sparse;
  const int* block_crow;  // [num_heads, num_blocks + 1]
  const int* block_col;   // [num_heads, max_nnz]
  int block_size;
  int block_num_blocks;
  int block_max_nnz;
  // Explicit mask (ExplicitMask), when has_explicit_mask: row-major (query_len, kv_len) per
  // sequence.
  int has_explicit_mask;
  const unsigned char* mask_bits;
  const long long* mask_offsets;  // [num_seqs + 1]
};

// Where (page, slot, kv head, dim) of one pool lives: an affine row part plus a per-dim table,
// since vLLM's K interleaves dim in x-wide chunks (workloads/batch_data.cpp pool_offset).
struct GpuReferencePool {
  const void* data;             // the pool, the batch's layout and kv dtype
  long long page_stride;        // elements
  long long slot_stride;        // elements
  long long head_stride;        // elements
  const long long* dim_offset;  // [head_dim] elements from the row's start
};

struct GpuReferenceParams {
  const void* q;  // [total_q, num_q_heads, head_dim], dtype
  GpuReferencePool k;
  GpuReferencePool v;
  const int* block_table;         // [num_seqs, max_pages_per_seq]
  const int* seq_of_token;        // [total_q]
  const long long* cu_seqlens_q;  // [num_seqs + 1]
  const float* k_scales;          // [num_k_scales]: 0 (not fp8), 1 (per tensor) or num_kv_heads
  const float* v_scales;          // [num_v_scales]
  int num_k_scales;
  int num_v_scales;
  const float* sink_logits;  // [num_q_heads], null without sinks
  GpuReferenceMask mask;
  float* out;  // [total_q, num_q_heads, v_head_dim] fp32
  float* lse;  // [total_q, num_q_heads] natural log; -inf for a row that sees no key
  long long total_q;
  int num_q_heads;
  int group;       // q heads per kv head
  int head_dim;    // Q and K rows
  int v_head_dim;  // V and output rows (model.v_head_dim, else head_dim)
  int page_size;
  int max_pages_per_seq;
  float softmax_scale;
  float soft_cap;  // 0: none
};

// Warps per CTA; each warp computes one output row (query token, q head) at a time.
constexpr int kGpuReferenceWarps = 4;
// Dims per lane: lane l holds dims l, l + 32, ...; 8 covers head_dim (and v_head_dim) 256, every
// standard-attention head. A latent row (multi-head latent attention: head_dim kv_lora_rank +
// qk_rope_head_dim, at most 1024 + 128) takes up to 36.
constexpr int kGpuReferenceDimsPerLane = 8;
constexpr int kGpuReferenceMaxDimsPerLane = 36;

// The dims per lane of the kernel that computes rows of these widths: kGpuReferenceDimsPerLane up
// to 256 (one kernel for every standard head), else the fewest multiple of 4 that covers the wider
// row (one kernel per latent width: 20 at 512 + 64, 36 at 1024 + 128; at exactly 18, ptxas picks 96
// registers and spills); 0 above 32 x kGpuReferenceMaxDimsPerLane.
ATTN_HOST_DEVICE constexpr int gpu_reference_dims_per_lane(int head_dim, int v_head_dim) {
  const int width = head_dim > v_head_dim ? head_dim : v_head_dim;
  if (width <= 32 * kGpuReferenceDimsPerLane) return kGpuReferenceDimsPerLane;
  if (width > 32 * kGpuReferenceMaxDimsPerLane) return 0;
  return (width + 127) / 128 * 4;
}

// key_visible() of workloads/visibility.cpp, line for line, on the uploaded fields.
ATTN_HOST_DEVICE inline bool gpu_reference_key_visible(const GpuReferenceMask& m, int seq,
                                                       int q_head, long long q_index,
                                                       long long key_pos) {
  const long long kv_len = m.kv_lens[seq];
  if (key_pos < 0 || key_pos >= kv_len) return false;
  if (m.has_explicit_mask != 0) {
    return m.mask_bits[m.mask_offsets[seq] + q_index * kv_len + key_pos] != 0;
  }
  const long long position = m.context_lens[seq] + q_index;
  if (m.causal != 0 && key_pos > position) return false;
  if (m.sliding_window > 0 && position - key_pos >= m.sliding_window) return false;
  if (m.has_block_sparse != 0) {
    // BlockSparseLayout::block_kept: a binary search of the query block's kept key blocks.
    const int q_block = int(position / m.block_size);
    const int k_block = int(key_pos / m.block_size);
    const int* row = m.block_crow + (long long)q_head * (m.block_num_blocks + 1) + q_block;
    const int* cols = m.block_col + (long long)q_head * m.block_max_nnz;
    int lo = row[0], hi = row[1];  // [lo, hi)
    while (lo < hi) {
      const int mid = lo + (hi - lo) / 2;
      if (cols[mid] < k_block) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return lo < row[1] && cols[lo] == k_block;
  }
  return true;
}

// The dequantisation scale of kv head `kv_head` (kv_scale() of the CPU reference).
ATTN_HOST_DEVICE inline float gpu_reference_kv_scale(const float* scales, int count, int kv_head) {
  if (count == 0) return 1.0f;
  return count == 1 ? scales[0] : scales[kv_head];
}

ATTN_HOST_DEVICE inline long long gpu_reference_pool_row(const GpuReferencePool& pool,
                                                         long long page, int slot, int head) {
  return page * pool.page_stride + slot * pool.slot_stride + head * pool.head_stride;
}

// Stored elements to float, by their bit patterns (no conversion intrinsics).
ATTN_HOST_DEVICE inline float gpu_reference_bits_to_float(unsigned int bits) {
#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
  return __uint_as_float(bits);
#else
  float f;
  __builtin_memcpy(&f, &bits, 4);
  return f;
#endif
}

ATTN_HOST_DEVICE inline float gpu_reference_bf16_to_float(unsigned short h) {
  return gpu_reference_bits_to_float((unsigned int)h << 16);
}

// IEEE half: 1 sign, 5 exponent (bias 15), 10 mantissa bits.
ATTN_HOST_DEVICE inline float gpu_reference_fp16_to_float(unsigned short h) {
  const unsigned int sign = (unsigned int)(h & 0x8000u) << 16;
  const unsigned int exponent = (h >> 10) & 0x1fu;
  const unsigned int mantissa = h & 0x3ffu;
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in float
    const float magnitude = float(mantissa) * 5.9604644775390625e-8f;
    return sign != 0 ? -magnitude : magnitude;
  }
  if (exponent == 0x1f) return gpu_reference_bits_to_float(sign | 0x7f800000u | (mantissa << 13));
  return gpu_reference_bits_to_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

// fp8 e4m3 ("fn": bias 7, no infinities, 0x7f/0xff NaN).
ATTN_HOST_DEVICE inline float gpu_reference_e4m3_to_float(unsigned char c) {
  const unsigned int sign = (unsigned int)(c & 0x80u) << 24;
  const unsigned int exponent = (c >> 3) & 0xfu;
  const unsigned int mantissa = c & 0x7u;
  if (exponent == 0xf && mantissa == 0x7) return gpu_reference_bits_to_float(0x7fc00000u);
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-9
    const float magnitude = float(mantissa) * 0.001953125f;
    return sign != 0 ? -magnitude : magnitude;
  }
  return gpu_reference_bits_to_float(sign | ((exponent + 120u) << 23) | (mantissa << 20));
}

// Element `index` of a bf16, fp16 or fp8 e4m3 array, as float (fp8: the code, unscaled).
template <int DTYPE>
ATTN_HOST_DEVICE inline float gpu_reference_load(const void* base, long long index) {
  if constexpr (DTYPE == kDTypeBf16) {
    return gpu_reference_bf16_to_float(static_cast<const unsigned short*>(base)[index]);
  } else if constexpr (DTYPE == kDTypeFp16) {
    return gpu_reference_fp16_to_float(static_cast<const unsigned short*>(base)[index]);
  } else {
    static_assert(DTYPE == kDTypeFp8E4m3, "the references read bf16, fp16 or fp8 e4m3");
    return gpu_reference_e4m3_to_float(static_cast<const unsigned char*>(base)[index]);
  }
}

}  // namespace attn
