#include "kernels/reference/paged_attention_reference.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/thread_pool.hpp"
#include "workloads/batch_data.hpp"
#include "workloads/visibility.hpp"

namespace attn {

namespace {

// One output row: a query token and head.
struct OutputRow {
  int64_t token;    // query token index in the batch
  int64_t q_index;  // its index among its sequence's new tokens
  int head;         // query head
  int kv_head;      // the KV head it reads (GQA)
  int seq;          // its sequence
};

// The attention semantics (the header's formula), shared by both oracles: they differ only in
// where q.k and v come from. dot(j) is the unscaled q.k of key position j, value(j, d) its value
// for d < v_head_dim (V's width, the output's; mla: kv_lora_rank). Returns the row's log-sum-exp:
// the natural log of the softmax denominator (-inf: no key).
template <typename Dot, typename Value>
double attend_row(const Batch& batch, const OutputRow& row, int v_head_dim, const Dot& dot,
                  const Value& value, float* out) {
  std::vector<int64_t> keys;
  std::vector<double> weights;
  const double cap = batch.logits_soft_cap;
  for (int64_t j = 0; j < batch.kv_lens[size_t(row.seq)]; ++j) {
    if (!key_visible(batch, row.seq, row.head, row.q_index, j)) continue;
    double logit = dot(j) * double(batch.softmax_scale);
    if (cap > 0) logit = cap * std::tanh(logit / cap);
    keys.push_back(j);
    weights.push_back(logit);
  }
  std::fill(out, out + v_head_dim, 0.0f);
  if (keys.empty()) {  // nothing visible: exactly zero, even with a sink
    return -std::numeric_limits<double>::infinity();
  }

  const bool has_sink = !batch.sink_logits.empty();
  const double sink = has_sink ? double(batch.sink_logits[size_t(row.head)]) : 0.0;
  double max_logit = *std::max_element(weights.begin(), weights.end());
  if (has_sink) max_logit = std::max(max_logit, sink);
  double sum = has_sink ? std::exp(sink - max_logit) : 0.0;  // the sink adds mass, no value
  for (double& w : weights) {
    w = std::exp(w - max_logit);
    sum += w;
  }
  std::vector<double> acc(size_t(v_head_dim), 0.0);
  for (size_t k = 0; k < keys.size(); ++k) {
    const double p = weights[k] / sum;
    for (int d = 0; d < v_head_dim; ++d) acc[size_t(d)] += p * value(keys[k], d);
  }
  for (int d = 0; d < v_head_dim; ++d) out[d] = float(acc[size_t(d)]);
  return max_logit + std::log(sum);
}

// Calls fn(row, out) for every output row, in parallel; out points at the row's v_head_dim floats.
// fn returns the row's log-sum-exp, stored at [token, head] of *lse when lse is not null.
template <typename Fn>
std::vector<float> for_each_output_row(const Batch& batch, size_t threads, std::vector<float>* lse,
                                       const Fn& fn) {
  const ModelShape& m = batch.spec.model;
  const int Hq = m.num_q_heads, group = batch.spec.group_size();
  std::vector<int> seq_of(size_t(batch.total_q));
  for (int s = 0; s < batch.num_seqs; ++s) {
    for (int64_t t = batch.cu_seqlens_q[s]; t < batch.cu_seqlens_q[s + 1]; ++t)
      seq_of[size_t(t)] = s;
  }
  const size_t width = size_t(m.effective_v_head_dim());
  std::vector<float> out(size_t(batch.total_q) * Hq * width);
  if (lse != nullptr) lse->assign(size_t(batch.total_q) * Hq, 0.0f);
  parallel_for(
      size_t(batch.total_q) * Hq,
      [&](size_t begin, size_t end) {
        for (size_t r = begin; r < end; ++r) {
          OutputRow row;
          row.token = int64_t(r) / Hq;
          row.head = int(r % size_t(Hq));
          row.kv_head = row.head / group;
          row.seq = seq_of[size_t(row.token)];
          row.q_index = row.token - batch.cu_seqlens_q[size_t(row.seq)];
          const double row_lse = fn(row, out.data() + r * width);
          if (lse != nullptr) (*lse)[r] = float(row_lse);
        }
      },
      threads);
  return out;
}

// Dequantisation scale of an fp8 cache's kv head (1 for a bf16/fp16 cache).
double kv_scale(const std::vector<float>& scales, int kv_head) {
  if (scales.empty()) return 1.0;
  return scales.size() == 1 ? scales[0] : scales[size_t(kv_head)];
}

// Element offset of (page, slot, head, dim) in one pool, split as row(page, slot, head) + dim
// part: every layout is affine in dim apart from the row (vLLM's K interleaves dim in x-wide
// chunks, so the dim part is a table rather than d itself).
struct PoolAddressing {
  const Batch& batch;
  DataStream stream;
  std::vector<int64_t> dim_offset;  // [the stream's head dim]

