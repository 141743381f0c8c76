// attn-tune merge A.db B.db ... --into all.db [--winners [--variant GLOB]]: copy every row of the
// inputs that the output lacks (the per-shard databases of a job array into one). Merging the same
// input twice adds nothing. --winners then chooses and prints the winners over everything the
// output holds for the inputs' workloads and device models, measuring nothing
// (tuner/stored_winners.hpp).
#include <filesystem>
#include <iostream>
#include <memory>

#include "apps/tune_commands.hpp"
#include "base/errors.hpp"
#include "results/store.hpp"
#include "results/table.hpp"
#include "tuner/stored_winners.hpp"

namespace attn {

namespace {

struct MergeArgs {
  std::vector<std::string> inputs;
  std::string into;
  bool winners = false;
  std::string variant;  // of the winners; empty: every variant but peers
};

void print_winners(const std::vector<StoredWinners>& all, std::ostream& out) {
  if (all.empty()) {
    out << "\nwinners   none: the inputs hold no passed confirm result\n";
    return;
  }
  for (const StoredWinners& w : all) {
    out << "\nwinners   " << w.workload_name << " (" << w.workload_hash.substr(0, 12) << ") on "
        << w.device_name
        << (w.devices > 1 ? format(" (%zu boards of this model pooled)", w.devices) : std::string())
        << ", from the latest passed confirm result of each config\n";
    for (const VariantWinner& v : w.variants) {
      out << format("%s: %zu configs\n", v.variant.c_str(), v.configs);
      out << "  winner    " << describe_choice(v.choice) << "\n";
    }
    if (w.overall && w.variants.size() > 1) {
      out << "overall     " << describe_choice(*w.overall) << "\n";
    }
  }
}

int merge(const MergeArgs& args) {
  namespace fs = std::filesystem;
  for (const std::string& input : args.inputs) {
    std::error_code error;
    if (!fs::is_regular_file(input, error)) throw UsageError("'" + input + "': no such database");
    if (fs::exists(args.into, error) && fs::equivalent(input, args.into, error)) {
      throw UsageError("'" + input + "' is the --into database itself");
    }
  }
  // The workloads and devices of the inputs: what the winners are chosen for.
  std::vector<std::string> workloads, devices;
  if (args.winners) {
    for (const std::string& input : args.inputs) {
      const Store store(input, StoreAccess::read_only);
      for (const StoredWorkload& w : store.summary().workloads) workloads.push_back(w.record.hash);
      for (const StoredDevice& d : store.devices()) devices.push_back(d.fingerprint);
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
  if (args.winners) {
    print_winners(choose_stored_winners(into, workloads, devices, args.variant), std::cout);
  }
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
  CLI::Option* winners =
      cmd->add_flag("--winners", args->winners,
                    "then choose and print the winners over everything the output holds for the "
                    "inputs' workloads (per variant and overall; boards of one model pooled), "
                    "measuring nothing");
  cmd->add_option("--variant", args->variant,
                  "with --winners: the variants to choose among (a glob; default: all but peers)")
      ->needs(winners);
  cmd->callback([args, &invocation] { invocation.exit_code = merge(*args); });
}

}  // namespace attn
