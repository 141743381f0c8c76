#include "kernels/problem.hpp"

#include <cstring>

#include "workloads/batch_data.hpp"

namespace attn {

namespace {
template <typename T>
std::vector<uint8_t> bytes_of_int32(const std::vector<T>& values) {
  std::vector<uint8_t> out(values.size() * sizeof(int32_t));
  auto* dst = reinterpret_cast<int32_t*>(out.data());
  for (size_t i = 0; i < values.size(); ++i) dst[i] = int32_t(values[i]);
  return out;
}
}  // namespace

Problem Problem::on_host(const Batch& batch) {
  Problem p;
  p.batch_ = &batch;
  p.backend_ = Backend::cpu;
  p.host_.resize(kTensorCount);
  const size_t element = size_of(batch.dtype);
  const size_t kv_element = size_of(batch.kv_dtype);
  p.host_[kQ].resize(size_t(query_elements(batch)) * element);
  p.host_[kKPool].resize(size_t(pool_elements(batch)) * kv_element);
  p.host_[kVPool].resize(size_t(pool_elements(batch)) * kv_element);
  p.host_[kOut].resize(size_t(query_elements(batch)) * element);
  fill_query(batch, p.host_[kQ].data());
  fill_kv_pool(batch, DataStream::key, p.host_[kKPool].data());
  fill_kv_pool(batch, DataStream::value, p.host_[kVPool].data());
  p.host_[kBlockTable] = bytes_of_int32(batch.block_table);
  p.host_[kKvLens] = bytes_of_int32(batch.kv_lens);
  p.host_[kCuSeqlensQ] = bytes_of_int32(batch.cu_seqlens_q);
  for (int t = 0; t < kTensorCount; ++t) p.bytes_[t] = p.host_[t].size();
  return p;
}

Problem Problem::on_device(const Problem& host, const CudaContext& context) {
  ATTN_ASSERT(host.backend_ == Backend::cpu, "on_device needs a host problem");
  Problem p;
  p.batch_ = host.batch_;
  p.backend_ = Backend::cuda;
  p.context_ = &context;
  for (int t = 0; t < kTensorCount; ++t) {
    p.bytes_[t] = host.bytes_[t];
    p.device_.emplace_back(context, host.bytes_[t]);
    p.device_.back().upload(host.host_[t].data(), host.bytes_[t]);
  }
  return p;
}

void* Problem::address(Tensor t) const {
  if (backend_ == Backend::cpu) return const_cast<uint8_t*>(host_[t].data());
  return device_[t].pointer();
}

void Problem::poison_output(const Stream* stream) {
  if (backend_ == Backend::cpu) {
    std::memset(host_[kOut].data(), 0xFF, host_[kOut].size());
    return;
  }
  ATTN_ASSERT(stream != nullptr, "poisoning a device output needs a stream");
  ATTN_CU_CHECK(context_->api(),
                cuMemsetD8Async(device_[kOut].address(), 0xFF, bytes_[kOut], stream->handle()));
}

std::vector<uint8_t> Problem::read_output() const {
  if (backend_ == Backend::cpu) return host_[kOut];
  context_->synchronize();
  std::vector<uint8_t> out(bytes_[kOut]);
  device_[kOut].download(out.data(), out.size());
  return out;
}

}  // namespace attn
