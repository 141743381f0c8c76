// The paged_decode family: one query token per sequence over its pages (seed 001's semantics).
#pragma once

#include "kernels/variant.hpp"

namespace attn {

class Registry;

// Registers paged_decode.splitkv and paged_decode.tensorcore (CUDA) and paged_decode.cpu_reference.
void add_paged_decode_variants(Registry& registry);

// Checks shared by every paged_decode variant: one query token per sequence.
Support paged_decode_supports_batch(const Batch& batch);

// Minimum traffic: Q, each sequence's K and V rows once per KV head (in the KV dtype), the used
// block-table entries, kv_lens and the output. FLOPs: 2 multiply-adds per (query head, visible
// key, dim) for Q.K and P.V, counting only the keys the masks leave visible (visible_pairs).
Work paged_decode_work(const Batch& batch);

}  // namespace attn
