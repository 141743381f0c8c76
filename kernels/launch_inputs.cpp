#include "kernels/launch_inputs.hpp"

#include "kernels/device/cuda_context.hpp"
#include "kernels/device/tensor_map.hpp"

namespace attn {

LogitTransform log2_logit_transform(const Batch& batch) {
  const double scale = double(batch.softmax_scale);
  LogitTransform t;
  if (batch.logits_soft_cap > 0) {
    const double cap = double(batch.logits_soft_cap);
    t.score_scale = float(scale / cap);
    t.cap_log2 = float(cap * kLog2e);
  } else {
    t.score_scale = float(scale * kLog2e);
  }
  return t;
}

std::vector<float> sink_logits_log2(const Batch& batch) {
  std::vector<float> out(batch.sink_logits.size());
  for (size_t h = 0; h < out.size(); ++h) out[h] = float(double(batch.sink_logits[h]) * kLog2e);
  return out;
}

std::vector<float> scales_per_kv_head(const std::vector<float>& scales, int num_kv_heads) {
  std::vector<float> out(size_t(num_kv_heads), 1.0f);
  for (size_t h = 0; h < out.size() && !scales.empty(); ++h)
    out[h] = scales.size() == 1 ? scales[0] : scales[h];
  return out;
}

int effective_sliding_window(const Batch& batch) {
  return batch.sliding_window > 0 && batch.sliding_window < batch.max_kv_len()
             ? int(batch.sliding_window)
             : 0;
}

void allow_dynamic_shared_memory(const ExecContext& context, CUfunction kernel, int bytes) {
  ATTN_CU_CHECK(context.cuda->api(),
                cuFuncSetAttribute(kernel, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes));
}

int resident_ctas(const Target& target, int shared_bytes, int threads, int registers) {
  int resident = target.max_shared_per_block > 0 && shared_bytes > 0
                     ? target.max_shared_per_block / shared_bytes
                     : 1;
  resident = std::min(resident, 2048 / threads);
  const int per_warp = (registers * 32 + 255) / 256 * 256;
  if (per_warp > 0) resident = std::min(resident, 65536 / (per_warp * (threads / 32)));
  return std::max(1, resident);
}

int resident_ctas(const ExecContext& context, CUfunction kernel, int shared_bytes, int threads) {
  int registers = 0;
  ATTN_CU_CHECK(context.cuda->api(),
                cuFuncGetAttribute(&registers, CU_FUNC_ATTRIBUTE_NUM_REGS, kernel));
  return resident_ctas(context.target, shared_bytes, threads, registers);
}

PagedPoolShape paged_pool_shape(const Batch& batch, int row_dims) {
  PagedPoolShape shape;
  shape.dtype = batch.spec.model.dtype;
  shape.hnd = batch.spec.kv_cache.layout == KvLayout::hnd;
  shape.kv_heads = batch.spec.model.num_kv_heads;
  shape.page_size = batch.page_size;
  shape.row = row_dims > 0 ? row_dims : batch.spec.model.head_dim;
  shape.pages = batch.num_pages;
  return shape;
}

PagedPoolTensorMap paged_pool_tensor_map(const ExecContext& context, const PagedPoolShape& shape,
                                         const void* pool, int box_tokens) {
  const bool hnd = shape.hnd;  // tokens before heads
  const uint64_t bytes = 2, H = uint64_t(shape.kv_heads), P = uint64_t(shape.page_size),
                 D = uint64_t(shape.row);
  const uint64_t heads_stride = (hnd ? P * D : D) * bytes;
  const uint64_t tokens_stride = (hnd ? D : H * D) * bytes;
  // The innermost extent is the row: a box at dims 64.. of a row narrower than 128 elements is
  // zero-filled past it, with no memory read.
  const uint64_t dims[4] = {D, hnd ? P : H, hnd ? H : P, uint64_t(shape.pages)};
  const uint64_t strides[3] = {hnd ? tokens_stride : heads_stride,
                               hnd ? heads_stride : tokens_stride, P * H * D * bytes};
  const uint32_t box[4] = {64, hnd ? uint32_t(box_tokens) : 1u, hnd ? 1u : uint32_t(box_tokens), 1};
  PagedPoolTensorMap out;
  out.map = encode_tensor_map(context.cuda->api(), tensor_map_type(shape.dtype), pool, 4, dims,
                              strides, box);
  out.token_coordinate = hnd ? 1 : 2;
  return out;
}

TensorMapBytes paged_pool_interleaved_tensor_map(const ExecContext& context,
                                                 const PagedPoolShape& shape, const void* pool,
                                                 int box_tokens) {
  const bool hnd = shape.hnd;
  const uint64_t bytes = 2, H = uint64_t(shape.kv_heads), P = uint64_t(shape.page_size),
                 D = uint64_t(shape.row);
  const uint64_t token_stride = (hnd ? D : H * D) * bytes;
  const uint64_t dims[5] = {64, 8, hnd ? D / 64 : H * D / 64, hnd ? H * P / 8 : P / 8,
                            uint64_t(shape.pages)};
  const uint64_t strides[4] = {token_stride, 64 * bytes, 8 * token_stride, P * H * D * bytes};
  const uint32_t box[5] = {64, 8, uint32_t(D / 64), uint32_t(box_tokens / 8), 1};
  return encode_tensor_map(context.cuda->api(), tensor_map_type(shape.dtype), pool, 5, dims,
                           strides, box);
}

}  // namespace attn
