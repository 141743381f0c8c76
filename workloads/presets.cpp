#include "workloads/presets.hpp"

#include <algorithm>

#include "base/errors.hpp"
#include "base/nearest_name.hpp"

namespace attn {

namespace {

constexpr std::string_view kPresetDir = "workloads/presets/";
constexpr std::string_view kPresetExtension = ".json";

// "workloads/presets/default.json" -> "default"; nullopt for names outside that pattern.
std::optional<std::string> stem(std::string_view path) {
  if (path.size() <= kPresetDir.size() + kPresetExtension.size()) return std::nullopt;
  if (path.substr(0, kPresetDir.size()) != kPresetDir) return std::nullopt;
  if (path.substr(path.size() - kPresetExtension.size()) != kPresetExtension) return std::nullopt;
  path.remove_prefix(kPresetDir.size());
  path.remove_suffix(kPresetExtension.size());
  return std::string(path);
}

}  // namespace

std::string preset_hint(const std::string& name) {
  const std::optional<std::string> nearest = nearest_name(name, preset_names(), 3);
  return (nearest ? "; did you mean \"" + *nearest + "\"?" : std::string()) +
         " (`attn-bench list` lists the presets)";
}

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (size_t i = 0; i < kWorkloadPresets_count; ++i) {
    if (auto name = stem(kWorkloadPresets[i].name)) names.push_back(*name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::optional<std::string_view> preset_text(const std::string& name) {
  for (size_t i = 0; i < kWorkloadPresets_count; ++i) {
    if (stem(kWorkloadPresets[i].name) == name) return kWorkloadPresets[i].text();
  }
  return std::nullopt;
}

WorkloadSpec load_preset(const std::string& name) {
  std::optional<std::string_view> text = preset_text(name);
  if (!text) throw UsageError("unknown workload preset \"" + name + "\"" + preset_hint(name));
  return parse_workload(*text, "preset:" + name);
}

}  // namespace attn
