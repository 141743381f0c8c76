#include "kernels/reference/gpu_reference_inputs.hpp"

#include <algorithm>
#include <type_traits>

#include "base/errors.hpp"
#include "kernels/reference/gpu_reference.hpp"

namespace attn {

static_assert(sizeof(long long) == sizeof(int64_t), "int64 host arrays are read as long long");
static_assert(sizeof(int) == sizeof(int32_t), "int32 host arrays are read as int");

namespace {

template <typename T>
const T* as(const void* address) {
  return static_cast<const T*>(address);
}

}  // namespace

const void* GpuReferenceInputs::keep(const void* host, size_t bytes) {
  DeviceBuffer buffer(cuda_, std::max<size_t>(1, bytes));
  if (bytes > 0) buffer.upload(host, bytes);
  buffers_.push_back(std::move(buffer));
  return buffers_.back().pointer();
}

GpuReferenceInputs::GpuReferenceInputs(const Problem& device, const CudaContext& cuda)
    : cuda_(cuda) {
  ATTN_ASSERT(device.backend() == Backend::cuda, "the GPU references need a device problem");
  const Batch& batch = device.batch();
  const ModelShape& m = batch.spec.model;
  rows_ = size_t(batch.total_q) * size_t(m.num_q_heads);
  out_width_ = size_t(m.effective_v_head_dim());
  ATTN_ASSERT(rows_ > 0, "the GPU references need at least one output row");

  auto upload = [&](const auto& values) {
    using T = typename std::decay_t<decltype(values)>::value_type;
    return as<T>(keep(values.data(), values.size() * sizeof(T)));
  };
  const GpuReferenceTables tables = gpu_reference_tables(batch);
  GpuReferenceParams& p = params_;
  p.q = device.q();
  p.k = tables.k_strides;
  p.k.data = device.k_pool();
  p.k.dim_offset = upload(tables.k_dim_offset);
  p.v = tables.v_strides;
  p.v.data = m.latent() ? device.k_pool() : device.v_pool();  // mla: V is inside the latent row
  p.v.dim_offset = upload(tables.v_dim_offset);
  p.block_table = device.block_table();
  p.seq_of_token = upload(tables.seq_of_token);
  p.cu_seqlens_q = upload(tables.cu_seqlens_q);
  p.k_scales = upload(batch.k_scales);
  p.v_scales = upload(batch.v_scales);
  p.num_k_scales = int(batch.k_scales.size());
  p.num_v_scales = int(batch.v_scales.size());
  p.sink_logits = batch.sink_logits.empty() ? nullptr : upload(batch.sink_logits);
  p.mask = gpu_reference_host_mask(batch, tables);  // host pointers, replaced below
  p.mask.context_lens = upload(tables.context_lens);
  p.mask.kv_lens = upload(tables.kv_lens);
  if (batch.block_sparse) {  // uploaded from the batch as they are, never copied
    p.mask.block_crow = upload(batch.block_sparse->crow);
    p.mask.block_col = upload(batch.block_sparse->col);
  }
  if (batch.explicit_mask) {
    p.mask.mask_bits = as<unsigned char>(upload(batch.explicit_mask->bits));
    p.mask.mask_offsets = as<long long>(upload(batch.explicit_mask->offsets));
  }
  out_ = DeviceBuffer(cuda_, rows_ * out_width_ * sizeof(float));
  p.out = static_cast<float*>(out_.pointer());
  lse_ = DeviceBuffer(cuda_, rows_ * sizeof(float));
  p.lse = static_cast<float*>(lse_.pointer());
  p.total_q = batch.total_q;
  p.num_q_heads = m.num_q_heads;
  p.group = batch.spec.group_size();
  p.head_dim = m.head_dim;
  p.v_head_dim = m.effective_v_head_dim();
  p.page_size = batch.page_size;
  p.max_pages_per_seq = batch.max_pages_per_seq;
  p.softmax_scale = batch.softmax_scale;
  p.soft_cap = batch.logits_soft_cap;
}

void GpuReferenceInputs::poison_outputs(const Stream& stream) const {
  ATTN_CU_CHECK(cuda_.api(), cuMemsetD8Async(out_.address(), 0xFF, out_.bytes(), stream.handle()));
  ATTN_CU_CHECK(cuda_.api(), cuMemsetD8Async(lse_.address(), 0xFF, lse_.bytes(), stream.handle()));
}

std::vector<float> GpuReferenceInputs::download(std::vector<float>* lse) const {
  std::vector<float> values(rows_ * out_width_);
  out_.download(values.data(), values.size() * sizeof(float));
  if (lse != nullptr) {
    lse->assign(rows_, 0.0f);
    lse_.download(lse->data(), rows_ * sizeof(float));
  }
  return values;
}

}  // namespace attn
