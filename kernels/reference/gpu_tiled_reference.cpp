#include "kernels/reference/gpu_tiled_reference.hpp"

#include <algorithm>
#include <climits>

#include "base/errors.hpp"
#include "kernels/dtype_code_of.hpp"
#include "kernels/reference/gpu_reference.hpp"
#include "kernels/reference/gpu_reference_inputs.hpp"
#include "kernels/reference/gpu_tiled_reference_params.hpp"

namespace attn {

namespace {

// The kernel reads bf16, fp16 (Q and K/V) and fp8 e4m3 (K/V).
int tiled_dtype_code(DType dtype) {
  ATTN_ASSERT(dtype != DType::fp32, "the tiled GPU reference reads bf16, fp16 or fp8 e4m3");
  return dtype_code_of(dtype);
}

std::string kernel_name(const Batch& batch) {
  return "attn::gpu_tiled_reference_attention<" + std::to_string(tiled_dtype_code(batch.dtype)) +
         ", " + std::to_string(tiled_dtype_code(batch.kv_dtype)) + ">";
}

}  // namespace

GpuTiledPlan gpu_tiled_reference_plan(const Batch& batch) {
  const ModelShape& m = batch.spec.model;
  ATTN_ASSERT(m.head_dim > 0 && m.head_dim <= kGpuTiledMaxHeadDim,
              "head_dim " + std::to_string(m.head_dim) + " above the tiled GPU reference's " +
                  std::to_string(kGpuTiledMaxHeadDim));
  ATTN_ASSERT(m.effective_v_head_dim() > 0 && m.effective_v_head_dim() <= kGpuTiledMaxHeadDim,
              "v_head_dim " + std::to_string(m.effective_v_head_dim()) +
                  " above the tiled GPU reference's " + std::to_string(kGpuTiledMaxHeadDim));
  ATTN_ASSERT(m.num_q_heads > 0 && m.num_q_heads <= 65535,
              "the tiled GPU reference takes 1 to 65535 q heads (the grid's y)");
  GpuTiledPlan plan;
  for (int s = 0; s < batch.num_seqs; ++s) {
    for (int64_t first = 0; first < batch.query_lens[size_t(s)]; first += kGpuTiledRows) {
      plan.tile_seq.push_back(s);
      plan.tile_first_query.push_back(first);
    }
  }
  ATTN_ASSERT(plan.tile_seq.size() <= size_t(INT_MAX), "too many query tiles for one grid");
  plan.shape.grid_x = unsigned(plan.tile_seq.size());
  plan.shape.grid_y = unsigned(m.num_q_heads);
  plan.shape.block_x = unsigned(kGpuTiledThreads);
  return plan;
}

Support gpu_tiled_reference_supports(const Batch& batch) {
  const ModelShape& m = batch.spec.model;
  if (m.latent()) {
    return Support::no(
        "unsupported: multi-head latent attention (the tiled GPU reference stages K and V rows of "
        "up to " +
        std::to_string(kGpuTiledMaxHeadDim) +
        " dims from two pools; the naive GPU reference "
        "verifies latent rows)");
  }
  if (std::max(m.head_dim, m.effective_v_head_dim()) > kGpuTiledMaxHeadDim) {
    return Support::no("head_dim above the tiled GPU reference's " +
                       std::to_string(kGpuTiledMaxHeadDim));
  }
  return Support::yes();
}

JitProgram gpu_tiled_reference_program(const Batch& batch, const std::string& arch) {
  JitProgram program;
  program.name = "gpu_tiled_reference." + to_string(batch.dtype) + "." + to_string(batch.kv_dtype);
  program.source = "#include \"kernels/reference/gpu_tiled_reference.cuh\"\n";
  program.kernels = {kernel_name(batch)};
  program.arch = arch;
  return program;
}

std::vector<float> gpu_tiled_paged_attention_reference(const Problem& device,
                                                       const CudaContext& cuda,
                                                       KernelLoader& loader, const Stream& stream,
                                                       std::vector<float>* lse) {
  ATTN_ASSERT(device.backend() == Backend::cuda, "the tiled GPU reference needs a device problem");
  const Batch& batch = device.batch();
  if (Support s = gpu_tiled_reference_supports(batch); !s) {
    throw Error(ExitCode::internal,
                "the tiled GPU reference was called on a batch it declines: " + s.reason);
  }
  const GpuTiledPlan plan = gpu_tiled_reference_plan(batch);
  if (plan.tile_seq.empty()) {  // no query rows
    if (lse != nullptr) lse->clear();
    return {};
  }
  const JitProgram program = gpu_tiled_reference_program(batch, cuda.info().arch());
  CUfunction kernel = loader.function(program, kernel_name(batch));
  GpuReferenceInputs inputs(device, cuda);
  GpuTiledReferenceParams params;
  params.p = inputs.params();
  params.tile_seq = static_cast<const int*>(
      inputs.keep(plan.tile_seq.data(), plan.tile_seq.size() * sizeof(int)));
  params.tile_first_query = static_cast<const long long*>(
      inputs.keep(plan.tile_first_query.data(), plan.tile_first_query.size() * sizeof(long long)));
  launch(cuda, kernel, plan.shape, stream, params);
  stream.synchronize();
  return inputs.download(lse);
}

}  // namespace attn
