// Host-side derivations of kernel inputs that several CUDA variants share: the log2-domain logit
// transform (scale, soft-cap), sink logits in log2, fp8 dequantisation scales per KV head, the
// sliding window a kernel must apply, the dynamic shared-memory opt-in of a loaded kernel, its
// resident CTAs per SM, device copies of host arrays, and the TMA descriptor of a paged pool (the
// sm_90a variants' page boxes).
#pragma once

#include <algorithm>
#include <vector>

#include "kernels/common/tensor_map_bytes.hpp"
#include "kernels/exec_context.hpp"
#include "workloads/batch.hpp"

namespace attn {

constexpr double kLog2e = 1.4426950408889634;

// Logits in the log2 domain. Without soft-cap: logit2 = score_scale * q.k. With soft-cap
// (cap_log2 > 0): logit2 = cap_log2 * tanh(score_scale * q.k), where score_scale is then
// softmax_scale / cap and cap_log2 = cap * log2(e).
struct LogitTransform {
  float score_scale = 0.0f;
  float cap_log2 = 0.0f;
};
LogitTransform log2_logit_transform(const Batch& batch);

// [num_q_heads] sink logits * log2(e); empty without sinks.
std::vector<float> sink_logits_log2(const Batch& batch);

// [num_kv_heads] scales: a per-tensor scale repeated, per-head scales as given, 1 when empty.
std::vector<float> scales_per_kv_head(const std::vector<float>& scales, int num_kv_heads);

// The window a kernel must apply: 0 when there is none or when it is at least as long as every
// sequence (it then hides nothing).
int effective_sliding_window(const Batch& batch);

// Lets `kernel` use `bytes` of dynamic shared memory (above the 48 KiB default).
void allow_dynamic_shared_memory(const ExecContext& context, CUfunction kernel, int bytes);

// CTAs of a loaded `kernel` one SM holds at once, as the smallest of the shared-memory, thread and
// register limits (the per-block shared-memory limit stands in for the SM's, within a few KiB on
// sm_80+; registers are allocated per warp in units of 256). At least 1.
int resident_ctas(const ExecContext& context, CUfunction kernel, int shared_bytes, int threads);
// The same limits for a kernel not compiled yet, from an estimate of its registers per thread.
int resident_ctas(const Target& target, int shared_bytes, int threads, int registers);

// A device copy of a host array (at least one element's bytes, so an empty array has an address).
template <typename T>
DeviceBuffer upload_array(const CudaContext& cuda, const std::vector<T>& values) {
  DeviceBuffer buffer(cuda, std::max<size_t>(1, values.size()) * sizeof(T));
  if (!values.empty()) buffer.upload(values.data(), values.size() * sizeof(T));
  return buffer;
}

// An fp8 cache's scales per kv head (scales_per_kv_head) uploaded into a buffer appended to
// `owned`, which must outlive the kernels that read it; the device address of the floats.
inline const float* upload_kv_scales(const CudaContext& cuda, const std::vector<float>& scales,
                                     int num_kv_heads, std::vector<DeviceBuffer>& owned) {
  owned.push_back(upload_array(cuda, scales_per_kv_head(scales, num_kv_heads)));
  return static_cast<const float*>(owned.back().pointer());
}

// A paged K or V pool of 16-bit elements as its tensor maps see it: the batch's (paged_pool_shape),
// or 16-bit copies a kernel reads instead of an fp8 cache, in pages of their own.
struct PagedPoolShape {
  DType dtype = DType::bf16;
  bool hnd =
      false;  // [pages, kv_heads, page_size, row] (else NHD: [pages, page_size, kv_heads, row])
  int64_t kv_heads = 0;
  int64_t page_size = 0;
  int64_t row = 0;  // elements of a key's row (head_dim, or a V pool's v_head_dim)
  int64_t pages = 0;
};
// The batch's pool: its dtype, layout, kv heads, page size and pages; rows of head_dim, or of
// row_dims where not 0 (a V pool of v_head_dim).
PagedPoolShape paged_pool_shape(const Batch& batch, int row_dims = 0);

// A pool in the NHD or HND layout as a 4-D tensor, innermost first:
//   (row, then kv heads and tokens of a page in the pool's stride order, pages)
// NHD: (row, kv_heads, page_size, pages); HND: (row, page_size, kv_heads, pages).
// A box is 64 dims (at a multiple of 64; past the row zero-filled) x box_tokens keys of one kv
// head and page, written 128-byte swizzled; box_tokens must divide the page size and be at most
// 256. token_coordinate is the coordinate (1 or 2) that holds the slot in the page; the kv head is
// the other of the two.
struct PagedPoolTensorMap {
  TensorMapBytes map;
  int token_coordinate = 0;
};
PagedPoolTensorMap paged_pool_tensor_map(const ExecContext& context,
                                         const PagedPoolShape& pool_shape, const void* pool,
                                         int box_tokens);

// The same pool as a 5-D tensor whose boxes land interleaved (sm90_attention::interleaved_offset:
// [keys / 8][row / 64][8][64]), so that one box brings every column block of box_tokens keys of
// one kv head and page (paged_pool_tensor_map needs a box per column block):
//   NHD: (64, 8 tokens, kv_heads x row / 64 blocks, page_size / 8, pages)
//   HND: (64, 8 tokens, row / 64 blocks, kv_heads x page_size / 8, pages)
// (dims and column blocks of one kv head, and 8-token groups of one head, are evenly strided in
// the respective layout). A box is (64, 8, row / 64, box_tokens / 8, 1) at coordinates
// NHD (0, 0, kv_head x row / 64, slot / 8, page), HND (0, 0, 0, kv_head x page_size / 8 +
// slot / 8, page). page_size and box_tokens must be multiples of 8, box_tokens at most 2048, the
// row a multiple of 64.
TensorMapBytes paged_pool_interleaved_tensor_map(const ExecContext& context,
                                                 const PagedPoolShape& pool_shape, const void* pool,
                                                 int box_tokens);

}  // namespace attn
