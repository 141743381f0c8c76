#include "workloads/presets.hpp"

#include "base/errors.hpp"
#include "base/nearest_name.hpp"

namespace attn {

namespace {

EmbeddedNamedFiles presets() {
  return {kWorkloadPresets, kWorkloadPresets_count, "workloads/presets/", ".json"};
}

}  // namespace

std::string preset_hint(const std::string& name) {
  const std::optional<std::string> nearest = nearest_name(name, preset_names(), 3);
  return (nearest ? "; did you mean \"" + *nearest + "\"?" : std::string()) +
         " (`attn-bench list` lists the presets)";
}

std::vector<std::string> preset_names() {
  return presets().names();
}

std::optional<std::string_view> preset_text(const std::string& name) {
  return presets().text(name);
}

WorkloadSpec load_preset(const std::string& name) {
  std::optional<std::string_view> text = preset_text(name);
  if (!text) throw UsageError("unknown workload preset \"" + name + "\"" + preset_hint(name));
  return parse_workload(*text, "preset:" + name);
}

}  // namespace attn
