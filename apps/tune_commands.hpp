// The subcommands of attn-tune, one file each (apps/cmd_tune_*.cpp), and what they share: the
// target a space is built for and the results database path.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

#include "apps/commands.hpp"
#include "kernels/target.hpp"

namespace attn {

void add_tune_space_command(CLI::App& app, Invocation& invocation);
void add_tune_compile_command(CLI::App& app, Invocation& invocation);
void add_tune_tune_command(CLI::App& app, Invocation& invocation);
void add_tune_plan_command(CLI::App& app, Invocation& invocation);
void add_tune_merge_command(CLI::App& app, Invocation& invocation);
void add_tune_export_command(CLI::App& app, Invocation& invocation);
void add_tune_db_command(CLI::App& app, Invocation& invocation);      // db info
void add_tune_worker_command(CLI::App& app, Invocation& invocation);  // hidden
void add_tune_compare_command(CLI::App& app, Invocation& invocation);
void add_tune_report_command(CLI::App& app, Invocation& invocation);

// --arch/--sm-count/--smem describe a GPU; without them the GPU present (--device) is used, and
// without one an H100-like target (sm_90a, 132 SMs, 232448 B of shared memory per block).
struct TargetArgs {
  std::optional<std::string> arch;
  std::optional<int> sm_count, smem;
  int device = 0;
  void add_to(CLI::App& cmd);
};
struct TargetChoice {
  Target cuda;       // what CUDA variants are pruned for
  std::string from;  // "device 0", "flags", or "default (no GPU: ...)"
};
// Finds the device only when no flag describes the target.
TargetChoice choose_cuda_target(const TargetArgs& args);
std::string describe(const Target& target);

// The arguments that name a space, the same in space, compile and tune: the workload (positional),
// --variant GLOB and the repeatable -a axis=v1,v2 overrides. Returns the workload option (required;
// tune relaxes it for --suite).
CLI::Option* add_space_selection(CLI::App& cmd, std::string& workload, std::string& variant,
                                 std::vector<std::string>& axes);

}  // namespace attn
