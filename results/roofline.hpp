// Where a family's results sit against the device's ceilings: decode reads the KV cache once and
// does a few FLOPs per byte, so it is set against the measured read bandwidth; the prefill, block-
// sparse and dense families do O(tokens) FLOPs per byte and are set against the bf16 tensor rate.
#pragma once

#include <optional>

#include "base/family.hpp"
#include "results/ceilings.hpp"
#include "results/measurement.hpp"

namespace attn {

Bound bound_of(Family family);

// What `m` achieved: its logical and unique GB/s, TFLOP/s, and the SM clock it ran at (the median
// clock-probe reading of its kept samples, else the expected clock, else not known).
AchievedRate achieved_rate(const Measurement& m);

// `m` against its family's ceiling (ceilings.hpp: compute ceilings scaled to m's clock); with
// `device`, the datasheet peak beside it.
CeilingFraction ceiling_fraction_of(Family family, const Measurement& m,
                                    const DeviceCeilings& ceilings,
                                    const DeviceRecord* device = nullptr);

// Sets m.ceiling and m.ceiling_fraction (left empty when the device has no such ceiling, or m was
// not timed): the fraction as measured, above 1 included.
void apply_ceiling(Family family, const DeviceCeilings& ceilings, Measurement& m);

// The device's ceiling for a bound: its read bandwidth (GB/s) for memory, its bf16 tensor rate
// (TFLOP/s) for compute; nullopt when it was not calibrated for it.
std::optional<double> ceiling_of(Bound bound, const DeviceCeilings& ceilings);

// The roofline's prediction of a kernel's time on device B from its time on device A: a kernel at
// a fixed fraction of its bound's ceiling takes time_a * ceiling_a / ceiling_b on B. nullopt when
// either device lacks that ceiling.
std::optional<double> predict_time_us(Bound bound, double time_a_us, const DeviceCeilings& a,
                                      const DeviceCeilings& b);

}  // namespace attn
