#include "kernels/config_axes.hpp"

#include <algorithm>
#include <set>

#include "base/errors.hpp"
#include "kernels/variant.hpp"

namespace attn {

ConfigAxes::ConfigAxes(std::initializer_list<AxisSpec> axes) : axes_(axes) {
  std::set<std::string> seen;
  for (const AxisSpec& axis : axes_) {
    ATTN_ASSERT(seen.insert(axis.name).second, "axis declared twice: " + axis.name);
    ATTN_ASSERT(
        std::find(axis.values.begin(), axis.values.end(), axis.default_value) != axis.values.end(),
        "the default of axis " + axis.name + " is not one of its values");
  }
}

std::vector<std::string> ConfigAxes::names() const {
  std::vector<std::string> out;
  for (const AxisSpec& axis : axes_) out.push_back(axis.name);
  return out;
}

std::vector<ConfigAxis> ConfigAxes::space() const {
  std::vector<ConfigAxis> out;
  for (const AxisSpec& axis : axes_) out.push_back({axis.name, axis.values, axis.help});
  return out;
}

KernelConfig ConfigAxes::defaults() const {
  KernelConfig config;
  for (const AxisSpec& axis : axes_) config.set(axis.name, axis.default_value);
  return config;
}

Support ConfigAxes::has_exactly(const KernelConfig& config, const std::string& variant) const {
  return config_has_exactly(config, names(), variant);
}

}  // namespace attn
