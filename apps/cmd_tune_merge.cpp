// attn-tune merge A.db B.db ... --into all.db: copy every row of the inputs that the output lacks
// (the per-shard databases of a job array into one). Merging the same input twice adds nothing.
#include <filesystem>
#include <iostream>
#include <memory>

#include "apps/tune_commands.hpp"
#include "base/errors.hpp"
#include "results/store.hpp"
#include "results/table.hpp"

namespace attn {

namespace {

struct MergeArgs {
  std::vector<std::string> inputs;
  std::string into;
};

int merge(const MergeArgs& args) {
  namespace fs = std::filesystem;
  for (const std::string& input : args.inputs) {
    std::error_code error;
    if (!fs::is_regular_file(input, error)) throw UsageError("'" + input + "': no such database");
    if (fs::exists(args.into, error) && fs::equivalent(input, args.into, error)) {
      throw UsageError("'" + input + "' is the --into database itself");
    }
  }
  Store into(args.into);
  for (const std::string& input : args.inputs) {
    const MergeCounts c = into.merge_from(input);
    std::cout << format(
        "%s: %lld runs, %lld measurements (%lld samples), %lld attempts, %lld winners, %lld "
        "devices, %lld workloads, %lld ceilings, %lld repeat checks added\n",
        input.c_str(), (long long)c.runs, (long long)c.measurements, (long long)c.samples,
        (long long)c.attempts, (long long)c.winners, (long long)c.devices, (long long)c.workloads,
        (long long)c.ceilings, (long long)c.repeat_checks);
  }
  const StoreCounts total = into.counts();
  std::cout << format("%s: %lld runs, %lld measurements\n", args.into.c_str(),
                      (long long)total.runs, (long long)total.measurements);
  return 0;
}

}  // namespace

void add_tune_merge_command(CLI::App& app, Invocation& invocation) {
  auto args = std::make_shared<MergeArgs>();
  CLI::App* cmd = app.add_subcommand(
      "merge", "Combine results databases (e.g. one per shard) into one, without duplicates");
  cmd->add_option("inputs", args->inputs, "databases to copy from")->required();
  cmd->add_option("--into", args->into, "the database to copy into (created if missing)")
      ->required();
  cmd->callback([args, &invocation] { invocation.exit_code = merge(*args); });
}

}  // namespace attn
