// attn-tune tune WORKLOAD --variant GLOB --strategy S --db FILE [--budget-trials N |
// --budget-seconds T] [--shard i/n [--shard-map FILE]] [--isolate workers|none --deadline
// compile=S,verify=S,measure=S]: search each matching variant's configs on this machine's backend
// (the first GPU, or with --cpu the CPU reference variants; without a GPU, CUDA variants in the
// glob are an environment error, exit 4, unless --cpu), store every attempt and measurement,
// resume from what the database already holds, and choose winners. With workers (the default on a
// GPU) each evaluation runs in an `attn-tune worker` process (tuner/worker_evaluator.hpp): one that
// hangs is killed at its phase's deadline, one that dies or loses its CUDA context to a sticky
// error is recorded as crashed, and the sweep goes on with a fresh worker.
#include <algorithm>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>

#include "apps/database_path.hpp"
#include "apps/interrupt.hpp"
#include "apps/memory_budget.hpp"
#include "apps/module_peers.hpp"
#include "apps/peer_runner_setup.hpp"
#include "apps/suite_workloads.hpp"
#include "apps/tune_backend.hpp"
#include "apps/tune_commands.hpp"
#include "apps/user_kernels.hpp"
#include "base/build_info.hpp"
#include "base/errors.hpp"
#include "base/progress.hpp"
#include "base/variant_aliases.hpp"
#include "kernels/device/cuda_context.hpp"
#include "kernels/jit/jit_compiler.hpp"
#include "kernels/registry.hpp"
#include "measure/device_list.hpp"
#include "measure/device_records.hpp"
#include "measure/evaluator.hpp"
#include "measure/phase_seconds.hpp"
#include "results/store.hpp"
#include "results/table.hpp"
#include "results/variant_names.hpp"
#include "tuner/compile_ahead.hpp"
#include "tuner/tune_sweep.hpp"
#include "tuner/worker_evaluator.hpp"
#include "workloads/batch.hpp"
#include "workloads/mask_checks.hpp"
#include "workloads/suites.hpp"

