#include "apps/user_kernels.hpp"

#include <filesystem>
#include <set>

#include "base/errors.hpp"
#include "kernels/user/user_variant.hpp"

namespace attn {

void add_kernel_spec_flag(CLI::App* cmd, std::vector<std::string>& specs) {
  cmd->add_option("--kernel", specs,
                  "add your own CUDA kernel, described by a kernel spec file, as variant "
                  "user.<name> (repeatable; docs/user-kernels.md)");
}

Registry make_registry_with_user_kernels(const std::vector<std::string>& specs) {
  Registry registry = make_registry();
  std::set<std::string> names;
  for (const std::string& path : specs) {
    UserKernelSpec spec = load_user_kernel_spec(path);
    if (!names.insert(spec.name).second) {
      throw UsageError("--kernel " + path + ": another --kernel spec is also named '" + spec.name +
                       "'; variant names must differ");
    }
    registry.add(make_user_variant(std::move(spec)));
  }
  return registry;
}

std::vector<std::string> absolute_spec_paths(const std::vector<std::string>& specs) {
  std::vector<std::string> out;
  for (const std::string& path : specs) out.push_back(std::filesystem::absolute(path).string());
  return out;
}

}  // namespace attn
