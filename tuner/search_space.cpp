#include "tuner/search_space.hpp"

#include <sstream>

#include "base/errors.hpp"

namespace attn {

AxisOverride parse_axis_override(const std::string& text) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    throw UsageError("-a '" + text + "': expected axis=value1,value2,...");
  }
  AxisOverride out;
  out.axis = text.substr(0, eq);
  std::istringstream in(text.substr(eq + 1));
  std::string part;
  while (std::getline(in, part, ',')) {
    size_t used = 0;
    long long value = 0;
    try {
      value = std::stoll(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (part.empty() || used != part.size()) {
      throw UsageError("-a '" + text + "': value '" + part + "' of " + out.axis +
                       " is not an integer");
    }
    for (int64_t seen : out.values) {
      if (seen == value) throw UsageError("-a '" + text + "': value " + part + " twice");
    }
    out.values.push_back(value);
  }
  if (out.values.empty()) throw UsageError("-a '" + text + "': no values");
  return out;
}

SearchSpace build_space(const Variant& variant, const Batch& batch, const Target& target,
                        const std::vector<AxisOverride>& overrides) {
  SearchSpace space;
  space.variant = &variant;
  space.target = target;
  space.axes = variant.space(batch, target);
  for (ConfigAxis& axis : space.axes) {
    for (const AxisOverride& o : overrides) {
      if (o.axis == axis.name) axis.values = o.values;
    }
  }
  size_t total = 1;
  for (const ConfigAxis& axis : space.axes) {
    if (axis.values.empty()) {
      total = 0;
      break;
    }
    if (total > kMaxSpaceConfigs / axis.values.size()) {
      throw UsageError(variant.name() + ": the space has more than " +
                       std::to_string(kMaxSpaceConfigs) + " configs; narrow it with -a axis=...");
    }
    total *= axis.values.size();
  }
  space.total = total;
  const BatchFeatures used = batch_features(batch);
  // Odometer over the axes, the last one fastest.
  std::vector<size_t> digit(space.axes.size(), 0);
  for (size_t n = 0; n < total; ++n) {
    KernelConfig config;
    for (size_t a = 0; a < space.axes.size(); ++a) {
      config.set(space.axes[a].name, space.axes[a].values[digit[a]]);
    }
    if (Support s = variant.check(batch, used, config, target); s) {
      space.configs.push_back(std::move(config));
    } else {
      ++space.refusals[s.reason];
    }
    for (size_t a = space.axes.size(); a-- > 0;) {
      if (++digit[a] < space.axes[a].values.size()) break;
      digit[a] = 0;
    }
  }
  return space;
}

void require_known_axes(const std::vector<const Variant*>& variants, const Batch& batch,
                        const std::vector<AxisOverride>& overrides) {
  for (const AxisOverride& o : overrides) {
    bool found = false;
    for (const Variant* v : variants) {
      for (const ConfigAxis& axis : v->space(batch, Target::cpu())) found |= axis.name == o.axis;
    }
    if (!found) throw UsageError("-a " + o.axis + ": no matching variant has this axis");
  }
}

}  // namespace attn
