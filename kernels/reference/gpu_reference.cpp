#include "kernels/reference/gpu_reference.hpp"

#include <algorithm>

#include "base/errors.hpp"
#include "kernels/dtype_code_of.hpp"
#include "workloads/batch_data.hpp"

namespace attn {

static_assert(sizeof(long long) == sizeof(int64_t), "int64 host arrays are read as long long");
static_assert(sizeof(int) == sizeof(int32_t), "int32 host arrays are read as int");

namespace {

// The kernel reads bf16, fp16 (Q and K/V) and fp8 e4m3 (K/V).
int reference_dtype_code(DType dtype) {
  ATTN_ASSERT(dtype != DType::fp32, "the GPU reference reads bf16, fp16 or fp8 e4m3, not fp32");
  return dtype_code_of(dtype);
}

std::string kernel_name(const Batch& batch) {
  return "attn::gpu_reference_attention<" + std::to_string(reference_dtype_code(batch.dtype)) +
         ", " + std::to_string(reference_dtype_code(batch.kv_dtype)) + ">";
}

// The strides and dim table of one pool, checked against pool_offset at the corners.
void pool_addressing(const Batch& batch, DataStream stream, GpuReferencePool& strides,
                     std::vector<long long>& dim_offset) {
  const int head_dim = batch.spec.model.head_dim;
  const int heads = batch.spec.model.num_kv_heads;
  auto offset = [&](int64_t page, int slot, int head, int dim) {
    return pool_offset(batch, stream, page, slot, head, dim);
  };
  const int64_t origin = offset(0, 0, 0, 0);
  strides = GpuReferencePool{};
  strides.page_stride = offset(1, 0, 0, 0) - origin;
  strides.slot_stride = offset(0, 1, 0, 0) - origin;
  strides.head_stride = offset(0, 0, 1, 0) - origin;
  dim_offset.assign(size_t(head_dim), 0);
  for (int d = 0; d < head_dim; ++d) dim_offset[size_t(d)] = offset(0, 0, 0, d) - origin;
  const int64_t last_page = std::max<int64_t>(0, batch.num_pages - 1);
  for (int64_t page : {int64_t(0), last_page}) {
    for (int slot : {0, std::max(0, batch.page_size - 1)}) {
      for (int head : {0, std::max(0, heads - 1)}) {
        for (int d = 0; d < head_dim; ++d) {
          const long long modelled =
              origin + gpu_reference_pool_row(strides, page, slot, head) + dim_offset[size_t(d)];
          ATTN_ASSERT(modelled == offset(page, slot, head, d),
                      "pool layout " + to_string(batch.spec.kv_cache.layout) +
                          " is not addressed as gpu_reference_params.hpp assumes");
        }
      }
    }
  }
  ATTN_ASSERT(origin == 0, "pool offsets start at zero");
}

template <typename T>
DeviceBuffer upload(const CudaContext& cuda, const std::vector<T>& values) {
  DeviceBuffer buffer(cuda, std::max<size_t>(1, values.size()) * sizeof(T));
  if (!values.empty()) buffer.upload(values.data(), values.size() * sizeof(T));
  return buffer;
}

template <typename T>
const T* device_pointer(const DeviceBuffer& buffer) {
  return static_cast<const T*>(buffer.pointer());
}

}  // namespace

GpuReferenceTables gpu_reference_tables(const Batch& batch) {
  GpuReferenceTables t;
  t.context_lens.assign(batch.context_lens.begin(), batch.context_lens.end());
  t.kv_lens.assign(batch.kv_lens.begin(), batch.kv_lens.end());
  t.cu_seqlens_q.assign(batch.cu_seqlens_q.begin(), batch.cu_seqlens_q.end());
  t.seq_of_token.assign(size_t(batch.total_q), 0);
  for (int s = 0; s < batch.num_seqs; ++s) {
    for (int64_t token = batch.cu_seqlens_q[size_t(s)]; token < batch.cu_seqlens_q[size_t(s) + 1];
         ++token) {
      t.seq_of_token[size_t(token)] = s;
    }
  }
  pool_addressing(batch, DataStream::key, t.k_strides, t.k_dim_offset);
  pool_addressing(batch, DataStream::value, t.v_strides, t.v_dim_offset);
  return t;
}

GpuReferenceMask gpu_reference_host_mask(const Batch& batch, const GpuReferenceTables& tables) {
  GpuReferenceMask m{};
  m.context_lens = tables.context_lens.data();
  m.kv_lens = tables.kv_lens.data();
  m.causal = batch.causal ? 1 : 0;
  m.sliding_window = batch.sliding_window;
  if (batch.block_sparse) {
    m.has_block_sparse = 1;
    m.block_crow = batch.block_sparse->crow.data();
    m.block_col = batch.block_sparse->col.data();
    m.block_size = batch.block_sparse->block_size;
    m.block_num_blocks = batch.block_sparse->num_blocks;
    m.block_max_nnz = batch.block_sparse->max_nnz;
  }
  if (batch.explicit_mask) {
    m.has_explicit_mask = 1;
    m.mask_bits = batch.explicit_mask->bits.data();
    m.mask_offsets = reinterpret_cast<const long long*>(batch.explicit_mask->offsets.data());
  }
  return m;
}

JitProgram gpu_reference_program(const Batch& batch, const std::string& arch) {
  JitProgram program;
  program.name = "gpu_reference." + to_string(batch.dtype) + "." + to_string(batch.kv_dtype);
  program.source = "#include \"kernels/reference/gpu_reference.cuh\"\n";
  program.kernels = {kernel_name(batch)};
  program.arch = arch;
  return program;
}

std::vector<float> gpu_paged_attention_reference(const Problem& device, const CudaContext& cuda,
                                                 KernelLoader& loader, const Stream& stream,
                                                 std::vector<float>* lse) {
  ATTN_ASSERT(device.backend() == Backend::cuda, "the GPU reference needs a device problem");
  const Batch& batch = device.batch();
  const ModelShape& m = batch.spec.model;
  ATTN_ASSERT(m.head_dim <= 32 * kGpuReferenceDimsPerLane, "head_dim above the GPU reference's");
  const size_t rows = size_t(batch.total_q) * size_t(m.num_q_heads);
  std::vector<float> out(rows * size_t(m.head_dim));
  if (lse != nullptr) lse->assign(rows, 0.0f);
  if (rows == 0) return out;

  const JitProgram program = gpu_reference_program(batch, cuda.info().arch());
  CUfunction kernel = loader.function(program, kernel_name(batch));

  const GpuReferenceTables tables = gpu_reference_tables(batch);
  const DeviceBuffer context_lens = upload(cuda, tables.context_lens);
  const DeviceBuffer kv_lens = upload(cuda, tables.kv_lens);
  const DeviceBuffer cu_seqlens_q = upload(cuda, tables.cu_seqlens_q);
  const DeviceBuffer seq_of_token = upload(cuda, tables.seq_of_token);
  // Both branches lvalues of one type: the masks are uploaded from the batch, never copied.
  const std::vector<int32_t> no_ints;
  const std::vector<uint8_t> no_bits;
  const std::vector<int64_t> no_offsets;
  const BlockSparseLayout* layout = batch.block_sparse ? &*batch.block_sparse : nullptr;
  const ExplicitMask* mask = batch.explicit_mask ? &*batch.explicit_mask : nullptr;
  const DeviceBuffer block_crow = upload(cuda, layout ? layout->crow : no_ints);
  const DeviceBuffer block_col = upload(cuda, layout ? layout->col : no_ints);
  const DeviceBuffer mask_bits = upload(cuda, mask ? mask->bits : no_bits);
  const DeviceBuffer mask_offsets = upload(cuda, mask ? mask->offsets : no_offsets);
  const DeviceBuffer k_dim = upload(cuda, tables.k_dim_offset);
  const DeviceBuffer v_dim = upload(cuda, tables.v_dim_offset);
  const DeviceBuffer k_scales = upload(cuda, batch.k_scales);
  const DeviceBuffer v_scales = upload(cuda, batch.v_scales);
  const DeviceBuffer sinks = upload(cuda, batch.sink_logits);
  const DeviceBuffer out_buffer(cuda, out.size() * sizeof(float));
  const DeviceBuffer lse_buffer(cuda, rows * sizeof(float));

  GpuReferenceParams p{};
  p.q = device.q();
  p.k = tables.k_strides;
  p.k.data = device.k_pool();
  p.k.dim_offset = device_pointer<long long>(k_dim);
  p.v = tables.v_strides;
  p.v.data = device.v_pool();
  p.v.dim_offset = device_pointer<long long>(v_dim);
  p.block_table = device.block_table();
  p.seq_of_token = device_pointer<int>(seq_of_token);
  p.cu_seqlens_q = device_pointer<long long>(cu_seqlens_q);
  p.k_scales = device_pointer<float>(k_scales);
  p.v_scales = device_pointer<float>(v_scales);
  p.num_k_scales = int(batch.k_scales.size());
  p.num_v_scales = int(batch.v_scales.size());
  p.sink_logits = batch.sink_logits.empty() ? nullptr : device_pointer<float>(sinks);
  p.mask = gpu_reference_host_mask(batch, tables);  // host pointers, replaced below
  p.mask.context_lens = device_pointer<long long>(context_lens);
  p.mask.kv_lens = device_pointer<long long>(kv_lens);
  if (batch.block_sparse) {
    p.mask.block_crow = device_pointer<int>(block_crow);
    p.mask.block_col = device_pointer<int>(block_col);
  }
  if (batch.explicit_mask) {
    p.mask.mask_bits = device_pointer<unsigned char>(mask_bits);
    p.mask.mask_offsets = device_pointer<long long>(mask_offsets);
  }
  p.out = static_cast<float*>(out_buffer.pointer());
  p.lse = static_cast<float*>(lse_buffer.pointer());
  p.total_q = batch.total_q;
  p.num_q_heads = m.num_q_heads;
  p.group = batch.spec.group_size();
  p.head_dim = m.head_dim;
  p.page_size = batch.page_size;
  p.max_pages_per_seq = batch.max_pages_per_seq;
  p.softmax_scale = batch.softmax_scale;
  p.soft_cap = batch.logits_soft_cap;

  LaunchShape shape;
  shape.block_x = 32 * kGpuReferenceWarps;
  // One warp per row; beyond a million CTAs the warps loop over the rest.
  shape.grid_x = unsigned(
      std::min<size_t>((rows + kGpuReferenceWarps - 1) / kGpuReferenceWarps, size_t(1) << 20));
  launch(cuda, kernel, shape, stream, p);
  stream.synchronize();
  out_buffer.download(out.data(), out.size() * sizeof(float));
  if (lse != nullptr) lse_buffer.download(lse->data(), rows * sizeof(float));
  return out;
}

}  // namespace attn
