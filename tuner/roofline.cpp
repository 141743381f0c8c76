#include "tuner/roofline.hpp"

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

}  // namespace attn
