// What generate_batch could refuse about a workload's masks beyond validate_workload, checked
// without building the batch, so that `attn-bench workload validate` answers for any workload in
// bounded time and memory: the block-sparse layout against its entry limit, the explicit mask's
// grid against its limit, and mask files against the lengths they must fit.
#pragma once

#include "workloads/workload_spec.hpp"

namespace attn {

// Throws InputError, with generate_batch's messages, when the block-sparse layout the parameters
// describe (counted, not built) or the explicit mask's grid (the sum of query_len x kv_len) is
// over its limit. Reads no file.
void check_mask_limits(const WorkloadSpec& spec);

// Reads the mask files the spec names (a block-sparse layout file, an explicit mask file) and
// checks them against the workload as generate_batch would (q heads, the longest sequence, every
// sequence's lengths), without building the layout or the grid. Throws InputError.
void check_mask_files(const WorkloadSpec& spec);

}  // namespace attn
