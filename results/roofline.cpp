#include "results/roofline.hpp"

namespace attn {

Bound bound_of(Family family) {
  return family == Family::paged_decode ? Bound::memory : Bound::compute;
}

void apply_ceiling(Family family, const DeviceCeilings& ceilings, Measurement& m) {
  const CeilingFraction f = fraction_of_ceiling(bound_of(family), m.gbps(), m.tflops(), ceilings);
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
