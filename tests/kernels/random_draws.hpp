// The GPU tests' random draws: one value of a list, and one config a variant accepts for a batch
// (among those its space holds and its check accepts).
#pragma once

#include <random>
#include <vector>

#include "kernels/variant.hpp"
#include "tests/test_support.hpp"

namespace attn::testing {

// One of `values` (not empty), uniformly.
template <typename T>
const T& pick(std::mt19937_64& rng, const std::vector<T>& values) {
  return values[std::uniform_int_distribution<size_t>(0, values.size() - 1)(rng)];
}

// A random config of `variant`'s space that it accepts for `batch` on `target` (each axis drawn
// uniformly, up to `draws` draws), or its default config when no draw is accepted.
inline KernelConfig random_accepted_config(const Variant& variant, const Batch& batch,
                                           const Target& target, std::mt19937_64& rng,
                                           int draws = 20) {
  for (int attempt = 0; attempt < draws; ++attempt) {
    KernelConfig candidate;
    for (const ConfigAxis& axis : variant.space(batch, target)) {
      candidate.set(axis.name, pick(rng, axis.values));
    }
    if (variant.check(batch, candidate, target)) return candidate;
  }
  return variant.default_config(batch, target);
}

}  // namespace attn::testing
