// The CPU oracles for attention over a paged KV cache.
//
// Semantics (docs/workload.md): query token i (0-based) of sequence s attends to keys
// [0, context_len + i] of that sequence (causal, aligned to the end); kv_len = context_len +
// query_len. out = softmax(scale * q.K^T) V per query head, with K/V of kv head = head / group.
#pragma once

#include <vector>

#include "kernels/problem.hpp"
#include "workloads/batch.hpp"

namespace attn {

// Reads Q and K/V through the host problem's page table, accumulates in double and returns the
// output in float: [total_q, num_q_heads, head_dim]. Multi-threaded (threads 0: all).
std::vector<float> paged_attention_reference(const Problem& host, size_t threads = 0);

// An independent second oracle: computes each element's value from the batch's data rule
// (batch_data.hpp) instead of reading any buffer, so it shares no paging code with the reference.
// Dense, double precision. For tests and for verifying the CPU reference variant.
std::vector<float> naive_dense_attention(const Batch& batch, size_t threads = 0);

}  // namespace attn
