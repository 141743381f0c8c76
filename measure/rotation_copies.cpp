#include "measure/rotation_copies.hpp"

#include <algorithm>
#include <cmath>

namespace attn {

size_t rotation_copies(double footprint, double l2, double copy, double free) {
  const double wanted = std::ceil(2.0 * l2 / std::max(1.0, footprint));
  const double fit = 1.0 + std::floor(0.5 * std::max(0.0, free) / std::max(1.0, copy));
  return size_t(std::clamp(std::min(wanted, fit), 1.0, double(kMaxRotationCopies)));
}

}  // namespace attn
