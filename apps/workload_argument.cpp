#include <filesystem>

#include "apps/commands.hpp"
#include "base/errors.hpp"
#include "workloads/presets.hpp"

namespace attn {

WorkloadSpec load_workload_argument(const std::string& argument) {
  // A file wins: a user's ./default.json must not be shadowed by the built-in preset.
  std::error_code error;
  if (std::filesystem::exists(argument, error)) return load_workload_file(argument);
  if (preset_text(argument)) return load_preset(argument);
  std::string known;
  for (const auto& name : preset_names()) known += (known.empty() ? "" : ", ") + name;
  throw InputError(argument, {"no such file, and no preset of that name (presets: " + known + ")"});
}

}  // namespace attn
