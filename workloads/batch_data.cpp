#include "workloads/batch_data.hpp"

#include <vector>

#include "base/dtype.hpp"
#include "base/errors.hpp"
#include "base/thread_pool.hpp"
#include "workloads/counter_rng.hpp"

namespace attn {

// Logical indices (docs/workload.md, "Data"): element (token, head, dim) of Q is counter
//   (token * num_q_heads + head) * head_dim + dim
// of the query stream, and element (seq, position, head, dim) of K or V is counter
//   ((cu_seqlens_kv[seq] + position) * num_kv_heads + head) * head_dim + dim
// of its stream: the element's place in a dense, unpaged [total_kv, kv_heads, head_dim] tensor,
// which depends on neither the page size nor the layout nor the allocation.

namespace {

uint64_t data_key(const Batch& batch, DataStream stream) {
  return stream_key(batch.data_seed, static_cast<unsigned>(stream));
}

// Writes go through a template on the dtype so the conversion is chosen once per fill, not per
// element.
template <DType D>
inline void store(void* data, size_t i, float value) {
  store_from_float(data, i, D, value);
}

template <DType D>
inline void store_nan(void* data, size_t begin, size_t end) {
  if (D == DType::fp32) {
    float* out = static_cast<float*>(data);
    const float nan = bits_to_float(0x7FC00000u);
    for (size_t i = begin; i < end; ++i) out[i] = nan;
  } else {
    uint16_t* out = static_cast<uint16_t*>(data);
    const uint16_t nan = D == DType::bf16 ? 0x7FC0 : 0x7E00;
    for (size_t i = begin; i < end; ++i) out[i] = nan;
  }
}

template <DType D>
void fill_query_as(const Batch& batch, void* q) {
  const uint64_t key = data_key(batch, DataStream::query);
  parallel_for(size_t(query_elements(batch)), [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      store<D>(q, i, kQueryAmplitude * counter_uniform_pm1(key, i));
    }
  });
}

template <DType D>
void fill_kv_pool_as(const Batch& batch, DataStream stream, void* pool) {
  const uint64_t key = data_key(batch, stream);
  const int64_t page_size = batch.page_size;
  const int64_t kv_heads = batch.spec.model.num_kv_heads;
  const int64_t head_dim = batch.spec.model.head_dim;
  const bool nhd = batch.spec.kv_cache.layout == KvLayout::nhd;

  // Owner of each page: the sequence and the page's index within it (-1: nobody's).
  std::vector<int32_t> owner(size_t(batch.num_pages), -1);
  std::vector<int32_t> page_in_seq(size_t(batch.num_pages), 0);
  for (int s = 0; s < batch.num_seqs; ++s) {
    for (int32_t k = batch.page_indptr[s]; k < batch.page_indptr[s + 1]; ++k) {
      const size_t page = size_t(batch.page_indices[size_t(k)]);
      owner[page] = s;
      page_in_seq[page] = k - batch.page_indptr[s];
    }
  }

  // One row is head_dim contiguous elements: (page, slot, head) in either layout.
  const size_t rows = size_t(batch.num_pages * page_size * kv_heads);
  parallel_for(rows, [&](size_t begin, size_t end) {
    for (size_t r = begin; r < end; ++r) {
      int64_t page, slot, head;
      if (nhd) {  // r = (page * page_size + slot) * kv_heads + head
        head = int64_t(r) % kv_heads;
        slot = (int64_t(r) / kv_heads) % page_size;
        page = int64_t(r) / kv_heads / page_size;
      } else {  // r = (page * kv_heads + head) * page_size + slot
        slot = int64_t(r) % page_size;
        head = (int64_t(r) / page_size) % kv_heads;
        page = int64_t(r) / page_size / kv_heads;
      }
      const size_t out = r * size_t(head_dim);
      const int32_t seq = owner[size_t(page)];
      const int64_t position = int64_t(page_in_seq[size_t(page)]) * page_size + slot;
      if (seq < 0 || position >= batch.kv_lens[size_t(seq)]) {
        store_nan<D>(pool, out, out + size_t(head_dim));
        continue;
      }
      const uint64_t index =
          uint64_t(((batch.cu_seqlens_kv[size_t(seq)] + position) * kv_heads + head) * head_dim);
      for (int64_t d = 0; d < head_dim; ++d) {
        store<D>(pool, out + size_t(d), counter_uniform_pm1(key, index + uint64_t(d)));
      }
    }
  });
}

}  // namespace

float query_value(const Batch& batch, int64_t token, int head, int dim) {
  const auto& model = batch.spec.model;
  const uint64_t index = uint64_t((token * model.num_q_heads + head) * model.head_dim + dim);
  return kQueryAmplitude * counter_uniform_pm1(data_key(batch, DataStream::query), index);
}

float kv_value(const Batch& batch, DataStream stream, int seq, int64_t position, int head,
               int dim) {
  const auto& model = batch.spec.model;
  const int64_t token = batch.cu_seqlens_kv[size_t(seq)] + position;
  const uint64_t index = uint64_t((token * model.num_kv_heads + head) * model.head_dim + dim);
  return counter_uniform_pm1(data_key(batch, stream), index);
}

int64_t pool_offset(const Batch& batch, int64_t page, int slot, int head, int dim) {
  const int64_t page_size = batch.page_size;
  const int64_t kv_heads = batch.spec.model.num_kv_heads;
  const int64_t head_dim = batch.spec.model.head_dim;
  if (batch.spec.kv_cache.layout == KvLayout::nhd) {
    return ((page * page_size + slot) * kv_heads + head) * head_dim + dim;
  }
  return ((page * kv_heads + head) * page_size + slot) * head_dim + dim;
}

int64_t pool_elements(const Batch& batch) {
  return batch.num_pages * batch.page_size * batch.spec.model.num_kv_heads *
         batch.spec.model.head_dim;
}

int64_t query_elements(const Batch& batch) {
  return batch.total_q * batch.spec.model.num_q_heads * batch.spec.model.head_dim;
}

void fill_query(const Batch& batch, void* q) {
  switch (batch.spec.model.dtype) {
    case DType::bf16:
      return fill_query_as<DType::bf16>(batch, q);
    case DType::fp16:
      return fill_query_as<DType::fp16>(batch, q);
    case DType::fp32:
      return fill_query_as<DType::fp32>(batch, q);
    case DType::fp8_e4m3:
      break;  // not a query dtype
  }
  throw Error(ExitCode::internal, "fill_query: unsupported dtype " + to_string(batch.spec.model.dtype));
}

void fill_kv_pool(const Batch& batch, DataStream stream, void* pool) {
  switch (batch.spec.model.dtype) {
    case DType::bf16:
      return fill_kv_pool_as<DType::bf16>(batch, stream, pool);
    case DType::fp16:
      return fill_kv_pool_as<DType::fp16>(batch, stream, pool);
    case DType::fp32:
      return fill_kv_pool_as<DType::fp32>(batch, stream, pool);
    case DType::fp8_e4m3:
      break;  // TODO(issue 3): fp8 pools hold codes of value / scale
  }
  throw Error(ExitCode::internal, "fill_kv_pool: unsupported dtype " + to_string(batch.spec.model.dtype));
}

}  // namespace attn
