#include "kernels/problem.hpp"

#include <cstring>

#include "kernels/fill/batch_fill.hpp"
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

// The index arrays as kernels read them (int32), except the padded block table: a host problem
// has none (the CPU references read the batch's CSR page table), and a device problem uploads it
// straight from padded_block_table, one copy on the host for as long as the upload takes.
void set_index_arrays(const Batch& batch, std::vector<std::vector<uint8_t>>& host) {
  host[Problem::kKvLens] = bytes_of_int32(batch.kv_lens);
  host[Problem::kCuSeqlensQ] = bytes_of_int32(batch.cu_seqlens_q);
}

// The device's padded block table, [num_seqs, max_pages_per_seq] int32.
DeviceBuffer upload_block_table(const Batch& batch, const CudaContext& context) {
  const std::vector<int32_t> table = padded_block_table(batch);
  DeviceBuffer buffer(context, table.size() * sizeof(int32_t));
  buffer.upload(table.data(), table.size() * sizeof(int32_t));
  return buffer;
}

size_t data_bytes(const Batch& batch, int tensor) {
  switch (tensor) {
    case Problem::kQ:
      return size_t(query_elements(batch)) * size_of(batch.dtype);
    case Problem::kOut:
      return size_t(output_elements(batch)) * size_of(batch.dtype);
    case Problem::kKPool:
      return size_t(pool_elements(batch, DataStream::key)) * size_of(batch.kv_dtype);
    case Problem::kVPool:  // mla has one latent pool, the K pool
      return batch.spec.model.latent()
                 ? 0
                 : size_t(pool_elements(batch, DataStream::value)) * size_of(batch.kv_dtype);
  }
  return 0;
}

}  // namespace

Problem Problem::on_host(const Batch& batch) {
  Problem p;
  p.batch_ = &batch;
  p.backend_ = Backend::cpu;
  p.host_.resize(kTensorCount);
  for (int t : {kQ, kKPool, kVPool, kOut}) p.host_[size_t(t)].resize(data_bytes(batch, t));
  fill_query(batch, p.host_[kQ].data());
  fill_kv_pool(batch, DataStream::key, p.host_[kKPool].data());
  if (!batch.spec.model.latent()) fill_kv_pool(batch, DataStream::value, p.host_[kVPool].data());
  set_index_arrays(batch, p.host_);
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
    if (t == kBlockTable) {
      p.device_.push_back(upload_block_table(*host.batch_, context));
    } else {
      p.device_.emplace_back(context, host.bytes_[t]);
      p.device_.back().upload(host.host_[size_t(t)].data(), host.bytes_[t]);
    }
    p.bytes_[t] = p.device_.back().bytes();
  }
  return p;
}

Problem Problem::generated_on_device(const Batch& batch, const CudaContext& context,
                                     KernelLoader& loader, const Stream& stream) {
  Problem p;
  p.batch_ = &batch;
  p.backend_ = Backend::cuda;
  p.context_ = &context;
  std::vector<std::vector<uint8_t>> index(kTensorCount);
  set_index_arrays(batch, index);
  for (int t = 0; t < kTensorCount; ++t) {
    if (t == kBlockTable) {
      p.device_.push_back(upload_block_table(batch, context));
    } else {
      p.bytes_[t] = index[size_t(t)].empty() ? data_bytes(batch, t) : index[size_t(t)].size();
      p.device_.emplace_back(context, p.bytes_[t]);
      p.device_.back().upload(index[size_t(t)].data(), index[size_t(t)].size());
    }
    p.bytes_[t] = p.device_.back().bytes();
  }
  fill_batch_on_device(batch, p.device_[kQ].address(), p.device_[kKPool].address(),
                       p.device_[kVPool].address(), context, loader, stream);
  return p;
}

bool Problem::prefers_device_fill(const Batch& batch) {
  const size_t bytes =
      data_bytes(batch, kQ) + data_bytes(batch, kKPool) + data_bytes(batch, kVPool);
  return bytes >= kDeviceFillThresholdBytes;
}

size_t Problem::total_bytes() const {
  size_t total = 0;
  for (size_t bytes : bytes_) total += bytes;
  return total;
}

std::vector<uint8_t> Problem::download(Tensor t) const {
  if (backend_ == Backend::cpu) return host_[t];
  std::vector<uint8_t> out(bytes_[t]);
  context_->synchronize();
  device_[t].download(out.data(), out.size());
  return out;
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

}  // namespace attn
