// attn-tune compare --device A --device B | --run ID --run ID | --variant A --variant B [--device
// D]
// [--workload GLOB] [--format markdown|json] [-o FILE] [--fail-on-regression [--threshold PCT]]:
// the two sides on the workloads both measured (results/compare.hpp), as markdown or JSON. With
// --fail-on-regression the exit code is 6 (regression) when B is slower than A by more than the
// threshold (default 2%) over the whole speed-up interval on some workload, so that a downstream
// CI can gate on it.
#include <fstream>
#include <iostream>
#include <memory>

#include "apps/database_path.hpp"
#include "apps/tune_commands.hpp"
#include "base/errors.hpp"
#include "results/compare.hpp"
#include "results/compare_render.hpp"
#include "results/store.hpp"
#include "results/table.hpp"

namespace attn {

namespace {

struct CompareArgs {
  std::string db;
  std::vector<std::string> devices, variants;
  std::vector<int64_t> runs;
  std::string workload;
  std::string format = "markdown";
  std::string output;
  bool fail_on_regression = false;
  double threshold_pct = kDefaultRegressionThreshold * 100;
};

int compare_command(const CompareArgs& args) {
  if (args.format != "markdown" && args.format != "json") {
    throw UsageError("--format must be 'markdown' or 'json', got '" + args.format + "'");
  }
  if (!(args.threshold_pct >= 0)) throw UsageError("--threshold must be >= 0 (percent)");
  const Store store(existing_database_path(args.db), StoreAccess::read_only);
  warn_of_unread_changes(store.opening());
  CompareRequest request;
  request.devices = args.devices;
  request.runs = args.runs;
  request.variants = args.variants;
  request.workload = args.workload;
  request.threshold = args.threshold_pct / 100;
  const CompareResult result = compare(store, request);

  const std::string text =
      args.format == "json" ? compare_json(result).dump(2) + "\n" : compare_markdown(result);
  const CompareSummary& s = result.summary;
  if (args.output.empty()) {
    std::cout << text;
  } else {
    std::ofstream out(args.output, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) throw EnvironmentError("cannot write '" + args.output + "'");
    std::cout << format(
        "%zu workloads: %zu FASTER, %zu SAME, %zu SLOWER, %zu regressions; wrote %s\n",
        result.rows.size(), s.faster, s.same, s.slower, s.regressions, args.output.c_str());
  }
  if (args.fail_on_regression && s.regressions > 0) {
    std::string names;
    for (const WorkloadComparison& r : result.rows) {
      if (r.regression) names += (names.empty() ? "" : ", ") + r.workload;
    }
    std::cerr << format(
        "attn-tune: compare: %zu regressions (B SLOWER than A by more than %.1f%% over the "
        "whole speed-up interval): %s\n",
        s.regressions, args.threshold_pct, names.c_str());
    return to_int(ExitCode::regression);
  }
  return 0;
}

}  // namespace

void add_tune_compare_command(CLI::App& app, Invocation& invocation) {
  auto args = std::make_shared<CompareArgs>();
  CLI::App* cmd = app.add_subcommand(
      "compare",
      "Compare two devices, two runs or two variants on the workloads both measured: medians, "
      "speed-up with a 95% interval, SAME/FASTER/SLOWER, fractions of ceiling, best configs, "
      "transfer regret, rank correlation, roofline prediction");
  cmd->add_option("--db", args->db, "results database (default $ATTN_DB, else ./attn-bench.db)");
  cmd->add_option("--device", args->devices,
                  "a device: part of its name, a fingerprint or UUID (or a prefix); twice to "
                  "compare two devices, once with two --variant");
  cmd->add_option("--run", args->runs, "a run id; twice to compare two runs");
  cmd->add_option("--variant", args->variants,
                  "a variant glob; twice to compare two variants on one device, once to narrow "
                  "the other modes");
  cmd->add_option("--workload", args->workload, "only workloads whose name matches this glob");
  cmd->add_option("--format", args->format, "markdown (default) or json");
  cmd->add_option("-o,--output", args->output, "write to this file instead of stdout");
  cmd->add_flag("--fail-on-regression", args->fail_on_regression,
                "exit 6 when B is slower than A by more than --threshold on some workload over "
                "the whole 95% speed-up interval");
  cmd->add_option("--threshold", args->threshold_pct,
                  "a regression: B slower than A by more than this percent over the whole "
                  "speed-up interval (default 2); slower by less is SLOWER, not a regression");
  cmd->callback([args, &invocation] { invocation.exit_code = compare_command(*args); });
}

}  // namespace attn
