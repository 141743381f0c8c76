// attn-tune: sweeps the tunable configs of kernel variants for a workload (space, compile, tune,
// plan, merge), and reads the results back (export, db info, compare, report).
// Exit codes: docs/exit-codes.md (base/exit_codes.hpp).
#include "apps/cli_main.hpp"
#include "apps/completion.hpp"
#include "apps/tune_commands.hpp"
#include "base/build_info.hpp"

int main(int argc, char** argv) {
  using namespace attn;
  Invocation invocation;
  invocation.argv.assign(argv, argv + argc);
  const std::vector<std::string> args(argv + 1, argv + argc);

  CLI::App app{"attn-tune: search the configs of attention kernel variants for a workload",
               "attn-tune"};
  app.set_version_flag("--version", "attn-tune " + tool_version() + " (" + git_commit() + ")");
  app.set_help_all_flag("--help-all", "Print this help and every command's help, then exit");
  app.require_subcommand(1);
  add_tune_space_command(app, invocation);
  add_tune_compile_command(app, invocation);
  add_tune_tune_command(app, invocation);
  add_tune_plan_command(app, invocation);
  add_tune_merge_command(app, invocation);
  add_tune_compare_command(app, invocation);
  add_tune_report_command(app, invocation);
  add_tune_export_command(app, invocation);
  add_tune_db_command(app, invocation);
  add_tune_worker_command(app, invocation);
  add_completion_command(app, "attn-tune", invocation.exit_code);
  return run_cli(app, args, "attn-tune", invocation);
}
