// The deterministic contents of a batch's tensors. Every value is a function of the data seed and
// the element's logical position (sequence, token, head, dim), so the same sequence holds the same
// keys whatever the page size, layout or page allocation, and a GPU fill computes the same bytes.
//
// Streams: Q, K and V draw from separate counter streams. Values are uniform in [-1, 1) rounded to
// the dtype; Q is scaled by kQueryAmplitude so that attention is peaked rather than flat (flat
// attention averages V and hides indexing bugs).
#pragma once

#include <cstdint>

#include "workloads/batch.hpp"

namespace attn {

enum class DataStream : unsigned { query = 1, key = 2, value = 3 };
inline constexpr float kQueryAmplitude = 3.0f;

// Value of Q at (query token `token` of the whole batch, head, dim), before rounding to the dtype.
float query_value(const Batch& batch, int64_t token, int head, int dim);
// Value of K or V at (sequence, position within the sequence, kv head, dim), before rounding.
float kv_value(const Batch& batch, DataStream stream, int seq, int64_t position, int head, int dim);

// Element offset of (page, slot in page, kv head, dim) in a K/V pool of the batch's layout.
int64_t pool_offset(const Batch& batch, int64_t page, int slot, int head, int dim);
int64_t pool_elements(const Batch& batch);   // num_pages * page_size * kv_heads * head_dim
int64_t query_elements(const Batch& batch);  // total_q * num_q_heads * head_dim

// Fill host buffers of the batch's dtype. Q: [total_q, num_q_heads, head_dim]. Pools: the layout's
// shape; slots no sequence owns (the tail of a last page, the poison page) are NaN.
// Multi-threaded.
void fill_query(const Batch& batch, void* q);
void fill_kv_pool(const Batch& batch, DataStream stream, void* pool);

}  // namespace attn
