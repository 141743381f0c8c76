// --suite NAME on the commands that run a workload (attn-bench run and peers, attn-tune tune): the
// suite loaded and every one of its workloads checked (mask limits, the host-memory budget) before
// any GPU work or large allocation, and the line each names a workload by as the suite goes on.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>

#include "apps/memory_budget.hpp"
#include "workloads/suites.hpp"

namespace attn {

// The suite `argument` names (a suite file or a built-in suite, or SUITE#GLOB for the workloads
// whose names match; workloads/suites.hpp, load_suite_selection), each
// workload checked as `use` holds it under the budget of --max-host-memory `max_host_memory`.
// UsageError for an unknown suite, InputError for a bad one or a workload over the budget.
Suite checked_suite(const std::string& argument, MemoryUse use, const std::string& max_host_memory);

// "attn-bench: suite NAME: workload 2 of 5", before the index-th of `count` workloads (from 0)
// runs.
void print_suite_progress(std::ostream& out, const std::string& tool, const std::string& suite,
                          size_t index, size_t count);

}  // namespace attn
