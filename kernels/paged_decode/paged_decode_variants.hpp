// The paged_decode family: one query token per sequence over its pages (seed 001's semantics).
#pragma once

#include "kernels/variant.hpp"

namespace attn {

class Registry;

// Registers paged_decode.sm80_simt, paged_decode.sm80_mma and paged_decode.sm90_tma (CUDA) and
// paged_decode.cpu_reference.
void add_paged_decode_variants(Registry& registry);

// What the CUDA paged_decode kernels implement (sm80_simt and sm80_mma; sm90_tma without fp8 K/V):
// decode batches, causal or not, sliding window, soft-cap, sinks, shared prefixes, NHD and HND
// pools, bf16/fp16 Q, K/V of Q's dtype or fp8 e4m3 with per-tensor or per-head scales, head dims
// 64, 80, 96, 128, 192 and 256 (sm90_tma: 64, 128 and 256), pages of 1 to 256 tokens. Not the vllm
// layout, block-sparse or explicit masks.
FeatureSet paged_decode_features();

// Element strides of one K or V pool in the NHD or HND layout (the vllm layout has none such).
struct PagedPoolStrides {
  long long page = 0, token = 0, head = 0;
};
PagedPoolStrides paged_pool_strides(const Batch& batch);

// minimum_work through the page table: Q, each sequence's visible K and V rows once per kv head
// (in the KV dtype: a sliding window reads only its window), the block-table entries of the pages
// holding them, fp8 scales and the output; shared prefix pages once per sequence (bytes) and once
// in memory (unique_bytes). FLOPs: 2 multiply-adds per (query head, visible key, dim) for Q.K and
// P.V, counting only the keys the masks leave visible (visible_pairs).
Work paged_decode_work(const Batch& batch);

}  // namespace attn
