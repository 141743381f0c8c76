#include "kernels/fill/batch_fill.hpp"

#include <algorithm>
#include <vector>

#include "base/errors.hpp"
#include "kernels/dtype_code_of.hpp"
#include "workloads/counter_rng.hpp"

namespace attn {

namespace {

constexpr unsigned kThreads = 256;

std::string query_kernel(const Batch& batch) {
  return "attn::fill_query<" + std::to_string(dtype_code_of(batch.dtype)) + ">";
}
std::string pool_kernel(const Batch& batch) {
  return "attn::fill_kv_pool<" + std::to_string(dtype_code_of(batch.kv_dtype)) + ">";
}

// Enough blocks to fill every SM several times over; the kernels loop over the rest.
LaunchShape fill_shape(long long elements, const DeviceInfo& device) {
  LaunchShape shape;
  shape.block_x = kThreads;
  const long long wanted = (elements + kThreads - 1) / kThreads;
  shape.grid_x = unsigned(std::max(1LL, std::min(wanted, 32LL * std::max(1, device.sm_count))));
  return shape;
}

// Writes NaN over a whole pool: the slots the pool kernel leaves alone must read as NaN.
void fill_nan(const CudaContext& context, const Stream& stream, CUdeviceptr pool, DType dtype,
              size_t elements) {
  const DriverApi& api = context.api();
  switch (dtype) {
    case DType::fp8_e4m3:
      ATTN_CU_CHECK(api, cuMemsetD8Async(pool, 0x7F, elements, stream.handle()));
      break;
    case DType::bf16:
      ATTN_CU_CHECK(api, cuMemsetD16Async(pool, 0x7FC0, elements, stream.handle()));
      break;
    case DType::fp16:
      ATTN_CU_CHECK(api, cuMemsetD16Async(pool, 0x7E00, elements, stream.handle()));
      break;
    case DType::fp32:
      ATTN_CU_CHECK(api, cuMemsetD32Async(pool, 0x7FC00000u, elements, stream.handle()));
      break;
  }
}

template <typename T>
DeviceBuffer upload(const CudaContext& context, const std::vector<T>& values) {
  DeviceBuffer buffer(context, values.size() * sizeof(T));
  buffer.upload(values.data(), values.size() * sizeof(T));
  return buffer;
}

template <typename T>
const T* typed(const DeviceBuffer& buffer) {
  return reinterpret_cast<const T*>(buffer.address());
}

}  // namespace

PoolStrides pool_strides(const Batch& batch, DataStream stream) {
  const int head_dim = stream_head_dim(batch, stream);
  auto offset = [&](int64_t page, int slot, int head, int dim) {
    return pool_offset(batch, stream, page, slot, head, dim);
  };
  const int64_t origin = offset(0, 0, 0, 0);
  PoolStrides s{};
  s.page_stride = offset(1, 0, 0, 0) - origin;
  s.slot_stride = offset(0, 1, 0, 0) - origin;
  s.head_stride = offset(0, 0, 1, 0) - origin;
  s.dim_inner_stride = offset(0, 0, 0, 1) - origin;
  // The pack: how many dims advance by dim_inner_stride before the outer stride takes over.
  s.dim_pack = head_dim;
  for (int d = 1; d < head_dim; ++d) {
    if (offset(0, 0, 0, d) - origin != d * s.dim_inner_stride) {
      s.dim_pack = d;
      break;
    }
  }
  s.dim_outer_stride = s.dim_pack < head_dim ? offset(0, 0, 0, s.dim_pack) - origin : 0;
  auto modelled = [&](int64_t page, int slot, int head, int dim) {
    return origin + page * s.page_stride + slot * s.slot_stride + head * s.head_stride +
           (dim / s.dim_pack) * s.dim_outer_stride + (dim % s.dim_pack) * s.dim_inner_stride;
  };
  const int heads = batch.spec.model.num_kv_heads;
  const int64_t last_page = std::max<int64_t>(0, batch.num_pages - 1);
  for (int d = 0; d < head_dim; ++d) {
    for (int slot : {0, batch.page_size - 1}) {
      for (int head : {0, heads - 1}) {
        for (int64_t page : {int64_t(0), last_page}) {
          ATTN_ASSERT(modelled(page, slot, head, d) == offset(page, slot, head, d),
                      "pool layout " + to_string(batch.spec.kv_cache.layout) +
                          " is not strided as batch_fill_params.hpp assumes");
        }
      }
    }
  }
  ATTN_ASSERT(origin == 0, "pool offsets start at zero");
  return s;
}

JitProgram batch_fill_program(const Batch& batch, const std::string& arch) {
  JitProgram program;
  program.name = "batch_fill." + to_string(batch.dtype) + "." + to_string(batch.kv_dtype);
  program.source = "#include \"kernels/fill/batch_fill.cuh\"\n";
  program.kernels = {query_kernel(batch), pool_kernel(batch)};
  program.arch = arch;
  program.options = {"--fmad=false"};
  return program;
}

void fill_batch_on_device(const Batch& batch, CUdeviceptr q, CUdeviceptr k_pool, CUdeviceptr v_pool,
                          const CudaContext& context, KernelLoader& loader, const Stream& stream) {
  const ModelShape& m = batch.spec.model;
  const JitProgram program = batch_fill_program(batch, context.info().arch());
  CUfunction query = loader.function(program, query_kernel(batch));
  CUfunction pool = loader.function(program, pool_kernel(batch));

  BatchFillParams qp{};
  qp.out = reinterpret_cast<void*>(q);
  qp.elements = query_elements(batch);
  qp.key = stream_key(batch.data_seed, unsigned(DataStream::query));
  if (qp.elements > 0) launch(context, query, fill_shape(qp.elements, context.info()), stream, qp);

  // The index arrays the pool kernel reads; freed after the stream is drained below.
  const DeviceBuffer indptr = upload(context, batch.page_indptr);
  const DeviceBuffer indices = upload(context, batch.page_indices);
  const DeviceBuffer kv_lens = upload(context, batch.kv_lens);
  const DeviceBuffer cu_kv = upload(context, batch.cu_seqlens_kv);
  const DeviceBuffer source = upload(context, batch.prefix_source);
  const DeviceBuffer shared = upload(context, batch.shared_prefix_len);
  const DeviceBuffer k_scales = upload(context, batch.k_scales);
  const DeviceBuffer v_scales = upload(context, batch.v_scales);
  static_assert(sizeof(long long) == sizeof(int64_t), "int64 index arrays read as long long");

  for (DataStream s : {DataStream::key, DataStream::value}) {
    if (s == DataStream::value && m.latent()) continue;  // mla: one latent pool, the K pool
    const CUdeviceptr target = s == DataStream::key ? k_pool : v_pool;
    // V's rows are v_head_dim wide: the kernel takes the row width per launch.
    const int head_dim = stream_head_dim(batch, s);
    fill_nan(context, stream, target, batch.kv_dtype, size_t(pool_elements(batch, s)));
    BatchFillParams p{};
    p.out = reinterpret_cast<void*>(target);
    p.elements = (long long)batch.page_indices.size() * batch.page_size * m.num_kv_heads * head_dim;
    p.key = stream_key(batch.data_seed, unsigned(s));
    p.page_indptr = typed<int>(indptr);
    p.page_indices = typed<int>(indices);
    p.kv_lens = typed<long long>(kv_lens);
    p.cu_seqlens_kv = typed<long long>(cu_kv);
    p.prefix_source = typed<int>(source);
    p.shared_prefix_len = typed<long long>(shared);
    const DeviceBuffer& scales = s == DataStream::key ? k_scales : v_scales;
    p.scales = typed<float>(scales);
    p.num_scales = int((s == DataStream::key ? batch.k_scales : batch.v_scales).size());
    ATTN_ASSERT(batch.kv_dtype != DType::fp8_e4m3 || p.num_scales > 0, "fp8 batch without scales");
    p.stream = unsigned(s);
    p.num_seqs = batch.num_seqs;
    p.num_heads = m.num_kv_heads;
    p.head_dim = head_dim;
    p.page_size = batch.page_size;
    p.strides = pool_strides(batch, s);
    if (p.elements > 0) launch(context, pool, fill_shape(p.elements, context.info()), stream, p);
  }
  stream.synchronize();
}

}  // namespace attn
