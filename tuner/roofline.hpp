// Where a family's results sit against the device's ceilings: decode reads the KV cache once and
// does a few FLOPs per byte, so it is set against the measured read bandwidth; the prefill, block-
// sparse and dense families do O(tokens) FLOPs per byte and are set against the bf16 tensor rate.
#pragma once

#include "kernels/variant.hpp"
#include "results/ceilings.hpp"
#include "results/measurement.hpp"

namespace attn {

Bound bound_of(Family family);

// Sets m.ceiling and m.ceiling_fraction (left empty when the device has no such ceiling).
void apply_ceiling(Family family, const DeviceCeilings& ceilings, Measurement& m);

}  // namespace attn
