// The cases of an "every accepted config" GPU test: every config of a variant's space, each run on
// some of a few batches rather than on all of them. A config's program differs per batch (dtype,
// causality, fp8 K/V), so a config run on each of n batches is n NVRTC compiles; on a fresh
// machine those compiles were most of the GPU suite's time. Here the k-th config runs on
// `per_config` of the batches, rotating (batches (k * per_config + j) % n, j < per_config; one the
// variant declines passes to the next that accepts it), so that every config runs and every
// batch runs with a share of the configs. Order the batches so that each group of per_config
// consecutive ones mixes what matters (causal and not, for instance).
//
// Host code only: tests/kernels/every_config_cases_test.cpp checks it on the CPU.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "kernels/variant.hpp"

namespace attn::testing {

using ConfigFilter = std::function<bool(const KernelConfig&)>;

// Every config of `variant`'s space for `batch`, accepted or not, in odometer order (the last axis
// fastest), with each axis named in `fixed` held at its value there.
inline std::vector<KernelConfig> space_configs(const Variant& variant, const Batch& batch,
                                               const Target& target,
                                               const std::map<std::string, int64_t>& fixed = {}) {
  std::vector<KernelConfig> configs(1);
  for (const ConfigAxis& axis : variant.space(batch, target)) {
    const auto held = fixed.find(axis.name);
    const std::vector<int64_t> values =
        held == fixed.end() ? axis.values : std::vector<int64_t>{held->second};
    std::vector<KernelConfig> longer;
    for (const KernelConfig& prefix : configs) {
      for (int64_t value : values) {
        KernelConfig config = prefix;
        config.set(axis.name, value);
        longer.push_back(std::move(config));
      }
    }
    configs = std::move(longer);
  }
  return configs;
}

// Every config of `variant`'s space (the cross product of its axes, for batches.front()) that
// `keep` keeps (all when empty) and at least one of `batches` accepts, in the space's order.
inline std::vector<KernelConfig> configs_any_accepts(const Variant& variant,
                                                     const std::vector<Batch>& batches,
                                                     const Target& target,
                                                     const ConfigFilter& keep = {}) {
  std::vector<KernelConfig> out;
  if (batches.empty()) return out;
  const std::vector<ConfigAxis> space = variant.space(batches.front(), target);
  std::vector<size_t> at(space.size(), 0);
  while (true) {
    KernelConfig config;
    for (size_t a = 0; a < space.size(); ++a) config.set(space[a].name, space[a].values[at[a]]);
    const bool kept = !keep || keep(config);
    for (size_t b = 0; kept && b < batches.size(); ++b) {
      if (variant.check(batches[b], config, target)) {
        out.push_back(config);
        break;
      }
    }
    size_t a = 0;
    while (a < space.size() && ++at[a] == space[a].values.size()) at[a++] = 0;
    if (a == space.size()) break;
  }
  return out;
}

// (batch index, config) pairs: every config that one of `batches` accepts, on up to `per_config`
// distinct batches that accept it, chosen by rotation as the header says.
inline std::vector<std::pair<size_t, KernelConfig>> rotated_config_cases(
    const Variant& variant, const std::vector<Batch>& batches, const Target& target,
    size_t per_config, const ConfigFilter& keep = {}) {
  std::vector<std::pair<size_t, KernelConfig>> out;
  const size_t n = batches.size();
  const std::vector<KernelConfig> configs = configs_any_accepts(variant, batches, target, keep);
  for (size_t k = 0; k < configs.size(); ++k) {
    std::vector<bool> taken(n, false);
    for (size_t j = 0; j < per_config && j < n; ++j) {
      // The rotation's batch, or the next one that accepts the config and is not taken yet.
      for (size_t step = 0; step < n; ++step) {
        const size_t b = (k * per_config + j + step) % n;
        if (!taken[b] && variant.check(batches[b], configs[k], target)) {
          taken[b] = true;
          out.push_back({b, configs[k]});
          break;
        }
      }
    }
  }
  return out;
}

}  // namespace attn::testing
