// Drawing sequence lengths from the distributions of a LengthSpec with the counter RNG, so the
// same seed gives the same lengths on every platform (the standard library's distributions are
// implementation-defined). docs/workload.md, "Length distributions", gives the formulas.
#pragma once

#include <cstdint>

#include "workloads/workload_spec.hpp"

namespace attn {

// Counter streams: the lengths of sequences entry e draw from stream kLengthStreamBase + 2e
// (context_len, and a trace's progress or chunk) and kLengthStreamBase + 2e + 1 (query_len).
// Separate streams per entry keep an entry's lengths unchanged when another entry changes.
inline constexpr unsigned kLengthStreamBase = 32;
// Each drawn length owns this many consecutive counters (the Zipf sampler may reject and retry).
inline constexpr uint64_t kCountersPerDraw = 64;

// Uniform doubles with 53 random bits from counter (key, index).
double counter_unit(uint64_t key, uint64_t index);           // [0, 1)
double counter_unit_positive(uint64_t key, uint64_t index);  // (0, 1]
// A uniform integer in [0, bound) (bound >= 1).
uint64_t counter_below(uint64_t key, uint64_t index, uint64_t bound);

// Length number `draw` of a stream: uses counters draw * kCountersPerDraw onwards.
int64_t draw_length(const LengthSpec& length, uint64_t key, uint64_t draw);

}  // namespace attn
