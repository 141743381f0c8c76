// attn-tune plan WORKLOAD|--suite NAME --variant GLOB --shards N --out DIR [--strategy S ...]
// [--partition P --gpus-per-task G --time T ...] [--local [--parallel P]]: splits a sweep over the
// tasks of a Slurm job array. Every config of the pruned spaces (of every workload of a suite) gets
// an estimated cost and a shard, balanced by cost (tuner/sweep_plan.hpp); DIR receives the shard
// map, the array and merge scripts, submit.sh, run-local.sh and a README (tuner/sweep_scripts.hpp).
// Needs no GPU: CUDA variants are pruned for the target chosen as `space` chooses it. --local then
// runs the plan on this machine (run-local.sh, which this process becomes) and exits with its code.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "apps/memory_budget.hpp"
#include "apps/tune_backend.hpp"
#include "apps/tune_commands.hpp"
#include "base/errors.hpp"
#include "kernels/registry.hpp"
#include "results/store.hpp"
#include "results/table.hpp"
#include "tuner/sweep_plan.hpp"
#include "tuner/sweep_scripts.hpp"
#include "workloads/batch.hpp"
#include "workloads/mask_checks.hpp"
#include "workloads/suites.hpp"

namespace attn {

namespace {

namespace fs = std::filesystem;

struct PlanArgs {
  std::string workload;
  std::string suite;
  std::string variant;
  std::vector<std::string> axes;
  std::string strategy = "halving";
  std::optional<size_t> budget_trials;
  std::optional<double> budget_seconds;
  uint64_t seed = 1;
  bool cpu = false;
  uint64_t shards = 0;
  std::string out;
  std::string history;
  std::string attn_tune;  // the binary the scripts run; default: this one
  SweepScripts slurm;
  bool local = false;
  TargetArgs target;
};

// Characters a folder of the plan may hold: Slurm's #SBATCH lines take its paths unquoted, and
// '%' starts one of its file name patterns.
bool plain_path(const std::string& path) {
  for (char c : path) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
          std::string("_./+,=:@-").find(c) != std::string::npos)) {
      return false;
    }
  }
  return !path.empty();
}

