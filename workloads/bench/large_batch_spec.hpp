// The batch the generation-speed figures are measured on (issue 3: "a 128k-token, 256-sequence
// batch's metadata"): 256 Llama-3-8B decode sequences of 512 tokens (131,072 keys in all) in
// 16-token pages, under a given page allocation. Shared by the micro-benchmark and the ctest
// speed check so that both time the same thing.
#pragma once

#include "workloads/workload_spec.hpp"

namespace attn {

inline WorkloadSpec large_batch_spec(PageAllocation allocation, bool lognormal_lengths = false) {
  WorkloadSpec spec;
  spec.name = "bench-256x512";
  spec.model.num_q_heads = 32;
  spec.model.num_kv_heads = 8;
  spec.model.head_dim = 128;
  spec.kv_cache.page_size = 16;
  spec.kv_cache.allocation = allocation;
  if (allocation == PageAllocation::shared_prefix) spec.kv_cache.shared_prefix = {256, 8};
  SequenceSpec sequences;
  sequences.count = 256;
  sequences.context_len = LengthSpec(511);
  if (lognormal_lengths) {  // the same total on average, spread like serving traffic
    sequences.context_len.distribution = LengthDistribution::lognormal;
    sequences.context_len.median = 400;
    sequences.context_len.sigma = 0.7;
    sequences.context_len.min = 16;
    sequences.context_len.max = 4096;
  }
  spec.sequences = {sequences};
  spec.seed = 1;
  return spec;
}

}  // namespace attn
