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

// One output row: a query token and head, and the keys it sees.
struct OutputRow {
  int64_t token;    // query token index in the batch
  int head;         // query head
  int kv_head;      // the KV head it reads (GQA)
  int seq;          // its sequence
  int64_t visible;  // keys [0, visible) of the sequence: context_len + position + 1
};

// Calls fn(row, out) for every output row, in parallel; out points at the row's head_dim floats.
template <typename Fn>
std::vector<float> for_each_output_row(const Batch& batch, size_t threads, const Fn& fn) {
  const ModelShape& m = batch.spec.model;
  const int Hq = m.num_q_heads, group = batch.spec.group_size();
  std::vector<int> seq_of(size_t(batch.total_q));
  for (int s = 0; s < batch.num_seqs; ++s) {
    for (int64_t t = batch.cu_seqlens_q[s]; t < batch.cu_seqlens_q[s + 1]; ++t)
      seq_of[size_t(t)] = s;
  }
  std::vector<float> out(size_t(batch.total_q) * Hq * m.head_dim);
  parallel_for(
      size_t(batch.total_q) * Hq,
      [&](size_t begin, size_t end) {
        for (size_t r = begin; r < end; ++r) {
          OutputRow row;
          row.token = int64_t(r) / Hq;
          row.head = int(r % size_t(Hq));
          row.kv_head = row.head / group;
          row.seq = seq_of[size_t(row.token)];
          row.visible = batch.context_lens[row.seq] + (row.token - batch.cu_seqlens_q[row.seq]) + 1;
          fn(row, out.data() + r * size_t(m.head_dim));
        }
      },
      threads);
  return out;
}

}  // namespace

std::vector<float> paged_attention_reference(const Problem& host, size_t threads) {
  ATTN_ASSERT(host.backend() == Backend::cpu, "the CPU reference needs a host problem");
  const Batch& batch = host.batch();
  const DType dtype = batch.spec.model.dtype;
  const int D = batch.spec.model.head_dim, Hq = batch.spec.model.num_q_heads;
  return for_each_output_row(batch, threads, [&](const OutputRow& row, float* out) {
    // Pool offset of each visible key row, read through the block table.
    const int32_t* pages = host.block_table() + int64_t(row.seq) * batch.max_pages_per_seq;
    std::vector<int64_t> key_offset(size_t(row.visible));
    for (int64_t j = 0; j < row.visible; ++j) {
      key_offset[size_t(j)] = pool_offset(batch, DataStream::key, pages[j / batch.page_size],
                                          int(j % batch.page_size), row.kv_head, 0);
    }
    const int64_t q_offset = (row.token * Hq + row.head) * D;
    std::vector<double> logits(size_t(row.visible), 0.0);
    for (int64_t j = 0; j < row.visible; ++j) {
      double dot = 0;
      for (int d = 0; d < D; ++d) {
        dot += double(load_as_float(host.q(), size_t(q_offset + d), dtype)) *
               double(load_as_float(host.k_pool(), size_t(key_offset[size_t(j)] + d), dtype));
      }
      logits[size_t(j)] = dot * batch.softmax_scale;
    }
    softmax_weighted_sum(
        logits, D,
        [&](size_t j, int d) {
          return double(load_as_float(host.v_pool(), size_t(key_offset[j] + d), dtype));
        },
        out);
  });
}

std::vector<float> naive_dense_attention(const Batch& batch, size_t threads) {
  const DType dtype = batch.spec.model.dtype;
  const int D = batch.spec.model.head_dim;
  return for_each_output_row(batch, threads, [&](const OutputRow& row, float* out) {
    std::vector<double> q(static_cast<size_t>(D));
    for (int d = 0; d < D; ++d)
      q[size_t(d)] = round_to(dtype, query_value(batch, row.token, row.head, d));
    std::vector<double> logits(size_t(row.visible), 0.0);
    std::vector<double> values(size_t(row.visible) * D, 0.0);
    for (int64_t j = 0; j < row.visible; ++j) {
      double dot = 0;
      for (int d = 0; d < D; ++d) {
        dot += q[size_t(d)] *
               round_to(dtype, kv_value(batch, DataStream::key, row.seq, j, row.kv_head, d));
        values[size_t(j) * D + d] =
            round_to(dtype, kv_value(batch, DataStream::value, row.seq, j, row.kv_head, d));
      }
      logits[size_t(j)] = dot * batch.softmax_scale;
    }
    softmax_weighted_sum(
        logits, D, [&](size_t j, int d) { return values[j * size_t(D) + d]; }, out);
  });
}

}  // namespace attn
