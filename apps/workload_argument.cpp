#include <sys/stat.h>

#include "apps/commands.hpp"
#include "base/bounded_file.hpp"
#include "base/errors.hpp"
#include "workloads/presets.hpp"
#include "workloads/suites.hpp"

namespace attn {

WorkloadSpec load_workload_argument(const std::string& argument) {
  // A file wins: a user's ./default.json must not be shadowed by the built-in preset. Anything
  // at that path counts (lstat: a FIFO, a directory, a dangling or looping link too), so that
  // the loader says what is wrong with it instead of "no such preset".
  struct stat info {};
  if (::lstat(argument.c_str(), &info) == 0) return load_workload_file(argument);
  if (preset_text(argument)) return load_preset(argument);
  // "SUITE#WORKLOAD": one workload of a suite (built-in or a file).
  if (auto reference = split_suite_reference(argument)) {
    return suite_workload(load_suite(reference->suite), reference->workload);
  }
  throw InputError(printable_path(argument),
                   {"no such file, and no preset of that name" + preset_hint(argument)});
}

}  // namespace attn
