#include "kernels/flash_fwd/gathered_kv.hpp"

#include <algorithm>

#include "kernels/flash_fwd/gather_kv_params.hpp"
#include "kernels/paged_decode/paged_decode_variants.hpp"  // paged_pool_strides

namespace attn {

DeviceBuffer upload_int32(const CudaContext& cuda, const std::vector<int32_t>& values) {
  DeviceBuffer buffer(cuda, std::max<size_t>(1, values.size()) * sizeof(int32_t));
  if (!values.empty()) buffer.upload(values.data(), values.size() * sizeof(int32_t));
  return buffer;
}

std::vector<DeviceBuffer> gather_kv_contiguous(Problem& problem, ExecContext& context,
                                               CUfunction gather) {
  const Batch& batch = problem.batch();
  const ModelShape& m = batch.spec.model;
  const size_t kv_bytes =
      size_t(batch.total_kv) * size_t(m.num_kv_heads) * size_t(m.head_dim) * size_of(m.dtype);
  std::vector<DeviceBuffer> buffers;
  buffers.emplace_back(*context.cuda, std::max<size_t>(16, kv_bytes));
  buffers.emplace_back(*context.cuda, std::max<size_t>(16, kv_bytes));
  buffers.push_back(upload_int32(
      *context.cuda, std::vector<int32_t>(batch.cu_seqlens_kv.begin(), batch.cu_seqlens_kv.end())));

  FlashFwdGatherParams g{};
  g.k_pool = problem.k_pool();
  g.v_pool = problem.v_pool();
  g.k = buffers[0].pointer();
  g.v = buffers[1].pointer();
  g.block_table = problem.block_table();
  g.cu_seqlens_kv = static_cast<const int*>(buffers[2].pointer());
  const PagedPoolStrides strides = paged_pool_strides(batch);
  g.page_stride = strides.page;
  g.token_stride = strides.token;
  g.head_stride = strides.head;
  g.total_kv = batch.total_kv;
  g.num_seqs = batch.num_seqs;
  g.num_kv_heads = m.num_kv_heads;
  g.head_dim = m.head_dim;
  g.page_size = batch.page_size;
  g.max_pages_per_seq = batch.max_pages_per_seq;
  if (batch.total_kv > 0) {
    const long long chunks = batch.total_kv * m.num_kv_heads * (m.head_dim / 8);
    LaunchShape shape;
    shape.block_x = 256;
    shape.grid_x = unsigned(std::clamp<long long>((chunks + 255) / 256, 1, 65535));
    launch(*context.cuda, gather, shape, *context.stream, g);
    context.stream->synchronize();  // not part of any timed launch
  }
  return buffers;
}

JitProgram gathered_kv_program(const Variant& variant, const Batch& batch,
                               const KernelConfig& config, const Target& target,
                               const std::string& header, std::string attention) {
  JitProgram program;
  program.name = variant.full_name(config) + ".d" + std::to_string(batch.spec.model.head_dim) +
                 "." + to_string(batch.spec.model.dtype) + (batch.causal ? ".causal" : "");
  program.source = "#include \"" + header + "\"\n";
  program.kernels = {std::move(attention), kGatherKvKernel};
  program.arch = target.arch;
  return program;
}

}  // namespace attn
