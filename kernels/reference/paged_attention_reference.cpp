#include "kernels/reference/paged_attention_reference.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/thread_pool.hpp"
#include "workloads/batch_data.hpp"

namespace attn {

namespace {

// Softmax-weighted sum over `keys` logits, in double: out[d] = sum_j p_j * value(j, d).
template <typename ValueAt>
void softmax_weighted_sum(std::vector<double>& logits, int head_dim, const ValueAt& value_at,
                          float* out) {
  if (logits.empty()) {
    std::fill(out, out + head_dim, 0.0f);
    return;
  }
  const double max_logit = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (double& l : logits) {
    l = std::exp(l - max_logit);
    sum += l;
  }
  std::vector<double> acc(size_t(head_dim), 0.0);
  for (size_t j = 0; j < logits.size(); ++j) {
    const double p = logits[j] / sum;
    for (int d = 0; d < head_dim; ++d) acc[size_t(d)] += p * value_at(j, d);
  }
  for (int d = 0; d < head_dim; ++d) out[d] = float(acc[size_t(d)]);
}

// Which sequence each query token belongs to.
std::vector<int> sequence_of_tokens(const Batch& batch) {
  std::vector<int> seq_of(size_t(batch.total_q));
  for (int s = 0; s < batch.num_seqs; ++s) {
    for (int64_t t = batch.cu_seqlens_q[s]; t < batch.cu_seqlens_q[s + 1]; ++t)
      seq_of[size_t(t)] = s;
  }
  return seq_of;
}

}  // namespace

std::vector<float> paged_attention_reference(const Problem& host, size_t threads) {
  ATTN_ASSERT(host.backend() == Backend::cpu, "the CPU reference needs a host problem");
  const Batch& batch = host.batch();
  const ModelShape& m = batch.spec.model;
  const DType dtype = m.dtype;
  const int D = m.head_dim, Hq = m.num_q_heads, group = batch.spec.group_size();
  const double scale = batch.softmax_scale;
  const std::vector<int> seq_of = sequence_of_tokens(batch);
  std::vector<float> out(size_t(batch.total_q) * Hq * D);

  parallel_for(
      size_t(batch.total_q) * Hq,
      [&](size_t begin, size_t end) {
        std::vector<double> logits;
        std::vector<int64_t> row_offset;  // pool offset of each visible key row
        for (size_t r = begin; r < end; ++r) {
          const int64_t token = int64_t(r) / Hq;
          const int head = int(r % size_t(Hq)), kv_head = head / group;
          const int s = seq_of[size_t(token)];
          const int64_t position = token - batch.cu_seqlens_q[s];  // index among the new tokens
          const int64_t visible = batch.context_lens[s] + position + 1;
          const int32_t* pages = host.block_table() + int64_t(s) * batch.max_pages_per_seq;

          row_offset.resize(size_t(visible));
          for (int64_t j = 0; j < visible; ++j) {
            row_offset[size_t(j)] = pool_offset(batch, pages[j / batch.page_size],
                                                int(j % batch.page_size), kv_head, 0);
          }
          const int64_t q_offset = (token * Hq + head) * D;
          logits.assign(size_t(visible), 0.0);
          for (int64_t j = 0; j < visible; ++j) {
            double dot = 0;
            for (int d = 0; d < D; ++d) {
              dot += double(load_as_float(host.q(), size_t(q_offset + d), dtype)) *
                     double(load_as_float(host.k_pool(), size_t(row_offset[size_t(j)] + d), dtype));
            }
            logits[size_t(j)] = dot * scale;
          }
          softmax_weighted_sum(
              logits, D,
              [&](size_t j, int d) {
                return double(load_as_float(host.v_pool(), size_t(row_offset[j] + d), dtype));
              },
              out.data() + r * size_t(D));
        }
      },
      threads);
  return out;
}

std::vector<float> naive_dense_attention(const Batch& batch, size_t threads) {
  const ModelShape& m = batch.spec.model;
  const int D = m.head_dim, Hq = m.num_q_heads, group = batch.spec.group_size();
  const double scale = batch.softmax_scale;
  const std::vector<int> seq_of = sequence_of_tokens(batch);
  std::vector<float> out(size_t(batch.total_q) * Hq * D);

  parallel_for(
      size_t(batch.total_q) * Hq,
      [&](size_t begin, size_t end) {
        std::vector<double> q(static_cast<size_t>(D));
        std::vector<double> logits, values;
        for (size_t r = begin; r < end; ++r) {
          const int64_t token = int64_t(r) / Hq;
          const int head = int(r % size_t(Hq)), kv_head = head / group;
          const int s = seq_of[size_t(token)];
          const int64_t visible = batch.context_lens[s] + (token - batch.cu_seqlens_q[s]) + 1;
          for (int d = 0; d < D; ++d) {
            q[size_t(d)] = round_to(m.dtype, query_value(batch, token, head, d));
          }
          logits.assign(size_t(visible), 0.0);
          values.assign(size_t(visible) * D, 0.0);
          for (int64_t j = 0; j < visible; ++j) {
            double dot = 0;
            for (int d = 0; d < D; ++d) {
              dot += q[size_t(d)] *
                     round_to(m.dtype, kv_value(batch, DataStream::key, s, j, kv_head, d));
              values[size_t(j) * D + d] =
                  round_to(m.dtype, kv_value(batch, DataStream::value, s, j, kv_head, d));
            }
            logits[size_t(j)] = dot * scale;
          }
          softmax_weighted_sum(
              logits, D, [&](size_t j, int d) { return values[j * size_t(D) + d]; },
              out.data() + r * size_t(D));
        }
      },
      threads);
  return out;
}

}  // namespace attn
