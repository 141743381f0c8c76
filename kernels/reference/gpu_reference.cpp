#include "kernels/reference/gpu_reference.hpp"

#include <algorithm>

#include "base/errors.hpp"
#include "kernels/dtype_code_of.hpp"
#include "kernels/reference/gpu_reference_inputs.hpp"
#include "kernels/reference/gpu_tiled_reference.hpp"
#include "workloads/batch_data.hpp"

namespace attn {

namespace {

// The kernel reads bf16, fp16 (Q and K/V) and fp8 e4m3 (K/V).
int reference_dtype_code(DType dtype) {
  ATTN_ASSERT(dtype != DType::fp32, "the GPU reference reads bf16, fp16 or fp8 e4m3, not fp32");
  return dtype_code_of(dtype);
}

int dims_per_lane(const Batch& batch) {
  const ModelShape& m = batch.spec.model;
  const int dims = gpu_reference_dims_per_lane(m.head_dim, m.effective_v_head_dim());
  ATTN_ASSERT(dims > 0, "head_dim " + std::to_string(m.head_dim) + " or v_head_dim " +
                            std::to_string(m.effective_v_head_dim()) +
                            " above the GPU reference's " +
                            std::to_string(32 * kGpuReferenceMaxDimsPerLane));
  return dims;
}

std::string kernel_name(const Batch& batch) {
  return "attn::gpu_reference_attention<" + std::to_string(reference_dtype_code(batch.dtype)) +
         ", " + std::to_string(reference_dtype_code(batch.kv_dtype)) + ", " +
         std::to_string(dims_per_lane(batch)) + ">";
}

// The strides and dim table of one pool, checked against pool_offset at the corners.
void pool_addressing(const Batch& batch, DataStream stream, GpuReferencePool& strides,
                     std::vector<long long>& dim_offset) {
  const int head_dim = stream_head_dim(batch, stream);
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
  if (batch.spec.model.latent()) {
    // mla: V is the first kv_lora_rank elements of the latent row, the K pool's row.
    t.v_strides = t.k_strides;
    t.v_dim_offset.assign(t.k_dim_offset.begin(),
                          t.k_dim_offset.begin() + batch.spec.model.effective_v_head_dim());
  } else {
    pool_addressing(batch, DataStream::value, t.v_strides, t.v_dim_offset);
  }
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
  if (dims_per_lane(batch) != kGpuReferenceDimsPerLane) {
    program.name += ".lane_dims" + std::to_string(dims_per_lane(batch));
  }
  program.source = "#include \"kernels/reference/gpu_reference.cuh\"\n";
  program.kernels = {kernel_name(batch)};
  program.arch = arch;
  return program;
}

Support gpu_reference_supports(const Batch& batch) {
  const ModelShape& m = batch.spec.model;
  if (gpu_reference_dims_per_lane(m.head_dim, m.effective_v_head_dim()) == 0) {
    return Support::no("head_dim " + std::to_string(m.head_dim) + " above the GPU reference's " +
                       std::to_string(32 * kGpuReferenceMaxDimsPerLane));
  }
  return Support::yes();
}

const char* gpu_reference_name_for(const Batch& batch) {
  return gpu_tiled_reference_supports(batch) ? kGpuTiledReferenceName : kGpuReferenceName;
}

std::vector<float> gpu_paged_attention_reference(const Problem& device, const CudaContext& cuda,
                                                 KernelLoader& loader, const Stream& stream,
                                                 std::vector<float>* lse) {
  ATTN_ASSERT(device.backend() == Backend::cuda, "the GPU reference needs a device problem");
  const Batch& batch = device.batch();
  if (Support s = gpu_reference_supports(batch); !s) {
    throw Error(ExitCode::internal,
                "the GPU reference was called on a batch it declines: " + s.reason);
  }
  const ModelShape& m = batch.spec.model;
  const size_t rows = size_t(batch.total_q) * size_t(m.num_q_heads);
  if (rows == 0) {
    if (lse != nullptr) lse->clear();
    return {};
  }

  const JitProgram program = gpu_reference_program(batch, cuda.info().arch());
  CUfunction kernel = loader.function(program, kernel_name(batch));
  const GpuReferenceInputs inputs(device, cuda);
  LaunchShape shape;
  shape.block_x = 32 * kGpuReferenceWarps;
  // One warp per row; beyond a million CTAs the warps loop over the rest.
  shape.grid_x = unsigned(
      std::min<size_t>((rows + kGpuReferenceWarps - 1) / kGpuReferenceWarps, size_t(1) << 20));
  inputs.poison_outputs(stream);
  launch(cuda, kernel, shape, stream, inputs.params());
  stream.synchronize();
  return inputs.download(lse);
}

}  // namespace attn
