#include "results/roofline.hpp"

namespace attn {

Bound bound_of(Family family) {
  // mla_decode reads each latent row once for every q head: memory-bound at a few q heads, near
  // the ridge at 128 (about 240 FLOP per byte in bf16); set against the read bandwidth like
  // paged_decode (docs/mla-decode.md).
  return family == Family::paged_decode || family == Family::mla_decode ? Bound::memory
                                                                        : Bound::compute;
}

AchievedRate achieved_rate(const Measurement& m) {
  AchievedRate rate;
  rate.gbps = m.gbps();
  rate.unique_gbps = m.unique_gbps();
  rate.tflops = m.tflops();
  rate.sm_clock_mhz = m.clocks.median_mhz > 0 ? m.clocks.median_mhz : m.clocks.expected_mhz;
  return rate;
}

CeilingFraction ceiling_fraction_of(Family family, const Measurement& m,
                                    const DeviceCeilings& ceilings, const DeviceRecord* device) {
  return fraction_of_ceiling(bound_of(family), achieved_rate(m), ceilings, device);
}

void apply_ceiling(Family family, const DeviceCeilings& ceilings, Measurement& m) {
  const CeilingFraction f = ceiling_fraction_of(family, m, ceilings);
  m.ceiling = f.ceiling;
  m.ceiling_fraction =
      m.disposition == Disposition::passed && m.stats.median > 0 ? f.fraction : std::nullopt;
}

std::optional<double> ceiling_of(Bound bound, const DeviceCeilings& ceilings) {
  return ceilings.value(bound == Bound::memory ? kReadGbps : kBf16Tflops);
}

std::optional<double> predict_time_us(Bound bound, double time_a_us, const DeviceCeilings& a,
                                      const DeviceCeilings& b) {
  const std::optional<double> ceiling_a = ceiling_of(bound, a), ceiling_b = ceiling_of(bound, b);
  if (!ceiling_a || !ceiling_b || !(time_a_us > 0)) return std::nullopt;
  return time_a_us * *ceiling_a / *ceiling_b;
}

}  // namespace attn
