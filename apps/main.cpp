// attn-bench: runs, verifies and times attention kernels over a paged KV cache.
// Exit codes: docs/exit-codes.md (base/exit_codes.hpp).
#include <iostream>

#include "apps/cli_main.hpp"
#include "apps/commands.hpp"
#include "apps/completion.hpp"
#include "base/build_info.hpp"
#include "base/errors.hpp"

int main(int argc, char** argv) {
  using namespace attn;
  Invocation invocation;
  invocation.argv.assign(argv, argv + argc);
  std::vector<std::string> cli_args;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    (arg.rfind("--benchmark_", 0) == 0 ? invocation.benchmark_args : cli_args).push_back(arg);
  }

  CLI::App app{"attn-bench: benchmark and verify attention kernels that read a paged KV cache",
               "attn-bench"};
  app.set_version_flag("--version", "attn-bench " + tool_version() + " (" + git_commit() + ")");
  app.set_help_all_flag("--help-all", "Print this help and every command's help, then exit");
  app.require_subcommand(1);
  add_run_command(app, invocation);
  add_list_command(app, invocation);
  add_devices_command(app, invocation);
  add_calibrate_command(app, invocation);
  add_workload_command(app, invocation);
  add_peers_command(app, invocation);
  add_kernel_command(app, invocation);
  add_completion_command(app, "attn-bench", invocation.exit_code);

  // Checked before parsing: a subcommand's callback runs inside parse().
  if (!invocation.benchmark_args.empty() && (cli_args.empty() || cli_args.front() != "run")) {
    std::cerr << "attn-bench: usage: '" << invocation.benchmark_args.front()
              << "': Google Benchmark flags apply to `attn-bench run` only\n";
    return to_int(ExitCode::usage);
  }
  return run_cli(app, cli_args, "attn-bench", invocation);
}
