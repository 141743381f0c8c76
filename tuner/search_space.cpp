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

Target described_cuda_target(const TargetDescription& d) {
  // sm_<major><minor>[a]: the last digit is the minor version, the rest the major.
  std::string digits;
  const std::string arch = d.arch;
  bool ok = arch.rfind("sm_", 0) == 0;
  size_t i = 3;
  while (ok && i < arch.size() && std::isdigit(static_cast<unsigned char>(arch[i]))) {
    digits += arch[i++];
  }
  ok = ok && digits.size() >= 2 && (i == arch.size() || (arch[i] == 'a' && i + 1 == arch.size()));
  if (!ok)
    throw UsageError("--arch '" + arch + "': expected sm_<major><minor>, e.g. sm_90a, sm_80");
  if (d.sm_count <= 0) throw UsageError("--sm-count must be positive");
  if (d.max_shared_per_block <= 0) throw UsageError("--smem must be positive (bytes per block)");
  Target t;
  t.backend = Backend::cuda;
  t.arch = arch;
  t.cc_major = std::stoi(digits.substr(0, digits.size() - 1));
  t.cc_minor = digits.back() - '0';
  t.sm_count = d.sm_count;
  t.max_shared_per_block = d.max_shared_per_block;
  t.device_name = d.name;
  return t;
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