void write_file(const fs::path& path, const std::string& text, bool executable) {
  const fs::path part = path.string() + ".part";
  {
    std::ofstream out(part, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) throw EnvironmentError("cannot write '" + part.string() + "'");
  }
  std::error_code error;
  if (executable) {
    fs::permissions(part, fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                    fs::perm_options::add, error);
  }
  if (!error) fs::rename(part, path, error);
  if (error) {
    throw EnvironmentError("cannot write '" + path.string() + "': " + error.message());
  }
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A folder that already holds shard databases keeps its plan: re-planning it differently would
// give some configs to a second shard, which would measure them again.
void check_out_folder(const fs::path& dir, const std::string& map_text) {
  std::error_code error;
  if (fs::exists(dir, error) && !fs::is_directory(dir, error)) {
    throw UsageError("--out " + dir.string() + " is not a folder");
  }
  bool has_shards = false;
  if (fs::is_directory(dir / "shards", error)) {
    for (const fs::directory_entry& e : fs::directory_iterator(dir / "shards", error)) {
      has_shards |= e.path().extension() == ".db";
    }
  }
  if (has_shards && read_text(dir / "shard-map.tsv") != map_text) {
    throw UsageError("--out " + dir.string() +
                     " holds the shards of another plan: plan into a new folder, or run that "
                     "plan's shards again with its submit.sh --shards (or run-local.sh --shards)");
  }
}

int plan(const PlanArgs& args, const Invocation& invocation) {
  // The workloads: one, or every workload of a suite.
  std::vector<WorkloadSpec> specs;
  if (args.suite.empty()) {
    specs.push_back(load_workload_argument(args.workload));
  } else {
    specs = load_suite_selection(args.suite).workloads;
  }
  std::vector<AxisOverride> overrides;
  for (const std::string& text : args.axes) overrides.push_back(parse_axis_override(text));
  make_strategy(args.strategy, SpacePoints{}, args.seed);  // validates the name
  if (args.budget_trials && *args.budget_trials == 0) {
    throw UsageError("--budget-trials must be > 0");
  }
  if (args.budget_seconds && !(*args.budget_seconds > 0)) {
    throw UsageError("--budget-seconds must be > 0");
  }
  if (args.shards == 0) throw UsageError("--shards must be at least 1");
  if (args.slurm.gpus_per_task < 0 || args.slurm.cpus_per_task < 0) {
    throw UsageError("--gpus-per-task and --cpus-per-task must not be negative");
  }
  if (args.slurm.local_parallel < 1) throw UsageError("--parallel must be at least 1");
  if (args.slurm.stop_seconds < 0) throw UsageError("--stop-before must not be negative");
  if (!args.slurm.time.empty()) {
    const std::optional<long> limit = slurm_time_seconds(args.slurm.time);
    const std::string lower = [&] {
      std::string t = args.slurm.time;
      for (char& c : t) c = char(std::tolower(static_cast<unsigned char>(c)));
      return t;
    }();
    if (!limit && lower != "infinite" && lower != "unlimited") {
      throw UsageError("--time '" + args.slurm.time +
                       "': not a Slurm time limit (minutes, minutes:seconds, "
                       "hours:minutes:seconds, days-hours[:minutes[:seconds]])");
    }
    if (limit && *limit <= args.slurm.stop_seconds) {
      throw UsageError("--time " + args.slurm.time + " is not longer than --stop-before " +
                       std::to_string(args.slurm.stop_seconds) +
                       " s: every task would be told to stop as it starts");
    }
  }
  if (args.slurm.max_running && *args.slurm.max_running == 0) {
    throw UsageError("--max-running must be at least 1");
  }
  const fs::path dir = fs::absolute(args.out).lexically_normal();
  std::string dir_text = dir.string();
  while (dir_text.size() > 1 && dir_text.back() == '/') dir_text.pop_back();
  if (!plain_path(dir_text)) {
    throw UsageError("--out " + args.out +
                     ": the plan's folder may hold letters, digits and _./+,=:@- only (Slurm "
                     "reads its paths unquoted)");
  }
  const Registry registry = make_registry();
  const std::vector<const Variant*> matching = registry.matching(args.variant);
  if (matching.empty()) {
    throw UsageError("--variant '" + args.variant + "' matches no variant (see `attn-bench list`)");
  }
  for (const WorkloadSpec& spec : specs) {
    check_mask_limits(spec);
    check_host_memory(spec, args.suite.empty() ? args.workload : "workload " + spec.name,
                      MemoryUse::batch, "");
  }

  // The backend the tasks tune: the CPU variants with --cpu, else the CUDA ones, pruned for the
  // target `space` would choose.
  const Backend backend = args.cpu ? Backend::cpu : Backend::cuda;
  SweepPlanRequest request;
  std::string target_text;
  if (args.cpu) {
    request.target = Target::cpu();
    target_text = describe(request.target);
  } else {
    const TargetChoice choice = choose_cuda_target(args.target);
    request.target = choice.cuda;
    target_text = describe(choice.cuda) + " [" + choice.from + "]";
  }
  for (const Variant* v : matching) {
    if (v->backend() == backend) request.variants.push_back(v);
  }
  if (request.variants.empty()) {
    throw UsageError(
        "--variant '" + args.variant + "' matches no " + to_string(backend) + " variant" +
        (args.cpu ? std::string() : "; add --cpu to plan a sweep of the CPU variants"));
  }
  request.overrides = overrides;
  request.strategy = args.strategy;
  request.budget.trials = args.budget_trials;
  request.budget.seconds = args.budget_seconds;
  request.shards = args.shards;
  LaunchTimes history;
  if (!args.history.empty()) {
    std::error_code missing;
    if (!fs::is_regular_file(args.history, missing)) {
      throw UsageError("--history '" + args.history + "': no such database");
    }
    std::vector<std::string> hashes;
    for (const WorkloadSpec& spec : specs) hashes.push_back(content_hash(spec));
    const Store store(args.history, StoreAccess::read_only);
    history = recorded_launch_times(store, hashes);
    request.history = &history;
  }
  // One batch at a time: a suite's batches need not all be in memory at once.
  SweepPlanner planner(request);
  for (const WorkloadSpec& spec : specs) {
    const Batch batch = generate_batch(spec);
    require_known_axes(matching, batch, overrides);
    planner.add(batch);
  }
  const SweepPlan sweep = planner.finish();

  // What every shard runs: `attn-tune tune` with the plan's options; the scripts add the shard.
  SweepScripts scripts = args.slurm;
  scripts.dir = dir_text;
  scripts.shards = args.shards;
  scripts.attn_tune =
      args.attn_tune.empty() ? own_executable() : fs::absolute(args.attn_tune).string();
  // A file by its absolute path (its own relative references resolve against its folder); a
  // preset or built-in suite by its name.
  std::error_code error;
  const auto argument = [&](const std::string& text) {
    return fs::is_regular_file(text, error) ? fs::absolute(text).string() : text;
  };
  if (args.suite.empty()) {
    scripts.tune_args = {argument(args.workload)};
  } else {
    scripts.tune_args = {"--suite", argument(args.suite)};
  }
  scripts.tune_args.insert(scripts.tune_args.end(),
                           {"--variant", args.variant, "--strategy", args.strategy});
  for (const std::string& a : args.axes)
    scripts.tune_args.insert(scripts.tune_args.end(), {"-a", a});
  if (args.budget_trials) {
    scripts.tune_args.insert(scripts.tune_args.end(),
                             {"--budget-trials", std::to_string(*args.budget_trials)});
  }
  if (args.budget_seconds) {
    scripts.tune_args.insert(scripts.tune_args.end(),
                             {"--budget-seconds", format("%g", *args.budget_seconds)});
  }
  if (args.seed != 1) {
    scripts.tune_args.insert(scripts.tune_args.end(), {"--seed", std::to_string(args.seed)});
  }
  if (args.cpu) scripts.tune_args.push_back("--cpu");
  if (scripts.cpus_per_task > 0) {
    scripts.tune_args.insert(scripts.tune_args.end(),
                             {"--threads", std::to_string(scripts.cpus_per_task)});
  }
  if (backend == Backend::cuda && scripts.gpus_per_task == 0) scripts.gpus_per_task = 1;
  if (backend == Backend::cpu) scripts.gpus_per_task = 0;
  if (scripts.gpus_per_task > 1) {
    std::string devices;
    for (int g = 0; g < scripts.gpus_per_task; ++g) {
      devices += (g ? "," : "") + std::to_string(g);
    }
    scripts.tune_args.insert(scripts.tune_args.end(), {"--devices", devices});
  }
  scripts.winner_args = {"--variant", args.variant};

  const std::string workloads_text =
      args.suite.empty()
          ? "workload " + specs[0].name + " (" + content_hash(specs[0]).substr(0, 12) + ")"
          : "suite " + args.suite + " (" + std::to_string(specs.size()) + " workloads)";
  const std::string sweep_text = workloads_text + ", variants " + args.variant + " on " +
                                 target_text + ", strategy " + args.strategy;
  const std::string map_text = sweep.map.text("attn-tune shard map: " + sweep_text +
                                              "\nwritten by attn-tune plan; read by "
                                              "attn-tune tune --shard i/" +
                                              std::to_string(args.shards) + " --shard-map");
  check_out_folder(dir, map_text);
  fs::create_directories(dir / "logs", error);
  if (error)
    throw EnvironmentError("cannot create '" + (dir / "logs").string() + "': " + error.message());
  write_file(dir / "shard-map.tsv", map_text, false);
  write_file(dir / "sweep.sbatch", array_script(scripts), true);
  write_file(dir / "merge.sbatch", merge_script(scripts), true);
  write_file(dir / "submit.sh", submit_script(scripts), true);
  write_file(dir / "run-local.sh", local_script(scripts), true);
  write_file(dir / "README.md",
             plan_readme(scripts, sweep, quote_command_line(invocation.argv), sweep_text), false);

  std::ostream& out = std::cout;
  out << (args.suite.empty() ? "workload  " : "suite     ") << workloads_text << "\n";
  out << "target    " << target_text << "\n";
  out << "strategy  " << args.strategy << ", " << sweep.configs() << " configs of "
      << request.variants.size() << " variant(s) in " << args.shards
      << " shards, balanced by estimated cost\n";
  for (uint64_t i = 0; i < args.shards; ++i) {
    out << format("shard %-4llu %zu configs, estimated %s\n", (unsigned long long)i,
                  sweep.shard_configs[i], estimate_text(sweep.shard_seconds[i]).c_str());
  }
  const double largest = *std::max_element(sweep.shard_seconds.begin(), sweep.shard_seconds.end());
  out << "largest   " << estimate_text(largest)
      << " estimated (split by the hash rule alone: " << estimate_text(sweep.hash_largest_seconds)
      << ")\n";
  out << "wrote     " << dir_text
      << "/: shard-map.tsv, sweep.sbatch, merge.sbatch, submit.sh, run-local.sh, README.md\n";
  if (!args.local) {
    out << "next      " << dir_text << "/submit.sh    (on this machine: " << dir_text
        << "/run-local.sh)\n";
    return 0;
  }
  out << "local     running " << dir_text << "/run-local.sh\n" << std::flush;
  std::cerr << std::flush;
  const std::string script = dir_text + "/run-local.sh";
  const std::string parallel = std::to_string(scripts.local_parallel);
  ::execl("/bin/bash", "bash", script.c_str(), "--parallel", parallel.c_str(),
          static_cast<char*>(nullptr));
  throw EnvironmentError("cannot run " + script + " with /bin/bash: " + std::strerror(errno));
}

}  // namespace

