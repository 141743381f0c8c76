// The host-memory budget of the commands that build a workload's batch (run, tune, peers and
// workload validate/show/dump): what the command will hold, estimated from the spec
// (workloads/memory_estimate.hpp), is checked against the budget before anything is allocated
// and refused with the invalid-input exit code above it. The budget is half of the host's memory,
// at most 16 GiB (base/host_memory.hpp), or --max-host-memory SIZE.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "workloads/memory_estimate.hpp"
#include "workloads/workload_spec.hpp"

namespace attn {

// What a command holds at once, as far as the estimate knows.
enum class MemoryUse {
  batch,    // the batch alone: workload show, attn-tune space and compile
  run,      // attn-bench run and attn-tune tune (per evaluating process), GPU inputs too
  run_cpu,  // the same on the CPU backend (no padded block table)
  dump,     // workload dump --no-reference
  dump_with_reference,  // workload dump
  peers,                // attn-bench peers: a run and a dump with the reference output
};

// The parts of the estimate that `use` holds, largest first, named for the message.
std::vector<std::pair<std::string, int64_t>> host_memory_parts(const BatchMemory& memory,
                                                               MemoryUse use);
int64_t host_memory_total(const std::vector<std::pair<std::string, int64_t>>& parts);

// --max-host-memory on `command`, into `text` (empty: the default budget).
void add_max_host_memory_flag(CLI::App* command, std::string& text);

// The budget: `flag_text` parsed (UsageError when it is not a size), or the default.
int64_t host_memory_budget(const std::string& flag_text);

// Estimates what `use` holds for `spec` (times `processes`, for the tuner's worker processes,
// plus the batch of the process that starts them) and throws InputError, naming `source`, the
// estimate, its largest parts, the budget and the flag, when it is over the budget. Returns the
// estimate.
int64_t check_host_memory(const WorkloadSpec& spec, const std::string& source, MemoryUse use,
                          const std::string& flag_text, int processes = 1);

}  // namespace attn