  PoolAddressing(const Batch& b, DataStream s) : batch(b), stream(s) {
    const int64_t origin = pool_offset(batch, stream, 0, 0, 0, 0);
    for (int d = 0; d < stream_head_dim(batch, stream); ++d)
      dim_offset.push_back(pool_offset(batch, stream, 0, 0, 0, d) - origin);
  }
  int64_t row(int64_t page, int slot, int head) const {
    return pool_offset(batch, stream, page, slot, head, 0);
  }
};

}  // namespace

std::vector<float> paged_attention_reference(const Problem& host, size_t threads,
                                             std::vector<float>* lse) {
  ATTN_ASSERT(host.backend() == Backend::cpu, "the CPU reference needs a host problem");
  const Batch& batch = host.batch();
  const int D = batch.spec.model.head_dim, Hq = batch.spec.model.num_q_heads;
  const int Dv = batch.spec.model.effective_v_head_dim();
  // mla: V is the first kv_lora_rank elements of the latent pool's rows (the K pool), under K's
  // scale; there is no V pool.
  const bool latent = batch.spec.model.latent();
  const PoolAddressing k_pool(batch, DataStream::key);
  const PoolAddressing v_pool(batch, latent ? DataStream::key : DataStream::value);
  const void* v_data = latent ? host.k_pool() : host.v_pool();
  return for_each_output_row(batch, threads, lse, [&](const OutputRow& row, float* out) {
    // The CSR page table: a host problem has no padded block table.
    const int32_t* pages = batch.page_indices.data() + batch.page_indptr[size_t(row.seq)];
    auto page_of = [&](int64_t j) { return pages[j / batch.page_size]; };
    auto slot_of = [&](int64_t j) { return int(j % batch.page_size); };
    std::vector<double> q(static_cast<size_t>(D));
    for (int d = 0; d < D; ++d)
      q[size_t(d)] =
          load_as_float(host.q(), size_t((row.token * Hq + row.head) * D + d), batch.dtype);
    const double k_scale = kv_scale(batch.k_scales, row.kv_head);
    const double v_scale = latent ? k_scale : kv_scale(batch.v_scales, row.kv_head);
    return attend_row(
        batch, row, Dv,
        [&](int64_t j) {
          const int64_t base = k_pool.row(page_of(j), slot_of(j), row.kv_head);
          double dot = 0;
          for (int d = 0; d < D; ++d) {
            dot += q[size_t(d)] *
                   double(load_as_float(host.k_pool(), size_t(base + k_pool.dim_offset[size_t(d)]),
                                        batch.kv_dtype));
          }
          return dot * k_scale;
        },
        [&](int64_t j, int d) {
          const int64_t base = v_pool.row(page_of(j), slot_of(j), row.kv_head);
          return v_scale * double(load_as_float(v_data, size_t(base + v_pool.dim_offset[size_t(d)]),
                                                batch.kv_dtype));
        },
        out);
  });
}

std::vector<float> naive_dense_attention(const Batch& batch, size_t threads,
                                         std::vector<float>* lse) {
  const int D = batch.spec.model.head_dim, Dv = batch.spec.model.effective_v_head_dim();
  // mla: V is the first kv_lora_rank elements of the latent row, the key stream's data.
  const DataStream v_stream = batch.spec.model.latent() ? DataStream::key : DataStream::value;
  return for_each_output_row(batch, threads, lse, [&](const OutputRow& row, float* out) {
    std::vector<double> q(static_cast<size_t>(D));
    for (int d = 0; d < D; ++d)
      q[size_t(d)] = round_to(batch.dtype, query_value(batch, row.token, row.head, d));
    // Keys and values as the cache holds them (rounded, dequantised), from the data rule.
    return attend_row(
        batch, row, Dv,
        [&](int64_t j) {
          double dot = 0;
          for (int d = 0; d < D; ++d) {
            dot +=
                q[size_t(d)] * stored_kv_value(batch, DataStream::key, row.seq, j, row.kv_head, d);
          }
          return dot;
        },
        [&](int64_t j, int d) {
          return double(stored_kv_value(batch, v_stream, row.seq, j, row.kv_head, d));
        },
        out);
  });
}

}  // namespace attn
