// The deterministic contents of a batch's tensors. Every value is a function of the data seed and
// the element's logical position (sequence, token, head, dim), so the same sequence holds the same
// keys whatever the page size, layout or page allocation, and a GPU fill computes the same bytes.
//
// The per-element rule (streams, logical indices, amplitudes, fp8 scales) lives in
// workloads/data_rule.hpp, which a GPU fill kernel compiles too.
#pragma once

#include <cstdint>

#include "workloads/batch.hpp"
#include "workloads/data_rule.hpp"

namespace attn {

// Value of Q at (query token `token` of the whole batch, head, dim), before rounding to the dtype.
float query_value(const Batch& batch, int64_t token, int head, int dim);
// Value of K or V at (sequence, position within the sequence, kv head, dim), before rounding. A
// position inside a shared prefix reads the prefix source's value.
float kv_value(const Batch& batch, DataStream stream, int seq, int64_t position, int head, int dim);
// The value a correct kernel sees there: kv_value rounded to the KV dtype, or for an fp8 cache
// the stored code times the head's scale.
float stored_kv_value(const Batch& batch, DataStream stream, int seq, int64_t position, int head,
                      int dim);

// Element offset of (page, slot in page, kv head, dim) in the K or V pool of the batch's layout
// (vLLM's layout differs between K and V; V's rows are v_head_dim wide).
int64_t pool_offset(const Batch& batch, DataStream stream, int64_t page, int slot, int head,
                    int dim);
// The width of one K or V row: head_dim for K, the model's effective_v_head_dim for V (mla has
// no V pool: its K pool is the latent pool, head_dim wide).
int stream_head_dim(const Batch& batch, DataStream stream);
// num_pages * page_size * kv_heads * stream_head_dim(stream): K and V differ when v_head_dim does.
int64_t pool_elements(const Batch& batch, DataStream stream);
int64_t query_elements(const Batch& batch);  // total_q * num_q_heads * head_dim
// total_q * num_q_heads * effective_v_head_dim (v_head_dim, else head_dim; mla: kv_lora_rank)
int64_t output_elements(const Batch& batch);

// mla (spec.model.latent()): the K pool is the latent pool, filled from DataStream::key with kv
// head 0 and head_dim = kv_lora_rank + qk_rope_head_dim; a row is [c | k_rope]. There is no V pool.
//
// Fill host buffers: Q of the batch's dtype, [total_q, num_q_heads, head_dim]; a pool of its
// kv_dtype in the layout's shape, V's rows v_head_dim wide (fp8: codes). Slots no sequence owns
// (the tail of a last page, the poison page, spare pool pages) are NaN. Multi-threaded.
void fill_query(const Batch& batch, void* q);
void fill_kv_pool(const Batch& batch, DataStream stream, void* pool);

}  // namespace attn
