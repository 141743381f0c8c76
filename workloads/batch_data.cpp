#include "workloads/batch_data.hpp"

#include <vector>

#include "base/dtype.hpp"
#include "base/errors.hpp"
#include "base/thread_pool.hpp"
#include "workloads/counter_rng.hpp"

namespace attn {

// The per-element rule (logical indices, amplitudes, fp8 scales) is workloads/data_rule.hpp,
// shared with the GPU fill; this file maps it onto host buffers of the batch's layout and dtype.

namespace {

uint64_t data_key(const Batch& batch, DataStream stream) {
  return stream_key(batch.data_seed, static_cast<unsigned>(stream));
}

bool fp8_cache(const Batch& batch) {
  return batch.kv_dtype == DType::fp8_e4m3;
}

float kv_scale(const Batch& batch, DataStream stream, int head) {
  const std::vector<float>& scales = stream == DataStream::key ? batch.k_scales : batch.v_scales;
  return scales.size() == 1 ? scales[0] : scales[size_t(head)];
}

// vLLM's K layout packs x elements of 16 bytes along the head dimension.
int64_t vllm_pack(const Batch& batch) {
  return 16 / int64_t(size_of(batch.kv_dtype));
}

// Writes go through a template on the dtype so the conversion is chosen once per fill, not per
// element.
template <DType D>
inline void store(void* data, size_t i, float value) {
  store_from_float(data, i, D, value);
}

template <DType D>
inline void store_nan(void* data, size_t i) {
  switch (D) {
    case DType::fp32:
      static_cast<float*>(data)[i] = bits_to_float(0x7FC00000u);
      break;
    case DType::bf16:
      static_cast<uint16_t*>(data)[i] = 0x7FC0;
      break;
    case DType::fp16:
      static_cast<uint16_t*>(data)[i] = 0x7E00;
      break;
    case DType::fp8_e4m3:
      static_cast<uint8_t*>(data)[i] = 0x7F;
      break;
  }
}

template <DType D>
void fill_query_as(const Batch& batch, void* q) {
  const uint64_t key = data_key(batch, DataStream::query);
  parallel_for(size_t(query_elements(batch)), [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) store<D>(q, i, query_element(key, i));
  });
}

// Which sequence's data each page holds and the page's index within that sequence. A page shared
// through a prefix holds its source sequence's data; the source comes first in the batch, so the
// first sequence listing a page is the one whose data it holds.
struct PageOwners {
  std::vector<int32_t> seq;          // [num_pages], -1: nobody's (the poison page, spare pages)
  std::vector<int32_t> page_in_seq;  // [num_pages]
};

PageOwners page_owners(const Batch& batch) {
  PageOwners owners;
  owners.seq.assign(size_t(batch.num_pages), -1);
  owners.page_in_seq.assign(size_t(batch.num_pages), 0);
  for (int s = 0; s < batch.num_seqs; ++s) {
    for (int32_t k = batch.page_indptr[size_t(s)]; k < batch.page_indptr[size_t(s) + 1]; ++k) {
      const size_t page = size_t(batch.page_indices[size_t(k)]);
      if (owners.seq[page] >= 0) continue;
      owners.seq[page] = s;
      owners.page_in_seq[page] = k - batch.page_indptr[size_t(s)];
    }
  }
  return owners;
}

template <DType D>
void fill_kv_pool_as(const Batch& batch, DataStream stream, void* pool) {
  const uint64_t key = data_key(batch, stream);
  const int64_t page_size = batch.page_size;
  const int64_t kv_heads = batch.spec.model.num_kv_heads;
  const int head_dim = stream_head_dim(batch, stream);
  const bool fp8 = fp8_cache(batch);
  const PageOwners owners = page_owners(batch);

  // One logical row is (page, head, slot): head_dim elements, contiguous or not by the layout.
  const size_t rows = size_t(batch.num_pages * kv_heads * page_size);
  parallel_for(rows, [&](size_t begin, size_t end) {
    for (size_t r = begin; r < end; ++r) {
      const int slot = int(int64_t(r) % page_size);
      const int head = int((int64_t(r) / page_size) % kv_heads);
      const int64_t page = int64_t(r) / page_size / kv_heads;
      const int32_t seq = owners.seq[size_t(page)];
      const int64_t position = int64_t(owners.page_in_seq[size_t(page)]) * page_size + slot;
      if (seq < 0 || position >= batch.kv_lens[size_t(seq)]) {
        for (int d = 0; d < head_dim; ++d) {
          store_nan<D>(pool, size_t(pool_offset(batch, stream, page, slot, head, d)));
        }
        continue;
      }
      const uint64_t index = kv_data_index(batch.cu_seqlens_kv[size_t(seq)] + position, head, 0,
                                           int(kv_heads), head_dim);
      const float amplitude = kv_amplitude(stream, head, fp8);
      const float scale = fp8 ? kv_scale(batch, stream, head) : 1.0f;
      for (int d = 0; d < head_dim; ++d) {
        float value = kv_element(key, index + uint64_t(d), amplitude);
        // An fp8 pool holds the code of value / scale (a division, as stored_kv_value does it).
        if (fp8) value = value / scale;
        store<D>(pool, size_t(pool_offset(batch, stream, page, slot, head, d)), value);
      }
    }
  });
}

}  // namespace

