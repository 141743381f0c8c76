#include "apps/suite_workloads.hpp"

#include "workloads/mask_checks.hpp"

namespace attn {

Suite checked_suite(const std::string& argument, MemoryUse use,
                    const std::string& max_host_memory) {
  Suite suite = load_suite_selection(argument);
  for (const WorkloadSpec& spec : suite.workloads) {
    check_mask_limits(spec);
    check_host_memory(spec, "workload " + spec.name, use, max_host_memory);
  }
  return suite;
}

void print_suite_progress(std::ostream& out, const std::string& tool, const std::string& suite,
                          size_t index, size_t count) {
  out << tool << ": suite " << suite << ": workload " << index + 1 << " of " << count << "\n";
}

}  // namespace attn