void add_tune_plan_command(CLI::App& app, Invocation& invocation) {
  auto args = std::make_shared<PlanArgs>();
  CLI::App* cmd = app.add_subcommand(
      "plan",
      "Split a sweep over a Slurm job array, shards balanced by estimated cost: write "
      "the scripts (or run them here with --local)");
  CLI::Option* workload = add_space_selection(*cmd, args->workload, args->variant, args->axes);
  workload->required(false);
  cmd->add_option("--suite", args->suite,
                  "plan every workload of a suite (a built-in suite's name or a suite file; "
                  "SUITE#GLOB: the workloads whose names match): the shards are balanced over all "
                  "of them")
      ->excludes(workload);
  cmd->add_option("--shards", args->shards, "tasks of the job array, one shard each")->required();
  cmd->add_option("--out", args->out,
                  "the plan's folder: scripts, shard map, and the shards' databases and logs "
                  "(on storage every node sees)")
      ->required();
  cmd->add_option("--strategy", args->strategy, "exhaustive, random, halving (default) or model");
  cmd->add_option("--budget-trials", args->budget_trials,
                  "evaluations per variant at most, in each shard");
  cmd->add_option("--budget-seconds", args->budget_seconds,
                  "seconds of evaluation per variant at most, in each shard");
  cmd->add_option("--seed", args->seed, "seed of the random and model strategies (default 1)");
  cmd->add_flag("--cpu", args->cpu, "plan a sweep of the CPU variants (default: the CUDA ones)");
  cmd->add_option("--history", args->history,
                  "a results database whose measurements of these configs (any device) give "
                  "their launch times to the cost estimate");
  cmd->add_option("--partition", args->slurm.partition, "Slurm partition of every job");
  cmd->add_option("--account", args->slurm.account, "Slurm account of every job");
  cmd->add_option("--qos", args->slurm.qos, "Slurm quality of service of every job");
  cmd->add_option("--constraint", args->slurm.constraint,
                  "Slurm node features each task needs, e.g. h100");
  cmd->add_option("--gpus-per-task", args->slurm.gpus_per_task,
                  "GPUs of each task (default 1; more: one worker per GPU, --devices)");
  cmd->add_option("--cpus-per-task", args->slurm.cpus_per_task,
                  "CPUs of each task, also the tuner's --threads");
  cmd->add_option("--mem", args->slurm.mem, "memory of each task, as Slurm takes it (e.g. 64G)");
  cmd->add_option("--time", args->slurm.time,
                  "time limit of each task, as Slurm takes it (e.g. 4:00:00)");
  cmd->add_option("--merge-time", args->slurm.merge_time, "time limit of the merge job");
  cmd->add_option("--stop-before", args->slurm.stop_seconds,
                  "seconds before the time limit at which a task stops between configs "
                  "(default 180)");
  cmd->add_option("--max-running", args->slurm.max_running,
                  "tasks of the array running at once at most (--array=...%K)");
  cmd->add_option("--job-name", args->slurm.job_name, "Slurm job name (default attn-sweep)");
  cmd->add_option("--sbatch", args->slurm.sbatch_options,
                  "another option for the array's #SBATCH lines, e.g. --sbatch=--exclusive "
                  "(repeatable)");
  cmd->add_option("--attn-tune", args->attn_tune,
                  "the attn-tune the scripts run (default: this one), at a path every node sees");
  cmd->add_flag("--local", args->local,
                "then run the plan on this machine without Slurm: the shards as processes, "
                "then the merge");
  cmd->add_option("--parallel", args->slurm.local_parallel,
                  "run-local.sh: shards at once (default 1), each on its own --gpus-per-task "
                  "GPUs");
  args->target.add_to(*cmd);
  cmd->callback([args, &invocation] {
    if (args->workload.empty() && args->suite.empty()) {
      throw UsageError("plan needs a workload (workload.json, a preset name) or --suite NAME");
    }
    invocation.exit_code = plan(*args, invocation);
  });
}

}  // namespace attn
