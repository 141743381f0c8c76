// attn-tune report -o DIR [--db PATH] [--device D ...] [--compare-devices A,B] [--variant GLOB]
// [--workload GLOB] [--axes x,y] [--threshold PCT] [--no-plots] [--gnuplot PATH]: writes
// DIR/report.md and one gnuplot script per plot (results/report.hpp), then renders each script to
// DIR/NAME.svg with gnuplot. Without gnuplot (or when it fails) the markdown and scripts are still
// written, the report says plainly that its plots were not rendered and how to render them, and
// the exit code is 4 (environment); --no-plots asks for that on purpose and exits 0.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include "apps/database_path.hpp"
#include "apps/tune_commands.hpp"
#include "base/build_info.hpp"
#include "base/errors.hpp"
#include "results/records.hpp"
#include "results/report.hpp"
#include "results/store.hpp"
#include "results/table.hpp"

extern char** environ;

namespace attn {

namespace {

namespace fs = std::filesystem;

struct ReportArgs {
  std::string db, output;
  std::vector<std::string> devices, compare_devices, axes;
  std::string variant, workload;
  double threshold_pct = kDefaultRegressionThreshold * 100;
  bool no_plots = false;
  std::string gnuplot = "gnuplot";
};

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) throw EnvironmentError("cannot write '" + path.string() + "'");
}

// The executable `name` names: a path when it holds a '/', else the first match on $PATH.
std::optional<std::string> find_executable(const std::string& name) {
  if (name.empty()) return std::nullopt;
  if (name.find('/') != std::string::npos) {
    if (::access(name.c_str(), X_OK) == 0) return name;
    return std::nullopt;
  }
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  size_t start = 0;
  while (start <= dirs.size()) {
    const size_t end = std::min(dirs.find(':', start), dirs.size());
    const std::string dir = dirs.substr(start, end - start);
    const std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0 && !fs::is_directory(candidate)) return candidate;
    start = end + 1;
  }
  return std::nullopt;
}

// Runs `gnuplot script` in `dir` (the scripts name their SVGs relative to it), its output on our
// stderr. Returns "" on success, else what went wrong.
std::string run_gnuplot(const std::string& gnuplot, const fs::path& dir,
                        const std::string& script) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, STDOUT_FILENO);
  posix_spawn_file_actions_addchdir_np(&actions, dir.c_str());
  std::vector<std::string> args = {gnuplot, script};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, gnuplot.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return "cannot start " + gnuplot + ": " + std::strerror(rc);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return "waitpid failed: " + std::string(std::strerror(errno));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  if (WIFEXITED(status))
    return script + ": gnuplot exited with " + std::to_string(WEXITSTATUS(status));
  return script + ": gnuplot was killed by signal " + std::to_string(WTERMSIG(status));
}

int report_command(const ReportArgs& args) {
  if (args.output.empty()) throw UsageError("-o DIR is required");
  if (!(args.threshold_pct >= 0)) throw UsageError("--threshold must be >= 0 (percent)");
  const std::string db = existing_database_path(args.db);
  const Store store(db, StoreAccess::read_only);
  warn_of_unread_changes(store.opening());
  ReportRequest request;
  request.devices = args.devices;
  request.compare_devices = args.compare_devices;
  request.variant = args.variant;
  request.workload = args.workload;
  request.axes = args.axes;
  request.threshold = args.threshold_pct / 100;
  request.database = db;
  request.generated_at = utc_timestamp_now();
  request.tool = "attn-tune " + tool_version() + " (" + git_commit() + ")";
  const Report report = build_report(store, request);

  const fs::path dir = args.output;
  std::error_code error;
  fs::create_directories(dir, error);
  if (error || !fs::is_directory(dir)) {
    throw EnvironmentError("cannot create the report folder '" + dir.string() + "'" +
                           (error ? ": " + error.message() : std::string()));
  }
  for (const ReportFile& script : report.scripts) write_file(dir / script.name, script.text);

  const std::string render = "cd " + quote_command_line({dir.string()}) + " && gnuplot *.gp";
  const std::string how = "To render them: `" + render +
                          "` (each script writes the SVG of its name; Debian and Ubuntu: "
                          "`apt-get install gnuplot-nox`).";
  std::string note, failure;
  if (args.no_plots) {
    note =
        "> **Plots were not rendered** (`--no-plots`): the images below are missing until "
        "their gnuplot scripts run. " +
        how + "\n";
  } else if (const std::optional<std::string> gnuplot = find_executable(args.gnuplot)) {
    for (const ReportFile& script : report.scripts) {
      const std::string problem = run_gnuplot(*gnuplot, dir, script.name);
      if (!problem.empty()) {
        failure = problem;
        break;
      }
    }
    if (!failure.empty()) {
      note = "> **Plots were not rendered**: " + failure + ". " + how + "\n";
    }
  } else {
    failure = "gnuplot was not found ('" + args.gnuplot + "'" +
              (args.gnuplot.find('/') == std::string::npos ? " on $PATH" : "") + ")";
    note = "> **Plots were not rendered**: " + failure + ". " + how + "\n";
  }
  write_file(dir / "report.md", report.markdown(note));

  if (!failure.empty()) {
    std::cerr << "attn-tune: environment: plots not rendered: " << failure << "; "
              << (dir / "report.md").string() << " and " << report.scripts.size()
              << " gnuplot scripts were written: install gnuplot and run `" << render
              << "`, or pass --no-plots\n";
    return to_int(ExitCode::environment);
  }
  std::cout << "wrote " << (dir / "report.md").string() << " and " << report.scripts.size()
            << " gnuplot scripts"
            << (args.no_plots ? " (not rendered: --no-plots)" : ", rendered to SVG") << "\n";
  return 0;
}

}  // namespace

void add_tune_report_command(CLI::App& app, Invocation& invocation) {
  auto args = std::make_shared<ReportArgs>();
  CLI::App* cmd = app.add_subcommand(
      "report",
      "Write a markdown report with plots: per device its fingerprint, ceilings, a roofline "
      "chart and heatmaps of sweeps; a comparison of two devices; the runs' provenance");
  cmd->add_option("-o,--output", args->output, "folder for report.md, *.gp and *.svg")->required();
  cmd->add_option("--db", args->db, "results database (default $ATTN_DB, else ./attn-bench.db)");
  cmd->add_option("--device", args->devices,
                  "only this device (part of its name, a fingerprint or UUID, or a prefix); "
                  "repeatable; default: every device with results or ceilings");
  cmd->add_option("--compare-devices", args->compare_devices,
                  "A,B: add a comparison of two devices (as attn-tune compare) with a bar chart")
      ->delimiter(',')
      ->expected(2);
  cmd->add_option("--variant", args->variant, "only variants matching this glob");
  cmd->add_option("--workload", args->workload, "only workloads whose name matches this glob");
  cmd->add_option("--axes", args->axes,
                  "x,y: the config axes of the heatmaps (default: the two with most values)")
      ->delimiter(',')
      ->expected(2);
  cmd->add_option("--threshold", args->threshold_pct,
                  "the comparison's regression threshold, percent (default 2)");
  cmd->add_flag("--no-plots", args->no_plots,
                "write the markdown and the gnuplot scripts without running gnuplot");
  cmd->add_option("--gnuplot", args->gnuplot, "the gnuplot to run (default: gnuplot on $PATH)");
  cmd->callback([args, &invocation] { invocation.exit_code = report_command(*args); });
}

}  // namespace attn
