// The mla_decode family: multi-head latent attention (DeepSeek-V2/V3, Kimi K2) in its absorbed
// form over a paged latent cache, for decode and speculative decode (a few query tokens per
// sequence, causal among them). docs/mla-decode.md has the semantics.
//
// Per token the cache holds one latent row [c | k_rope] (kv_lora_rank + qk_rope_head_dim
// elements) shared by every q head. A q head's row is [q_nope absorbed | q_rope]; its score for
// key t is softmax_scale * (q_nope_absorbed . c[t] + q_rope . k_rope[t]) and its output, in latent
// space, sum_t p(t) c[t] (kv_lora_rank elements).
//
// Where a variant finds its inputs (kernels/problem.hpp, workloads/batch.hpp):
//   q            Problem::q()        [total_q, num_q_heads, kv_lora_rank + qk_rope_head_dim]
//   latent pool  Problem::k_pool()   [num_pages, page_size, kv_lora_rank + qk_rope_head_dim];
//                                    Problem::v_pool() is empty (V is c, the first kv_lora_rank
//                                    elements of each row)
//   out          Problem::out()      [total_q, num_q_heads, kv_lora_rank], Q's dtype
//   page table   Problem::block_table() (device: [num_seqs, max_pages_per_seq], padded with the
//                poison page); host: batch.page_indptr / page_indices (CSR)
//   lengths      Problem::kv_lens(), Problem::cu_seqlens_q(); query token i of sequence s sees
//                keys 0 .. context_len + i (causal) or all kv_len keys (non-causal)
//   fp8          batch.kv_dtype == fp8_e4m3: the pool holds codes, value = code * k_scales[0]
//   scale        batch.softmax_scale
#pragma once

#include <functional>

#include "kernels/config_axes.hpp"
#include "kernels/variant.hpp"

namespace attn {

class Registry;

// The most query tokens per sequence the family takes: decode and speculative decode (a longer
// query is a prefill).
inline constexpr int64_t kMlaDecodeMaxQueryTokens = 8;

// Registers mla_decode.sm80_mma, mla_decode.sm90_wgmma, mla_decode.sm90_wgmma_key_rows and
// mla_decode.cpu_reference.
void add_mla_decode_variants(Registry& registry);

// The family's scope: latent attention in decode and speculative-decode batches (queries
// "decode", "prefill" or "mixed" up to kMlaDecodeMaxQueryTokens tokens), causal or not, shared
// prefixes, the NHD latent pool, bf16/fp16 Q, a latent cache of Q's dtype or fp8 e4m3 with a
// per-tensor scale, every kv_lora_rank and qk_rope_head_dim of the schema, pages of 1 to 256
// tokens. A GPU variant narrows it (e.g. kv_lora_rank 512 and qk_rope_head_dim 64 only).
FeatureSet mla_decode_features();
// The scope without the KV dtypes beyond Q's and without the rope widths, which each variant
// declares for itself.
FeatureSet mla_decode_common_features();

// The family's rule beyond the features: at most kMlaDecodeMaxQueryTokens query tokens per
// sequence.
Support mla_decode_supports_batch(const Batch& batch);

// The numbers a Hopper variant's rule text names ({rank}, {rope}, {page_size}, {shared_bytes},
// {shared_limit}, {register_estimate}, {register_limit}).
struct MlaRuleNumbers {
  int rank, rope, page_size, shared_bytes, shared_limit, register_estimate, register_limit;
};
// What a Hopper variant's supports() needs of its config once the config has every axis: its
// traits' rule (0: every rule holds) with the rule's text and numbers, and its split launch.
struct MlaSm90Rules {
  int rule;
  const char* rule_text;
  MlaRuleNumbers numbers;
  int num_splits, max_splits;
};
// The Hopper variants' supports(): an sm_90a target, the family's batch rule, exactly `axes`,
// then the config's rules (`rules`, called once the axes are there: the refusal names the rule's
// numbers), then the launch of its planned splits.
Support mla_sm90_supports(const Batch& batch, const KernelConfig& config, const Target& target,
                          const ConfigAxes& axes, const std::string& name,
                          const std::function<MlaSm90Rules()>& rules);

// minimum_work through the page table: Q rows (kv_lora_rank + qk_rope_head_dim) read once, output
// rows (kv_lora_rank) written once, each visible latent row (kv_lora_rank + qk_rope_head_dim
// elements of the KV dtype) once per sequence, not once per q head, the page-table entries of the
// pages holding them and the fp8 scale. FLOPs per (q head, query, visible key): 2 * (kv_lora_rank
// + qk_rope_head_dim) for the score and 2 * kv_lora_rank for the output.
Work mla_decode_work(const Batch& batch);

// Rows a CUDA variant computes for sequence s: its query tokens x q heads.
int64_t mla_rows_of(const Batch& batch, int s);

// The one JIT program of a CUDA variant: `header` (the kernel's .cuh) and the name expression
// `kernel`, named <config_name>.r<kv_lora_rank>.rope<qk_rope_head_dim>.<dtype>[.fp8_e4m3].
JitProgram mla_decode_program(const std::string& config_name, const Batch& batch,
                              const Target& target, const std::string& header, std::string kernel);

}  // namespace attn
