// attn-tune export: the best config per (device, family, workload bucket) of a results database,
// as JSON or as a self-contained C++17 header with select(). docs/export.md.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include "apps/database_path.hpp"
#include "apps/tune_commands.hpp"
#include "base/build_info.hpp"
#include "base/errors.hpp"
#include "results/export_render.hpp"
#include "results/export_table.hpp"
#include "results/store.hpp"

namespace attn {

namespace {

struct ExportArgs {
  std::string db;
  std::vector<std::string> devices;
  bool all_devices = false;
  std::vector<std::string> families;
  std::string variant;
  std::string format = "json";
  std::string output;
  std::string namespace_name = "attn_tuned";
  bool include_unstable = false;
};

// Writes next to the target and renames, so a reader never sees half a file and a failed export
// leaves the old one.
void write_file(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) {
      std::error_code ignored;
      std::filesystem::remove(temporary, ignored);
      throw EnvironmentError("cannot write '" + temporary + "'");
    }
  }
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  if (error) {
    std::filesystem::remove(temporary, error);
    throw EnvironmentError("cannot write '" + path + "': " + error.message());
  }
}

int export_tables(const ExportArgs& args, const Invocation& invocation) {
  if (args.format != "json" && args.format != "cpp") {
    throw UsageError("--format must be json or cpp, got '" + args.format + "'");
  }
  if (!valid_cpp_namespace(args.namespace_name)) {
    throw UsageError("--namespace '" + args.namespace_name +
                     "' is not a C++ namespace name (identifiers joined by ::)");
  }
  const std::string path = results_database_path(args.db);
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) {
    throw UsageError("'" + path + "': no such database (--db, $ATTN_DB, else ./attn-bench.db)");
  }
  const Store store(path, StoreAccess::read_only);
  warn_of_unread_changes(store.opening());
  ExportOptions options;
  options.devices = args.devices;
  options.all_devices = args.all_devices;
  options.families = args.families;
  options.variant_glob = args.variant;
  options.include_unstable = args.include_unstable;
  const ExportResult result = build_export(store, options);

  const ExportProvenance provenance{tool_version(), git_commit(),
                                    quote_command_line(invocation.argv), utc_timestamp_now()};
  const std::string text = args.format == "json"
                               ? export_json(result, provenance).dump(2) + "\n"
                               : export_cpp_header(result, provenance, args.namespace_name);
  if (args.output.empty() || args.output == "-") {
    std::cout << text;
  } else {
    write_file(args.output, text);
  }

  // What was exported, for whom, and what is missing: on stderr, so stdout stays the document.
  for (const SkippedWorkload& w : result.skipped) {
    std::cerr << "attn-tune: skipped workload " << w.name << ": " << w.reason << "\n";
  }
  for (const ExportDeviceTable& table : result.tables) {
    int partial = 0;
    for (const ExportEntry& e : table.entries) partial += e.partial;
    std::cerr << "attn-tune: " << table.entries.size() << " buckets for "
              << describe_export_device(table.device) << " from " << table.measurements_used
              << " measurements";
    if (table.unstable_left_out > 0) {
      std::cerr << " (" << table.unstable_left_out
                << " unstable ones left out; --include-unstable takes them)";
    }
    if (partial > 0) {
      std::cerr << "; " << partial << " partial (no config measured on every workload)";
    }
    std::cerr << "\n";
    for (const std::string& line : coverage_lines(table)) std::cerr << "  " << line << "\n";
  }
  if (!args.output.empty() && args.output != "-") {
    std::cerr << "attn-tune: wrote " << args.output << "\n";
  }
  return 0;
}

}  // namespace

void add_tune_export_command(CLI::App& app, Invocation& invocation) {
  auto args = std::make_shared<ExportArgs>();
  CLI::App* cmd = app.add_subcommand(
      "export",
      "Best config per (device, family, workload bucket) as JSON or a C++ header with select()");
  cmd->add_option("--db", args->db, "SQLite database (default: $ATTN_DB or ./attn-bench.db)");
  CLI::Option* device = cmd->add_option(
      "--device", args->devices,
      "the device to export: part of its name, its UUID or fingerprint (repeatable); needed when "
      "the database holds several");
  cmd->add_flag("--all-devices", args->all_devices, "one table per device")->excludes(device);
  cmd->add_option("--family", args->families, "only this kernel family (repeatable)");
  cmd->add_option("--variant", args->variant, "only variants matching this glob");
  cmd->add_option("--format", args->format, "json (default) or cpp");
  cmd->add_option("-o,--output", args->output, "write here instead of standard output");
  cmd->add_option("--namespace", args->namespace_name,
                  "namespace of the C++ header (default attn_tuned)");
  cmd->add_flag("--include-unstable", args->include_unstable,
                "also use passed measurements flagged unstable (left out by default)");
  cmd->callback([args, &invocation] { invocation.exit_code = export_tables(*args, invocation); });
}

}  // namespace attn