namespace attn {

namespace {

struct TuneArgs {
  std::string workload;
  std::string suite;
  std::string variant;
  std::vector<std::string> kernels;
  std::vector<std::string> axes;
  std::string strategy = "halving";
  std::string db;
  std::optional<size_t> budget_trials;
  std::optional<double> budget_seconds;
  std::string shard = "0/1";
  std::string shard_map;  // attn-tune plan's assignment of configs to shards
  uint64_t seed = 1;
  int quarantine_after = 2;
  double claim_timeout = 60;
  int device = 0;
  std::optional<std::string> devices;  // "0,1": one worker per GPU
  bool cpu = false;
  size_t threads = 0;
  std::string isolate;  // "workers", "none"; empty: workers with a GPU, none on the CPU
  std::optional<double> deadline_seconds;  // every phase
  double stop_grace = 1.0;  // after a stop signal, seconds a worker may take to end its case
  std::string deadline;     // "compile=120,verify=60,measure=300"
  std::string max_host_memory;
  // --peer-module: Python modules whose peers are tuned through the peer runner
  std::vector<std::string> peer_modules;
  std::string python, runner;
  double peer_deadline = 120;
};

// What a suite's table shows of one workload's sweep ("-" where there is none).
struct SuiteRow {
  std::string workload;       // its name within the suite
  std::string winner = "-";   // the overall winner
  std::string planner = "-";  // how far the nearest planner's config ran behind it
};

// One workload's sweep; `row` receives the winner and planner cells of a suite's table.
int tune(const TuneArgs& args, const Invocation& invocation, SuiteRow* row = nullptr) {
  // Everything the user gave is checked before any work.
  const WorkloadSpec spec = load_workload_argument(args.workload);
  TuneOptions options;
  // With --peer-module and no --variant, the modules' peers alone are tuned.
  const std::string variant_glob =
      args.variant.empty() && !args.peer_modules.empty() ? "peer.user.*" : args.variant;
  options.variant_filter = variant_glob;
  for (const std::string& text : args.axes) options.overrides.push_back(parse_axis_override(text));
  make_strategy(args.strategy, SpacePoints{}, args.seed);  // validates the name
  options.strategy = args.strategy;
  options.budget.trials = args.budget_trials;
  options.budget.seconds = args.budget_seconds;
  if (args.budget_trials && *args.budget_trials == 0)
    throw UsageError("--budget-trials must be > 0");
  if (args.budget_seconds && *args.budget_seconds <= 0) {
    throw UsageError("--budget-seconds must be > 0");
  }
  options.shard = parse_shard(args.shard);
  if (!args.shard_map.empty()) use_shard_map(options.shard, args.shard_map);
  options.seed = args.seed;
  if (args.quarantine_after < 1) throw UsageError("--quarantine-after must be at least 1");
  options.quarantine_after = args.quarantine_after;
  if (!(args.claim_timeout > 0)) throw UsageError("--claim-timeout must be > 0");
  options.claim_stale_seconds = args.claim_timeout;
  Registry registry = make_registry_with_user_kernels(args.kernels);
  // The modules' peers, listed by the runner (which imports them) before any GPU work or database
  // write: a module that raises or breaks the protocol is invalid input (exit 3).
  std::optional<WorkFolder> peer_folder;
  std::filesystem::path runner_script;
  std::vector<RunnerPeer> module_peers;
  const std::vector<std::string> peer_modules = checked_peer_modules(args.peer_modules);
  const std::string python = peer_runner_python(args.python);
  if (!peer_modules.empty()) {
    if (args.peer_deadline < 0) throw UsageError("--peer-deadline must be >= 0 (0: no deadline)");
    peer_folder.emplace();
    runner_script = peer_runner_script(args.runner, peer_folder->path());
    for (RunnerPeer& peer :
         list_runner_peers(python, runner_script, peer_folder->path(), peer_modules)) {
      if (peer.name.rfind("peer.user.", 0) == 0) module_peers.push_back(std::move(peer));
    }
  }
  const bool any_module_peer_matches =
      std::any_of(module_peers.begin(), module_peers.end(),
                  [&](const RunnerPeer& p) { return variant_glob_match(variant_glob, p.name); });
  if (registry.matching(variant_glob).empty() && !any_module_peer_matches) {
    throw UsageError("--variant '" + variant_glob + "' matches no variant (see `attn-bench list`" +
                     (module_peers.empty() ? ")" : "; the modules' peers are peer.user.*)"));
  }
  // The host memory of the sweep against the budget, before anything is allocated: each
  // evaluating process (one per --devices GPU) holds a run's worth.
  const int processes =
      args.devices ? int(parse_device_list(*args.devices, std::nullopt).size()) : 1;
  check_mask_limits(spec);
  check_host_memory(spec, args.workload, args.cpu ? MemoryUse::run_cpu : MemoryUse::run,
                    args.max_host_memory, processes);
  const Batch batch = generate_batch(spec);
  for (std::unique_ptr<Variant>& v : module_peer_variants(module_peers, batch, registry)) {
    registry.add(std::move(v));
  }
  require_known_axes(registry.matching(variant_glob), batch, options.overrides);
  if (options.shard.map && !options.shard.map->lists_workload(batch.spec_hash)) {
    throw UsageError("--shard-map " + args.shard_map + " was not planned for workload " +
                     spec.name + " (" + batch.spec_hash.substr(0, 12) +
                     "): it was planned for other workloads, or this one changed since; plan "
                     "the sweep again");
  }
  const std::string db = results_database_path(args.db);
  Store store(db);

  if (args.isolate != "workers" && args.isolate != "none" && !args.isolate.empty()) {
    throw UsageError("--isolate must be 'workers' or 'none'");
  }
  if (!(args.stop_grace >= 0)) throw UsageError("--stop-grace must be >= 0");
  if (args.deadline_seconds && *args.deadline_seconds <= 0) {
    throw UsageError("--deadline-seconds must be > 0");
  }
  PhaseDeadlines deadlines =
      args.deadline_seconds ? PhaseDeadlines::all(*args.deadline_seconds) : PhaseDeadlines{};
  if (!args.deadline.empty()) deadlines = parse_phase_deadlines(args.deadline, deadlines);
  std::vector<int> devices;
  if (args.devices) {
    devices = parse_device_list(*args.devices, std::nullopt);
    if (args.isolate == "none") {
      throw UsageError("--devices runs one worker process per GPU: it cannot be --isolate none");
    }
  }
  BackendChoice backend =
      choose_tune_backend(args.cpu, devices.empty() ? args.device : devices.front());
  if (!devices.empty() && backend.gpu()) parse_device_list(*args.devices, backend.gpus_present);
  // Workers by default on a GPU (a faulting kernel must not take the sweep down) and with
  // --devices; in-process on the CPU, whose reference variants cannot fault that way.
  const bool workers =
      args.isolate.empty() ? backend.gpu() || !devices.empty() : args.isolate == "workers";
  const std::vector<DeviceRecord> slot_devices = slot_device_records(backend, devices);
  std::vector<const Variant*> runnable, other_backend;
  for (const Variant* v : registry.matching(variant_glob)) {
    (v->backend() == backend.target.backend ? runnable : other_backend).push_back(v);
  }
  const auto names = [](const std::vector<const Variant*>& variants) {
    std::string text;
    for (const Variant* v : variants) text += (text.empty() ? "" : ", ") + v->name();
    return text;
  };
  // CUDA variants asked for on a machine without a GPU: one clear stop (exit 4), not a failure per
  // config, nor a sweep of the CPU variants alone that exits 0 as if the GPU ones had been tuned.
  // --cpu says that the CPU variants are what is wanted.
  if (!backend.gpu() && !args.cpu && !other_backend.empty()) {
    throw EnvironmentError(backend.note.substr(0, backend.note.find(": tuning")) +
                           ": the variants asked for (" + names(other_backend) + ") need one" +
                           (runnable.empty() ? std::string()
                                             : "; pass --cpu to tune only the CPU variants (" +
                                                   names(runnable) + ")"));
  }
  if (runnable.empty()) {
    std::cerr << "attn-tune: no " << to_string(backend.target.backend) << " variant matches '"
              << variant_glob << "'\n";
    return to_int(ExitCode::usage);
  }
  if (!devices.empty() && !backend.gpu() && !args.cpu) {
    throw EnvironmentError("--devices " + *args.devices + ": " +
                           backend.note.substr(0, backend.note.find(": tuning")) +
                           " (with --cpu the numbers name CPU worker slots)");
  }
  // Ctrl-C, SIGTERM, SIGHUP: installed below, once the database is open; the evaluations in
  // flight stop sampling when it asks (between two samples).
  std::optional<InterruptHandler> interrupt;
  const std::function<bool()> stop_requested = [&interrupt] {
    return interrupt && interrupt->requested();
  };
  SamplingHooks stop_hooks;
  stop_hooks.stop_requested = stop_requested;
  std::vector<const Variant*> runnable_peers;
  for (const Variant* v : runnable) {
    if (is_peer_variant(v->name())) runnable_peers.push_back(v);
  }
  const bool only_peers = runnable_peers.size() == runnable.size();
  std::unique_ptr<Evaluator> evaluator;
  std::unique_ptr<CaseEvaluator> case_evaluator;
  WorkerEvaluator* worker_evaluator = nullptr;
  // The module peers' runner: the batch dumped with the oracle's output (an evaluator of this
  // process computes it and is let go unless it evaluates ours too), each case a runner process.
  std::unique_ptr<ModulePeerRunner> peer_runner;
  std::unique_ptr<ModulePeerEvaluator> peer_evaluator;
  if (!runnable_peers.empty()) {
    if (!workers) evaluator = open_tune_evaluator(backend, batch, args.threads, stop_hooks);
    std::unique_ptr<Evaluator> for_reference =
        workers ? open_tune_evaluator(backend, batch, args.threads) : nullptr;
    Evaluator& oracle = for_reference ? *for_reference : *evaluator;
    ModulePeerRunner::Options runner_options;
    runner_options.python = python;
    runner_options.script = runner_script;
    runner_options.modules = peer_modules;
    runner_options.folder = peer_folder->path();
    runner_options.device =
        backend.gpu() ? std::to_string(devices.empty() ? args.device : devices.front()) : "cpu";
    runner_options.deadline_s = args.peer_deadline;
    runner_options.backend = to_string(backend.target.backend);
    std::cerr << "attn-tune: computing the reference output (" << oracle.reference_name()
              << ") for the peer runner\n";
    peer_runner = std::make_unique<ModulePeerRunner>(std::move(runner_options), batch,
                                                     oracle.reference(), oracle.reference_name());
    peer_evaluator = std::make_unique<ModulePeerEvaluator>(*peer_runner, registry, stop_requested);
  }
  if (only_peers) {
    // Nothing of ours to evaluate: no worker is started.
  } else if (workers) {
    WorkerOptions worker;
    worker.argv = {own_executable(), "worker", args.workload, "--threads",
                   std::to_string(args.threads)};
    if (devices.empty()) {
      worker.argv.push_back("--device");
      worker.argv.push_back(std::to_string(args.device));
    }
    worker.devices = devices;
    if (!backend.gpu()) worker.argv.push_back("--cpu");
    for (const std::string& path : absolute_spec_paths(args.kernels)) {
      worker.argv.push_back("--kernel");
      worker.argv.push_back(path);
    }
    worker.deadlines = deadlines;
    worker.stop_requested = stop_requested;
    worker.stop_grace_seconds = args.stop_grace;
    auto w = std::make_unique<WorkerEvaluator>(std::move(worker));
    worker_evaluator = w.get();
    case_evaluator = std::move(w);
  } else {
    if (!evaluator) evaluator = open_tune_evaluator(backend, batch, args.threads, stop_hooks);
    case_evaluator = std::make_unique<InProcessEvaluator>(*evaluator);
  }
  CaseEvaluator& sweep_evaluator = case_evaluator ? *case_evaluator : *peer_evaluator;
  const DeviceRecord& device = backend.device;
  const std::string& note = backend.note;

  std::ostream& out = std::cout;
  out << "workload  " << spec.name << " (" << batch.spec_hash.substr(0, 12) << ")\n";
  out << "device    " << device.name << "\n";
  if (!note.empty()) out << "note      " << note << "\n";
  out << "strategy  " << args.strategy << ", shard " << options.shard.label()
      << (args.shard_map.empty() ? "" : " of the shard map " + args.shard_map) << ", budget "
      << (args.budget_trials ? std::to_string(*args.budget_trials) + " trials" : std::string(""))
      << (args.budget_trials && args.budget_seconds ? ", " : "")
      << (args.budget_seconds ? format("%gs", *args.budget_seconds) : std::string(""))
      << (!args.budget_trials && !args.budget_seconds ? "none" : "") << " per variant\n";
  if (peer_runner) {
    out << "peers     " << runnable_peers.size() << " from --peer-module, each config in a peer "
        << "runner process ("
        << (args.peer_deadline > 0 ? format("deadline %.0f s", args.peer_deadline)
                                   : std::string("no deadline"))
        << ")\n";
  }
  out << "isolate   "
      << (only_peers ? std::string("the peer runner")
          : workers  ? "workers" + (devices.empty() ? "" : " on devices " + *args.devices) +
                          " (deadlines: " + deadlines.describe() + ")"
                    : std::string("none (in process)"))
      << "\n"
      << std::flush;
  if (worker_evaluator) worker_evaluator->start();  // a worker that cannot start stops us here

  TuneSweep sweep(store, batch, registry, device, backend.target, sweep_evaluator, options,
                  std::cerr);
  for (const Variant* v : runnable_peers) sweep.evaluate_with(*v, *peer_evaluator);
  if (!slot_devices.empty()) sweep.set_slot_devices(slot_devices);
  // On a GPU the next configs' programs compile into the JIT cache while one is measured.
  std::unique_ptr<CompileAhead> ahead;
  if (backend.gpu()) {
    ahead = std::make_unique<CompileAhead>(*backend.jit, 2);
    sweep.set_compile_ahead(ahead.get(), 2 * sweep_evaluator.slots());
  }
  // Ctrl-C, SIGTERM, SIGHUP: stop between two samples of the case in flight (not recorded: the
  // resumed sweep measures it again), choose winners from what was measured, close the run as
  // interrupted and exit 130; a second signal exits at once, closing the run first
  // (apps/interrupt.hpp).
  interrupt.emplace("attn-tune");
  interrupt->close_runs_in(db);
  sweep.set_stop_request(stop_requested);
  sweep.set_progress_terminal(stderr_is_terminal());  // a bar on a terminal, lines in a log
  const RunRecord record = run_record("attn-tune tune", invocation);
  TuneReport report;
  try {
    report = sweep.run(record);
  } catch (const Error& e) {
    if (e.code() != ExitCode::environment) throw;
    // The machine failed (a full or read-only database, an unusable JIT cache, a worker that
    // cannot run anything): stop once, say so, and leave the database resumable.
    throw EnvironmentError(std::string(e.what()) +
                           "\n  the sweep stopped; what was recorded is kept: fix this and rerun "
                           "the same command to resume");
  }
  if (worker_evaluator) worker_evaluator->stop();
  interrupt.reset();

  out << "\n";
  if (worker_evaluator && !devices.empty()) {
    const std::vector<size_t> cases = worker_evaluator->cases_per_slot();
    out << "workers  ";
    for (size_t i = 0; i < devices.size(); ++i) {
      out << (i ? ", " : " ") << "device " << devices[i] << ": " << cases[i] << " cases";
    }
    out << "\n";
  }
  if (worker_evaluator && worker_evaluator->sticky_replacements() > 0) {
    out << "workers   " << worker_evaluator->sticky_replacements()
        << " replaced after a sticky CUDA error\n";
  }
  if (ahead) {
    out << "compile   " << ahead->compiled() << " programs compiled ahead into the JIT cache ("
        << ahead->failed() << " rejected, left to the worker)\n";
  }
  // "evaluating" is the wall time of the evaluations (compile, verify, measure and the sweep's own
  // work around each); the phases are broken out where the evaluator reports them (workers and
  // in process do), so that a cold JIT cache's compiles can be told from measurement.
  PhaseSeconds all_phases;
  double all_seconds = 0;
  for (const VariantSummary& s : report.variants) {
    const std::string phases =
        s.phase_seconds.known() ? " (" + s.phase_seconds.describe() + ")" : std::string();
    const std::string others =
        s.by_other_tuners > 0 ? format(" (%zu stored by other tuners meanwhile)", s.by_other_tuners)
                              : std::string();
    const std::string unmapped =
        s.unmapped > 0 ? format(", %zu not in the shard map: by hash", s.unmapped) : std::string();
    out << format(
        "%s: %zu configs (%zu in shard %s%s): %zu measured, %zu from the database%s, %zu "
        "failed, %zu quarantined%s, %.1fs evaluating%s%s\n",
        s.variant.c_str(), s.space, s.shard_configs, options.shard.label().c_str(),
        unmapped.c_str(), s.evaluated, s.resumed, others.c_str(), s.failed, s.quarantined,
        s.declined > 0 ? format(", %zu declined", s.declined).c_str() : "", s.measure_seconds,
        phases.c_str(), s.budget_exhausted ? " (budget spent)" : "");
    if (s.winner) out << "  winner    " << describe_choice(*s.winner) << "\n";
    const bool planner_chooses = s.space > 1;  // with one config there is nothing to choose
    if (planner_chooses && s.planner) {
      out << "  planner   " << describe_planner_gap(*s.planner) << "\n";
    } else if (planner_chooses && s.winner && !s.planner_key.empty()) {
      out << "  planner   {" << s.planner_key << "} not measured by this sweep (not in the space "
          << "searched)\n";
    }
    all_phases.add(s.phase_seconds);
    all_seconds += s.measure_seconds;
  }
  if (report.overall && report.variants.size() > 1) {
    out << "overall     " << describe_choice(*report.overall) << "\n";
    if (report.overall_planner) {
      out << "planner     " << report.overall_planner->variant << " "
          << describe_planner_gap(*report.overall_planner) << "\n";
    }
  }
  if (row && report.overall) {
    const Candidate& w = report.overall->winner;
    row->winner = w.variant + " {" + w.config_key + "} " + format("%.2f us", w.median_us);
  }
  if (row && report.overall_planner) row->planner = planner_gap_cell(*report.overall_planner);
  if (all_phases.known()) {
    out << "phases    " << all_phases.describe()
        << format(" over all variants (%.1fs evaluating)\n", all_seconds);
  }
  out << "\nrecorded  run " << report.run_id << " in " << db << "\n";
  if (report.interrupted) {
    std::cerr << "attn-tune: interrupted; the database is consistent: rerun the same command to "
                 "finish the sweep\n";
    return to_int(ExitCode::interrupted);
  }
  return report.failures() > 0 ? to_int(ExitCode::failed_cases) : to_int(ExitCode::ok);
}

// Every workload of a suite in turn, each a sweep of its own (workers load it as "SUITE#NAME"),
// then the winners side by side. An interruption stops the suite; the rerun resumes.
int tune_suite(const TuneArgs& args, const Invocation& invocation) {
  if (!args.workload.empty()) {
    throw UsageError("--suite tunes the suite's workloads: give no workload with it");
  }
  const Suite suite = checked_suite(args.suite, args.cpu ? MemoryUse::run_cpu : MemoryUse::run,
                                    args.max_host_memory);
  make_registry_with_user_kernels(args.kernels);  // every spec checked before the first sweep
  std::vector<SuiteRow> rows;
  int exit_code = to_int(ExitCode::ok);
  for (size_t i = 0; i < suite.workloads.size(); ++i) {
    TuneArgs one = args;
    one.suite.clear();
    one.workload = suite.argument + "#" + suite.workloads[i].name;
    print_suite_progress(std::cerr, "attn-tune", suite.name, i, suite.workloads.size());
    SuiteRow& row = rows.emplace_back();
    row.workload = suite.workloads[i].name;
    const int code = tune(one, invocation, &row);
    if (exit_code == to_int(ExitCode::ok)) exit_code = code;
    if (code == to_int(ExitCode::interrupted)) return code;
    std::cout << "\n";
  }
  TextTable table;
  table.add_column("workload", TextTable::Align::left);
  table.add_column("winner", TextTable::Align::left);
  table.add_column("planner's config behind it", TextTable::Align::left);
  for (const SuiteRow& row : rows) table.add_row({row.workload, row.winner, row.planner});
  std::cout << "suite     " << suite.name << ": winners\n";
  table.print(std::cout);
  return exit_code;
}

}  // namespace

void add_tune_tune_command(CLI::App& app, Invocation& invocation) {
  auto args = std::make_shared<TuneArgs>();
  CLI::App* cmd = app.add_subcommand(
      "tune", "Search each variant's configs for a workload; store attempts, results, winners");
  CLI::Option* workload = add_space_selection(*cmd, args->workload, args->variant, args->axes);
  workload->required(false);
  cmd->add_option(
         "--suite", args->suite,
         "tune every workload of a suite (a built-in suite's name or a suite file; "
         "SUITE#GLOB: the workloads whose names match), then print the winners side by side")
      ->excludes(workload);
  add_kernel_spec_flag(cmd, args->kernels);
  add_peer_module_flag(cmd, args->peer_modules);
  add_module_runner_flags(cmd, args->python, args->runner, args->peer_deadline);
  cmd->add_option("--strategy", args->strategy, "exhaustive, random, halving (default) or model");
  cmd->add_option("--db", args->db, "SQLite database (default: $ATTN_DB or ./attn-bench.db)");
  cmd->add_option("--budget-trials", args->budget_trials, "evaluations per variant at most");
  cmd->add_option("--budget-seconds", args->budget_seconds,
                  "seconds of evaluation per variant at most");
  cmd->add_option("--shard", args->shard, "take shard i of n of every space (default 0/1)");
  cmd->add_option("--shard-map", args->shard_map,
                  "with --shard i/n: take the configs that this map (written by attn-tune plan) "
                  "gives shard i; configs it does not list go by the hash rule");
  cmd->add_option("--seed", args->seed, "seed of the random and model strategies (default 1)");
  cmd->add_option("--quarantine-after", args->quarantine_after,
                  "skip a config after this many attempts crashed or hung (default 2)");
  cmd->add_option("--claim-timeout", args->claim_timeout,
                  "seconds without a heartbeat after which another tuner's claim on a config "
                  "(on the same database) is taken over (default 60)");
  CLI::Option* device = cmd->add_option("--device", args->device, "GPU ordinal (default 0)");
  cmd->add_option("--devices", args->devices,
                  "GPU ordinals, e.g. 0,1: one worker per GPU, configs dealt to whichever is free "
                  "(with --cpu: worker slots)")
      ->excludes(device);
  cmd->add_flag("--cpu", args->cpu,
                "tune the CPU variants: even when a GPU exists, and without one when --variant "
                "also matches CUDA variants (else exit 4)");
  cmd->add_option("--threads", args->threads, "CPU threads for the reference (default: all)");
  add_max_host_memory_flag(cmd, args->max_host_memory);
  cmd->add_option("--isolate", args->isolate,
                  "workers: evaluate in worker processes (default with a GPU); none: in this "
                  "process (default on the CPU)");
  cmd->add_option(
      "--deadline", args->deadline,
      "with workers: per-phase deadlines, e.g. compile=120,verify=60,measure=300 "
      "(seconds from the phase's start; default 300 each); a worker past one is killed");
  cmd->add_option("--deadline-seconds", args->deadline_seconds,
                  "with workers: the same deadline for every phase (--deadline entries override)");
  cmd->add_option("--stop-grace", args->stop_grace,
                  "with workers: after Ctrl-C or SIGTERM, seconds a case in flight may take to end "
                  "(its sampling stops after the sample in hand; a worker still compiling or "
                  "verifying is killed after this)")
      ->capture_default_str();
  cmd->callback([args, &invocation] {
    if (args->workload.empty() && args->suite.empty()) {
      throw UsageError("tune needs a workload (workload.json, a preset name) or --suite NAME");
    }
    invocation.exit_code =
        args->suite.empty() ? tune(*args, invocation) : tune_suite(*args, invocation);
  });
}

}  // namespace attn
