// The CPU oracles for attention over a paged KV cache.
//
// Semantics (workloads/batch.hpp, docs/workload.md): for query token i (0-based) of sequence s and
// q head h, with kv head h / group:
//   logit_j = scale * q . k_j                 for every key j that key_visible() lets it see
//   logit_j = cap * tanh(logit_j / cap)       when logits_soft_cap > 0
//   out     = sum_j p_j v_j,  p_j = exp(logit_j) / (sum_j exp(logit_j) + exp(sink_h))
// where the sink term is present only with attention sinks (it takes probability mass and gives no
// value). K and V of an fp8 cache are code * scale (per tensor or per kv head). A row that sees no
// key outputs exactly zero.
//
// Multi-head latent attention (attention "mla", docs/mla-decode.md) is the same formula
// with one kv head whose K row is the latent row [c | k_rope] (head_dim = kv_lora_rank +
// qk_rope_head_dim) and whose V row is c, its first kv_lora_rank elements: the output row is
// kv_lora_rank wide (ModelShape::effective_v_head_dim), in latent space.
//
// Both oracles can also return each row's log-sum-exp, lse = log(sum_j exp(logit_j) + exp(sink_h))
// in natural log (the flash_fwd family's LSE output), as [total_q, num_q_heads] floats; -inf for
// a row that sees no key.
#pragma once

#include <vector>

#include "kernels/problem.hpp"
#include "workloads/batch.hpp"

namespace attn {

// Reads Q and K/V through the host problem's page table and pools (any layout, fp8 codes with the
// batch's scales), accumulates in double and returns the output in float:
// [total_q, num_q_heads, v_head_dim] (Q and K are head_dim wide, V and the output v_head_dim;
// mla: kv_lora_rank). Multi-threaded (threads 0: all). Fills *lse when given.
std::vector<float> paged_attention_reference(const Problem& host, size_t threads = 0,
                                             std::vector<float>* lse = nullptr);

// An independent second oracle: computes each element's value from the batch's data rule
// (batch_data.hpp) instead of reading any buffer, so it shares no paging or layout code with the
// reference. Dense, double precision. For tests and for verifying the CPU reference variant.
std::vector<float> naive_dense_attention(const Batch& batch, size_t threads = 0,
                                         std::vector<float>* lse = nullptr);

}  // namespace attn