float query_value(const Batch& batch, int64_t token, int head, int dim) {
  const auto& model = batch.spec.model;
  return query_element(data_key(batch, DataStream::query),
                       query_data_index(token, head, dim, model.num_q_heads, model.head_dim));
}

float kv_value(const Batch& batch, DataStream stream, int seq, int64_t position, int head,
               int dim) {
  const auto& model = batch.spec.model;
  const int64_t token = kv_data_token(
      reinterpret_cast<const long long*>(batch.cu_seqlens_kv.data()), batch.prefix_source.data(),
      reinterpret_cast<const long long*>(batch.shared_prefix_len.data()), seq, position);
  return kv_element(
      data_key(batch, stream),
      kv_data_index(token, head, dim, model.num_kv_heads, stream_head_dim(batch, stream)),
      kv_amplitude(stream, head, fp8_cache(batch)));
}

float stored_kv_value(const Batch& batch, DataStream stream, int seq, int64_t position, int head,
                      int dim) {
  const float value = kv_value(batch, stream, seq, position, head, dim);
  if (!fp8_cache(batch)) return round_to(batch.kv_dtype, value);
  const float scale = kv_scale(batch, stream, head);
  return fp8_e4m3_to_float(float_to_fp8_e4m3(value / scale)) * scale;
}

int64_t pool_offset(const Batch& batch, DataStream stream, int64_t page, int slot, int head,
                    int dim) {
  const int64_t page_size = batch.page_size;
  const int64_t kv_heads = batch.spec.model.num_kv_heads;
  const int64_t head_dim = stream_head_dim(batch, stream);
  switch (batch.spec.kv_cache.layout) {
    case KvLayout::nhd:
      return ((page * page_size + slot) * kv_heads + head) * head_dim + dim;
    case KvLayout::hnd:
      return ((page * kv_heads + head) * page_size + slot) * head_dim + dim;
    case KvLayout::vllm:
      if (stream == DataStream::value) {  // [pages, kv_heads, head_dim, page_size]
        return ((page * kv_heads + head) * head_dim + dim) * page_size + slot;
      } else {  // [pages, kv_heads, head_dim / x, page_size, x]
        const int64_t x = vllm_pack(batch);
        return (((page * kv_heads + head) * (head_dim / x) + dim / x) * page_size + slot) * x +
               dim % x;
      }
  }
  return 0;
}

int stream_head_dim(const Batch& batch, DataStream stream) {
  return stream == DataStream::value ? batch.spec.model.effective_v_head_dim()
                                     : batch.spec.model.head_dim;
}

int64_t pool_elements(const Batch& batch, DataStream stream) {
  return batch.num_pages * batch.page_size * batch.spec.model.num_kv_heads *
         stream_head_dim(batch, stream);
}

int64_t query_elements(const Batch& batch) {
  return batch.total_q * batch.spec.model.num_q_heads * batch.spec.model.head_dim;
}

int64_t output_elements(const Batch& batch) {
  return batch.total_q * batch.spec.model.num_q_heads * batch.spec.model.effective_v_head_dim();
}

void fill_query(const Batch& batch, void* q) {
  switch (batch.dtype) {
    case DType::bf16:
      return fill_query_as<DType::bf16>(batch, q);
    case DType::fp16:
      return fill_query_as<DType::fp16>(batch, q);
    case DType::fp32:
      return fill_query_as<DType::fp32>(batch, q);
    case DType::fp8_e4m3:
      break;  // not a query dtype
  }
  throw Error(ExitCode::internal, "fill_query: unsupported dtype " + to_string(batch.dtype));
}

void fill_kv_pool(const Batch& batch, DataStream stream, void* pool) {
  switch (batch.kv_dtype) {
    case DType::bf16:
      return fill_kv_pool_as<DType::bf16>(batch, stream, pool);
    case DType::fp16:
      return fill_kv_pool_as<DType::fp16>(batch, stream, pool);
    case DType::fp32:
      return fill_kv_pool_as<DType::fp32>(batch, stream, pool);
    case DType::fp8_e4m3:
      return fill_kv_pool_as<DType::fp8_e4m3>(batch, stream, pool);
  }
  throw Error(ExitCode::internal, "fill_kv_pool: unsupported dtype " + to_string(batch.kv_dtype));
}

}  // namespace attn
