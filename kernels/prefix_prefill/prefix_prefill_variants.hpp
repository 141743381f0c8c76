// The prefix_prefill family: each sequence's new tokens attend to its cached context (read through
// the page table) and causally to the new tokens themselves (seed 002's semantics); the masked
// variant reads an explicit (query_len, context_len + query_len) mask instead (seed 000).
#pragma once

#include "kernels/prefix_prefill/mma_params.hpp"
#include "kernels/variant.hpp"

namespace attn {

class Registry;

// Registers prefix_prefill.mma and prefix_prefill.masked (CUDA) and prefix_prefill.cpu_reference.
void add_prefix_prefill_variants(Registry& registry);

// What every CUDA prefix_prefill variant needs of a batch: bf16/fp16 Q, K/V of the Q dtype or
// fp8-e4m3, one sink logit per q head, no block-sparse layout (the blocksparse family's).
Support prefix_prefill_supports_batch(const Batch& batch);

// Byte strides of the K or V pool in the batch's layout (mma_params.hpp, PoolStrides): key-major
// for NHD, HND and vLLM's x-packed K; dim-major for vLLM's V.
PoolStrides prefix_prefill_pool_strides(const Batch& batch, bool value);
// Whether the batch's V pool is dim-major (vLLM's [pages, kv_heads, head_dim, page_size]).
bool prefix_prefill_v_dim_major(const Batch& batch);

// Minimum traffic: Q and the output, each sequence's K and V rows once per kv head (in the KV
// dtype: context and new tokens), the used block-table entries, and the explicit mask's bytes when
// the variant reads one. FLOPs: 4 * head_dim per visible (q head, query, key) triple.
Work prefix_prefill_work(const Batch& batch, bool reads_explicit_mask);

}  // namespace attn
