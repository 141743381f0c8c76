// The subcommands of attn-bench, one file each. Each add_* registers its options on the app and a
// callback that does the work; the callback stores the process exit code in *exit_code.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "results/records.hpp"
#include "workloads/batch.hpp"
#include "workloads/workload_spec.hpp"

namespace attn {

struct Invocation {
  std::vector<std::string> argv;  // for the run record: the exact command line
  // The --benchmark_* arguments, taken out of argv before CLI11 parses it (attn-bench run hands
  // them to Google Benchmark; other commands refuse them).
  std::vector<std::string> benchmark_args;
  int exit_code = 0;
};

void add_run_command(CLI::App& app, Invocation& invocation);
void add_list_command(CLI::App& app, Invocation& invocation);
void add_devices_command(CLI::App& app, Invocation& invocation);
void add_calibrate_command(CLI::App& app, Invocation& invocation);
void add_workload_command(CLI::App& app, Invocation& invocation);
void add_peers_command(CLI::App& app, Invocation& invocation);
void add_kernel_command(CLI::App& app, Invocation& invocation);

// The spec a positional workload argument names: a file when one exists at that path, else a
// built-in preset, else "SUITE#WORKLOAD" (one workload of a suite file or built-in suite). None of
// these is an InputError (exit 3) that lists the presets.
WorkloadSpec load_workload_argument(const std::string& argument);

// argv joined, each argument single-quoted when it holds anything but [A-Za-z0-9_./=:,+-].
std::string quote_command_line(const std::vector<std::string>& argv);

// The run record a command that writes the database begins with: `tool` ("attn-bench run"), the
// build's version, commit and type, the command line quoted, the host and the time now.
RunRecord run_record(const std::string& tool, const Invocation& invocation);

}  // namespace attn
