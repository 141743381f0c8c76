#include "kernels/flash_fwd/gathered_kv.hpp"

#include <algorithm>

#include "base/errors.hpp"
#include "kernels/flash_fwd/gather_kv_params.hpp"
#include "kernels/launch_inputs.hpp"
#include "kernels/paged_decode/paged_decode_variants.hpp"  // paged_pool_strides
#include "workloads/batch_data.hpp"                        // pool_offset

namespace attn {

std::vector<DeviceBuffer> gather_kv_contiguous(Problem& problem, ExecContext& context,
                                               CUfunction gather) {
  const Batch& batch = problem.batch();
  const ModelShape& m = batch.spec.model;
  ATTN_ASSERT(m.effective_v_head_dim() <= m.head_dim, "the gather takes V no wider than K");
  // Of the cache's dtype: an fp8 cache's codes are gathered as they are.
  const size_t row_bytes =
      size_t(batch.total_kv) * size_t(m.num_kv_heads) * size_of(batch.kv_dtype);
  std::vector<DeviceBuffer> buffers;
  buffers.emplace_back(*context.cuda, std::max<size_t>(16, row_bytes * size_t(m.head_dim)));
  buffers.emplace_back(*context.cuda,
                       std::max<size_t>(16, row_bytes * size_t(m.effective_v_head_dim())));
  buffers.push_back(upload_array(
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
  // V's pool, its rows v_head_dim wide: its strides from the workloads' own offsets.
  const auto v_at = [&](int64_t page, int slot, int head) {
    return pool_offset(batch, DataStream::value, page, slot, head, 0);
  };
  g.v_page_stride = v_at(1, 0, 0) - v_at(0, 0, 0);
  g.v_token_stride = v_at(0, 1, 0) - v_at(0, 0, 0);
  g.v_head_stride = v_at(0, 0, 1) - v_at(0, 0, 0);
  g.total_kv = batch.total_kv;
  g.num_seqs = batch.num_seqs;
  g.num_kv_heads = m.num_kv_heads;
  g.head_dim = m.head_dim;
  g.v_head_dim = m.effective_v_head_dim();
  g.page_size = batch.page_size;
  g.max_pages_per_seq = batch.max_pages_per_seq;
  g.element_bytes = int(size_of(batch.kv_dtype));
  if (batch.total_kv > 0) {
    const long long chunks = batch.total_kv * m.num_kv_heads * (m.head_dim * g.element_bytes / 16);
    LaunchShape shape;
    shape.block_x = 256;
    shape.grid_x = unsigned(std::clamp<long long>((chunks + 255) / 256, 1, 65535));
    launch(*context.cuda, gather, shape, *context.stream, g);
    context.stream->synchronize();  // not part of any timed launch
  }
  return buffers;
}

GatheredKvRows dequantised_gathered_kv(const Batch& batch, ExecContext& context,
                                       std::vector<DeviceBuffer>& buffers) {
  GatheredKvRows rows;
  rows.k_rows = buffers[0].pointer();
  rows.v_rows = buffers[1].pointer();
  if (!batch.kv_fp8()) return rows;
  const ModelShape& m = batch.spec.model;
  Fp8DequantParams& dq = rows.pass;
  dq.k_codes = static_cast<const unsigned char*>(rows.k_rows);
  dq.v_codes = static_cast<const unsigned char*>(rows.v_rows);
  dq.k_bytes = batch.total_kv * m.num_kv_heads * m.head_dim;
  dq.v_bytes = batch.total_kv * m.num_kv_heads * m.effective_v_head_dim();
  buffers.emplace_back(*context.cuda, size_t(std::max<int64_t>(dq.k_bytes, 8)) * 2);
  dq.k_out = static_cast<unsigned short*>(buffers.back().pointer());
  buffers.emplace_back(*context.cuda, size_t(std::max<int64_t>(dq.v_bytes, 8)) * 2);
  dq.v_out = static_cast<unsigned short*>(buffers.back().pointer());
  rows.k_rows = dq.k_out;
  rows.v_rows = dq.v_out;
  rows.k_scale = upload_kv_scales(*context.cuda, batch.k_scales, m.num_kv_heads, buffers);
  rows.v_scale = upload_kv_scales(*context.cuda, batch.v_scales, m.num_kv_heads, buffers);
  return rows;
}

JitProgram gathered_kv_program(const Variant& variant, const Batch& batch,
                               const KernelConfig& config, const Target& target,
                               const std::string& header, std::string attention) {
  JitProgram program;
  const ModelShape& m = batch.spec.model;
  const std::string narrow_v = m.effective_v_head_dim() != m.head_dim
                                   ? ".dv" + std::to_string(m.effective_v_head_dim())
                                   : "";
  program.name = variant.full_name(config) + ".d" + std::to_string(m.head_dim) + narrow_v + "." +
                 to_string(m.dtype) + (batch.kv_fp8() ? ".kv_fp8" : "") +
                 (batch.causal ? ".causal" : "");
  program.source = "#include \"" + header + "\"\n";
  program.kernels = {std::move(attention), kGatherKvKernel};
  program.arch = target.arch;
  return program;
}

}  // namespace attn
