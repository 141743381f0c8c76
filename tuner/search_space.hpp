// SearchSpace: the configs of one variant worth trying on one batch and target: the cartesian
// product of the variant's axes (Variant::space, with command-line overrides applied), pruned by
// Variant::check() (the batch's features, then the config's rules) before anything is compiled.
// Configs keep the product's order (the first axis varies slowest), so an index into `configs` is
// stable for the same inputs.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/kernel_config.hpp"
#include "kernels/target.hpp"
#include "kernels/target_description.hpp"
#include "kernels/variant.hpp"
#include "workloads/batch.hpp"

namespace attn {

// "-a block_n=32,64": the values to try for one axis instead of the variant's own.
struct AxisOverride {
  std::string axis;
  std::vector<int64_t> values;
};
// Parses "axis=v1,v2,..."; throws UsageError naming the bad part.
AxisOverride parse_axis_override(const std::string& text);

struct SearchSpace {
  const Variant* variant = nullptr;
  Target target;
  std::vector<ConfigAxis> axes;       // after overrides
  size_t total = 0;                   // configs in the product, before pruning
  std::vector<KernelConfig> configs;  // the survivors, in product order
  // Configs refused by Variant::check(), counted by reason (the reason text as the variant gave
  // it).
  std::map<std::string, size_t> refusals;
  size_t pruned() const { return total - configs.size(); }
};

// The largest product build_space() enumerates; a bigger one is a usage error (narrow it with -a).
constexpr size_t kMaxSpaceConfigs = 1000000;

// Builds and prunes the space of `variant`. Overrides naming an axis the variant does not have are
// ignored here (the caller checks that each override matched some variant).
SearchSpace build_space(const Variant& variant, const Batch& batch, const Target& target,
                        const std::vector<AxisOverride>& overrides);
// That check: throws UsageError ("-a bogus: no matching variant has this axis") for an override
// whose axis none of `variants` has.
void require_known_axes(const std::vector<const Variant*>& variants, const Batch& batch,
                        const std::vector<AxisOverride>& overrides);

}  // namespace attn
