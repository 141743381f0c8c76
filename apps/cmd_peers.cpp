// attn-bench peers WORKLOAD: our variants and other libraries' attention (torch SDPA,
// FlexAttention, FlashInfer: the peer runner in tools/peers) on exactly the same batch, verified
// against the same oracle, timed under the same policy, recorded in one run, printed side by side.
// attn-bench peers --suite NAME: the same on every workload of a suite, then one table over all.
// attn-bench peers import RESULTS: records a results file the peer runner wrote on its own.
// docs/peers.md.

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "apps/case_progress.hpp"
#include "apps/commands.hpp"
#include "apps/database_path.hpp"
#include "apps/interrupt.hpp"
#include "apps/memory_budget.hpp"
#include "apps/peer_runner.hpp"
#include "apps/peer_runner_setup.hpp"
#include "apps/peers_suite_table.hpp"
#include "apps/policy_flags.hpp"
#include "apps/suite_workloads.hpp"
#include "base/build_info.hpp"
#include "base/errors.hpp"
#include "base/progress.hpp"
#include "base/sample_statistics.hpp"
#include "kernels/device/cuda_context.hpp"
#include "kernels/jit/jit_compiler.hpp"
#include "measure/bench_run.hpp"
#include "measure/device_records.hpp"
#include "measure/peer_results.hpp"
#include "results/roofline.hpp"
#include "results/store.hpp"
#include "results/table.hpp"
#include "tuner/worker_protocol.hpp"
#include "workloads/batch_dump.hpp"
#include "workloads/mask_checks.hpp"
#include "workloads/presets.hpp"

namespace attn {

namespace {

namespace fs = std::filesystem;

struct PeersArgs {
  std::string workload;
  std::string suite;  // --suite: every workload of a suite, then one table over all of them
  std::string db;
  std::string peers;
  std::vector<std::string> peer_modules;  // --peer-module: the user's Python peer modules
  std::string python;
  std::string runner;
  std::string keep_dump;
  std::string variant;
  PolicyFlags policy;
  int device = 0;
  bool cpu = false;
  size_t threads = 0;
  std::string reference = "auto";
  std::string max_host_memory;
  double peer_deadline = 120;
  // import
  std::string results;
  std::string import_workload;
};

void check_peer_globs(const std::string& globs, const std::vector<std::string>& units) {
  std::vector<std::string> names;
  for (const std::string& unit : units) {
    const std::string name = peer_unit_name(unit);
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  std::stringstream list(globs);
  for (std::string glob; std::getline(list, glob, ',');) {
    if (glob.empty()) continue;
    if (std::none_of(names.begin(), names.end(),
                     [&](const std::string& n) { return glob_match(glob, n); })) {
      std::string known;
      for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
      throw UsageError("--peers '" + glob + "' matches no peer (peers: " + known + ")");
    }
  }
}

// The runs the runner will make for `globs` over peer names (all when empty), in its order: the
// runner's own choice (tools/peers/attn_peers/runner.py, select), so that exact runs can be passed
// on.
std::vector<std::string> chosen_peers(const std::string& globs,
                                      const std::vector<std::string>& units) {
  if (globs.empty()) return units;
  std::vector<std::string> chosen;
  for (const std::string& unit : units) {
    std::stringstream list(globs);
    for (std::string glob; std::getline(list, glob, ',');) {
      if (!glob.empty() && glob_match(glob, peer_unit_name(unit))) {
        chosen.push_back(unit);
        break;
      }
    }
  }
  return chosen;
}

struct TableRow {
  std::string name, origin;  // origin: "ours" or "peer"
  const Measurement* m;
};

void print_side_by_side(const std::vector<TableRow>& rows, std::ostream& out) {
  const Measurement* best = nullptr;
  for (const TableRow& r : rows) {
    if (r.origin == "ours" && r.m->disposition == Disposition::passed &&
        (!best || r.m->stats.median < best->stats.median)) {
      best = r.m;
    }
  }
  TextTable table;
  using A = TextTable::Align;
  table.add_column("variant", A::left);
  table.add_column("of", A::left);
  table.add_column("status", A::left);
  table.add_column("median_us", A::right);
  table.add_column("p10..p90_us", A::right);
  table.add_column("n", A::right);
  table.add_column("timer", A::left);
  table.add_column("GB/s", A::right);
  table.add_column("TFLOP/s", A::right);
  table.add_column("rel_err", A::right);
  table.add_column("vs our best", A::right);
  std::vector<std::string> notes;
  for (const TableRow& r : rows) {
    const Measurement& m = *r.m;
    const bool timed = m.disposition == Disposition::passed;
    std::string versus = "-";
    if (timed && best && best != &m) {
      const Comparison c = compare_samples(best->kept_samples(), m.kept_samples());
      versus =
          format("%.3gx %s", m.stats.median / best->stats.median, to_string(c.verdict).c_str());
    } else if (timed && best == &m) {
      versus = "best";
    }
    const std::string timer = m.timing.timer == "graph"
                                  ? format("graph x%d", m.timing.launches_per_sample)
                                  : (m.timing.timer.empty() ? "-" : m.timing.timer);
    table.add_row({r.name, r.origin, timed && m.unstable ? "unstable" : to_string(m.disposition),
                   timed ? format("%.2f", m.stats.median) : "-",
                   timed ? format("%.2f..%.2f", m.stats.p10, m.stats.p90) : "-",
                   timed ? std::to_string(m.stats.count) : "-", timed ? timer : "-",
                   timed ? format("%.1f", m.gbps()) : "-", timed ? format("%.3f", m.tflops()) : "-",
                   m.verification.checked ? format("%.1e", m.verification.rel_l2_error) : "-",
                   versus});
    if (!m.reason.empty()) notes.push_back(r.name + ": " + m.reason);
    if (timed && m.unstable) notes.push_back(r.name + ": unstable: " + m.unstable_reason);
  }
  table.print(out);
  for (const auto& note : notes) out << "\n" << note << "\n";
  out << "\n'vs our best': median / the median of our fastest passed variant, and the verdict of "
         "their 95% intervals (FASTER: the row is faster than ours)\n";
}

// A GPU UUID as hex digits only ("GPU-5f1c2a3b-..." and torch's "5f1c2a3b-..." alike).
std::string uuid_digits(const std::string& uuid) {
  std::string out;
  for (char c : uuid.rfind("GPU-", 0) == 0 ? uuid.substr(4) : uuid) {
    if (std::isxdigit(static_cast<unsigned char>(c))) {
      out += char(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  return out;
}

ReferenceOracle reference_oracle_from(const PeersArgs& args) {
  std::optional<ReferenceOracle> oracle = reference_oracle_from_string(args.reference);
  if (!oracle) throw UsageError("--reference '" + args.reference + "': use cpu, gpu or auto");
  if (*oracle == ReferenceOracle::gpu && args.cpu) {
    throw UsageError("--reference gpu needs the CUDA backend");
  }
  return *oracle;
}

// What every workload of one `peers` command shares, set up and checked once before any GPU work.
struct PeersSetup {
  BenchOptions options;
  std::string python;  // runs the peer runner
  fs::path script;     // the runner
  std::vector<std::string> peer_modules;
  std::vector<std::string> chosen;  // the runs of the peers asked for, in the runner's order
  std::string db;
};

// What became of one workload: its exit code, whether a stop signal ended it, and what it recorded.
struct WorkloadOutcome {
  int exit_code = 0;
  bool interrupted = false;
  PeersSuiteWorkload recorded;
};

// Our variants, then the chosen peers, on `batch`: verified against one oracle, timed under one
// policy, recorded in one run of `store`, printed side by side. The dump the peers read and the
// runner's results files go in `work_dir`.
WorkloadOutcome peers_on_workload(const Batch& batch, const PeersArgs& args,
                                  const Invocation& invocation, const PeersSetup& setup,
                                  const Registry& registry, Store& store,
                                  const fs::path& work_dir) {
  // The bar shows each sample of the case in hand; Ctrl-C stops sampling between two samples.
  Progress* progress_now = nullptr;
  std::optional<InterruptHandler> interrupt;
  BenchOptions options = setup.options;
  options.sampling = case_progress_hooks(
      &progress_now, [&interrupt] { return interrupt.has_value() && interrupt->requested(); });
  BenchSession session = BenchSession::open(batch, options);
  std::cout << "workload  " << batch.spec.name << " (" << batch.spec_hash.substr(0, 12) << "), "
            << batch.num_seqs << " sequences, " << batch.total_q << " query tokens, "
            << batch.total_kv << " keys\n";
  std::cout << "device    " << session.device().name << " (" << session.backend() << ")\n";
  std::cout << "policy    " << options.policy.name << " (peers: events timer; docs/peers.md)\n";
  std::cout << "reference " << session.reference_name() << "\n";
  std::cout << "deadline  "
            << (args.peer_deadline > 0
                    ? format("%.0f s per peer, imports and compile included", args.peer_deadline)
                    : std::string("none"))
            << "\n"
            << std::flush;

  // The dump the peers read: the batch, and the oracle's output that verifies ours as well.
  std::cerr << "attn-bench: computing the reference output (" << session.reference_name() << ")\n";
  std::vector<DumpTensor> tensors = batch_tensors(batch);
  tensors.push_back(reference_output_tensor(batch, session.reference_output()));
  const fs::path dump_dir = work_dir / "dump";
  write_batch_dump(batch, std::move(tensors), dump_dir.string(),
                   dump_verification_fields(batch, session.reference_name()));

  session.begin(store, run_record("attn-bench peers", invocation));
  // Ctrl-C, SIGTERM, SIGHUP: the case in progress finishes (or the runner is stopped), what ran is
  // recorded and printed, the run is marked interrupted (apps/interrupt.hpp).
  interrupt.emplace("attn-bench");
  interrupt->close_runs_in(setup.db);
  std::string runner_failure;
  std::vector<std::string> out_of_time;
  const BenchReport* finished = nullptr;
  try {
    // Our variants first, as `attn-bench run` runs them: a slow peer cannot keep them from running.
    const std::vector<BenchCase> cases = session.cases(registry);
    {
      Progress progress(std::cerr, cases.size(), stderr_is_terminal());
      progress_now = &progress;
      for (const BenchCase& c : cases) {
        if (interrupt->requested()) break;
        progress.begin(c.full_name);
        session.measure(c);
        progress.finish_step();
      }
      progress_now = nullptr;
    }
    PeerRunnerOutcome peers;
    if (!interrupt->requested() && !setup.chosen.empty()) {
      PeerRunnerRequest request;
      request.argv = {setup.python,
                      setup.script.string(),
                      dump_dir.string(),
                      "--policy-json",
                      policy_to_json(options.policy).dump(),
                      "--device",
                      args.cpu ? "cpu" : std::to_string(args.device)};
      for (const std::string& module : setup.peer_modules) {
        request.argv.push_back("--peer-module");
        request.argv.push_back(module);
      }
      request.peers = setup.chosen;
      request.folder = work_dir.string();
      request.deadline_s = args.peer_deadline;
      request.backend = session.backend();
      request.policy = options.policy.name;
      request.stop_requested = [&] { return interrupt->requested(); };
      std::cout << "\npeers     running " << setup.script.string() << " on " << dump_dir.string()
                << "\n"
                << std::flush;
      peers = run_peers_with_deadlines(request);
    }
    if (peers.header) {
      const PeerResultsHeader& h = *peers.header;
      if (h.spec_hash != batch.spec_hash) {
        throw std::logic_error("the peer runner measured another batch (" + h.spec_hash + ")");
      }
      const bool on_gpu = session.backend() == "cuda";
      if (on_gpu && h.device_kind() == "gpu" && !h.device_uuid().empty() &&
          uuid_digits(h.device_uuid()) != uuid_digits(session.device().uuid)) {
        throw EnvironmentError("the peers ran on GPU " + h.device_uuid() + ", ours on " +
                               session.device().uuid +
                               " (check CUDA_VISIBLE_DEVICES and --device)");
      }
    }
    runner_failure = peers.failure;
    out_of_time = peers.timed_out;
    // The peers join the same run (session.record writes each at once).
    for (PeerRow& row : peers.rows) {
      apply_peer_work(batch, registry, row.measurement);
      const Family family = *family_from_string(row.measurement.family);
      session.record(row.measurement.variant, family, row.measurement);
    }
    finished = &session.finish(interrupt->requested());
  } catch (const std::exception& e) {
    session.fail(e.what());  // the run row says why it ended
    throw;
  }
  WorkloadOutcome outcome;
  outcome.interrupted = interrupt->requested();
  interrupt.reset();
  const BenchReport& report = *finished;
  outcome.recorded = {batch.spec.name, report.run_id, report.rows};

  std::vector<TableRow> rows;
  for (const BenchRow& r : report.rows) {
    rows.push_back({r.full_name, is_peer_variant(r.full_name) ? "peer" : "ours", &r.measurement});
  }
  std::cout << "\n";
  print_side_by_side(rows, std::cout);
  std::cout << "\nrecorded  run " << report.run_id << " in " << setup.db
            << "; compare with: attn-tune compare --db " << setup.db << " --variant '"
            << to_string(peer_family(batch, registry)) << ".*' --variant 'peer.*'\n";
  if (!out_of_time.empty()) {
    std::cerr << "attn-bench: " << out_of_time.size() << " peer(s) ran out of time and are "
              << "recorded as timed_out: ";
    for (size_t i = 0; i < out_of_time.size(); ++i) std::cerr << (i ? ", " : "") << out_of_time[i];
    std::cerr << " (--peer-deadline " << format("%.0f", args.peer_deadline) << ")\n";
  }
  if (outcome.interrupted) {
    std::cerr << "attn-bench: interrupted: what ran is recorded in run " << report.run_id
              << " (status 'interrupted')\n";
    outcome.exit_code = to_int(ExitCode::interrupted);
  } else if (!runner_failure.empty()) {
    std::cerr << "attn-bench: environment: " << runner_failure << " (its output is above)\n";
    outcome.exit_code = to_int(ExitCode::environment);
  } else if (report.any_failed()) {
    outcome.exit_code = to_int(ExitCode::failed_cases);
  } else {
    outcome.exit_code = to_int(ExitCode::ok);
  }
  return outcome;
}

// One workload (a file, a preset, SUITE#WORKLOAD) or every workload of --suite in turn, each
// printed as it ends and recorded in a run of its own; a suite ends with one table over all of
// them (apps/peers_suite_table.hpp).
int peers(const PeersArgs& args, const Invocation& invocation) {
  // Everything the user gave is checked before any GPU work: the workloads (a suite's all of
  // them), the options and each workload's host memory.
  if (args.peer_deadline < 0) throw UsageError("--peer-deadline must be >= 0 (0: no deadline)");
  std::vector<WorkloadSpec> specs;
  std::string suite_name;
  if (!args.suite.empty()) {
    if (!args.workload.empty()) {
      throw UsageError("--suite runs the suite's workloads: give no workload with it");
    }
    Suite suite = checked_suite(args.suite, MemoryUse::peers, args.max_host_memory);
    suite_name = suite.name;
    specs = std::move(suite.workloads);
  } else {
    specs.push_back(load_workload_argument(args.workload));
  }
  PeersSetup setup;
  setup.peer_modules = checked_peer_modules(args.peer_modules);
  setup.options.variant_filter = args.variant;
  setup.options.policy = policy_from(args.policy);
  setup.options.device = args.device;
  setup.options.force_cpu = args.cpu;
  setup.options.cpu_threads = args.threads;
  setup.options.reference = reference_oracle_from(args);
  const Registry registry = make_registry();
  if (!args.variant.empty() && registry.matching(args.variant).empty()) {
    throw UsageError("--variant '" + args.variant + "' matches no variant (see `attn-bench list`)");
  }
  if (!args.runner.empty() && !fs::exists(fs::path(args.runner) / "run_peers.py")) {
    throw UsageError("--runner '" + args.runner +
                     "': no run_peers.py there (name the tools/peers folder of a checkout)");
  }
  if (suite_name.empty()) {
    check_mask_limits(specs.front());
    check_host_memory(specs.front(), args.workload, MemoryUse::peers, args.max_host_memory);
  }
  // The first batch is built before the database is opened: a workload whose referenced files
  // fail only then leaves no database behind.
  std::optional<Batch> first_batch = generate_batch(specs.front());
  if (!args.cpu) {
    const DeviceDiscovery discovery = discover_devices();
    if (discovery.devices.empty()) {
      throw EnvironmentError("attn-bench peers needs a GPU: " + discovery.why_none +
                             " (--cpu runs the CPU reference variant and the CPU test peers only)");
    }
  }
  // The runner starts (Python with numpy) and knows the peers asked for, before any GPU work.
  setup.python = peer_runner_python(args.python);
  WorkFolder folder(args.keep_dump);
  setup.script = peer_runner_script(args.runner, folder.path());
  std::vector<std::string> peer_names;
  for (const RunnerPeer& peer :
       list_runner_peers(setup.python, setup.script, folder.path(), setup.peer_modules)) {
    if (is_peer_variant(peer.name)) peer_names.push_back(peer.unit);
  }
  check_peer_globs(args.peers, peer_names);
  setup.chosen = chosen_peers(args.peers, peer_names);
  setup.db = results_database_path(args.db);
  Store store(setup.db);

  std::vector<PeersSuiteWorkload> suite_rows;
  int exit_code = to_int(ExitCode::ok);
  for (size_t i = 0; i < specs.size(); ++i) {
    if (!suite_name.empty())
      print_suite_progress(std::cerr, "attn-bench", suite_name, i, specs.size());
    const Batch batch = i == 0 ? std::move(*first_batch) : generate_batch(specs[i]);
    first_batch.reset();
    // A suite's workloads each have a folder of their own (workload-1, ...) for the dump and the
    // runner's results.
    const fs::path work_dir =
        suite_name.empty() ? folder.path() : folder.path() / ("workload-" + std::to_string(i + 1));
    fs::create_directories(work_dir);
    WorkloadOutcome outcome =
        peers_on_workload(batch, args, invocation, setup, registry, store, work_dir);
    suite_rows.push_back(std::move(outcome.recorded));
    // The first failure's code stands (the suite goes on), except that an interruption stops it.
    if (exit_code == to_int(ExitCode::ok)) exit_code = outcome.exit_code;
    if (outcome.interrupted) {
      exit_code = outcome.exit_code;
      break;
    }
    if (!suite_name.empty() && i + 1 < specs.size()) std::cout << "\n";
  }
  if (!suite_name.empty()) print_peers_suite_table(suite_name, suite_rows, std::cout);
  return exit_code;
}

// The device a results file was measured on: this host's CPU; the GPU with its UUID on this
// machine; or the device of that UUID the database already knows (results imported elsewhere).
DeviceRecord import_device(const PeerResultsHeader& header, const Store& store) {
  if (header.device_kind() == "cpu") return host_cpu_record();
  const std::string uuid = header.device_uuid();
  const DeviceDiscovery discovery = discover_devices();
  for (const DeviceInfo& d : discovery.devices) {
    if (uuid_digits(d.uuid) == uuid_digits(uuid)) {
      return device_record(d, JitCompiler().nvrtc_version());
    }
  }
  const std::vector<StoredDevice> known = store.devices();
  const StoredDevice* latest = nullptr;
  for (const StoredDevice& d : known) {
    if (uuid_digits(d.record.uuid) == uuid_digits(uuid) &&
        (!latest || d.last_seen_at > latest->last_seen_at)) {
      latest = &d;
    }
  }
  if (latest) return latest->record;
  throw EnvironmentError("the peers ran on " + header.device.value("name", std::string("a GPU")) +
                         " " + uuid +
                         ", which is neither on this machine nor in the database: import on the "
                         "machine that ran them, or into a database of its `attn-bench run`");
}

int import_results(const PeersArgs& args, const Invocation& invocation) {
  PeerResults results = read_peer_results(args.results);
  const WorkloadRecord workload = peer_workload_record(results.header, args.results);
  WorkloadSpec spec;
  if (!args.import_workload.empty()) {
    spec = load_workload_argument(args.import_workload);
    if (content_hash(spec) != workload.hash) {
      throw InputError(
          args.import_workload,
          {"hashes to " + content_hash(spec).substr(0, 12) + ", the results' spec to " +
           workload.hash.substr(0, 12) + ": not the workload the peers ran"});
    }
  } else {
    spec = parse_workload(workload.canonical_json, args.results + " (its spec)");
  }
  check_mask_limits(spec);
  check_host_memory(spec, args.results, MemoryUse::batch, args.max_host_memory);
  const Batch batch = generate_batch(spec);
  const Registry registry = make_registry();
  const std::string db = results_database_path(args.db);
  Store store(db);
  const DeviceRecord device = import_device(results.header, store);

  const int64_t run_id = store.begin_run(run_record("attn-bench peers import", invocation));
  const int64_t device_id = store.upsert_device(device);
  const int64_t workload_id = store.upsert_workload(workload);
  const DeviceCeilings ceilings = store.ceilings(device.fingerprint());
  bool failed = false;
  std::vector<TableRow> rows;
  try {
    for (PeerRow& row : results.rows) {
      Measurement& m = row.measurement;
      apply_peer_work(batch, registry, m);
      apply_ceiling(*family_from_string(m.family), ceilings, m);
      store.add_measurement(run_id, device_id, workload_id, m);
      failed |= m.disposition != Disposition::passed && m.disposition != Disposition::unsupported;
      rows.push_back({m.variant, "peer", &m});
    }
  } catch (const std::exception& e) {
    try {
      store.finish_run(run_id, std::string("error: ") + e.what());
    } catch (const std::exception&) {  // the database itself may be what failed
    }
    throw;
  }
  store.finish_run(run_id, failed ? "failed_cases" : "completed");
  std::cout << "workload  " << workload.name << " (" << workload.hash.substr(0, 12) << ")\n"
            << "device    " << device.name << "\n\n";
  print_side_by_side(rows, std::cout);
  std::cout << "\nrecorded  run " << run_id << " in " << db << " (" << rows.size() << " peers)\n";
  return to_int(failed ? ExitCode::failed_cases : ExitCode::ok);
}

}  // namespace

void add_peers_command(CLI::App& app, Invocation& invocation) {
  auto args = std::make_shared<PeersArgs>();
  CLI::App* cmd = app.add_subcommand(
      "peers",
      "Run other libraries' attention (torch SDPA, FlexAttention, FlashInfer) and our variants on "
      "the same batch, verified and timed alike, into one run (docs/peers.md)");
  cmd->add_option("workload", args->workload,
                  "workload.json, a preset name or SUITE#WORKLOAD (a file wins)");
  cmd->add_option("--suite", args->suite,
                  "run ours and the peers on every workload of a suite (a built-in suite's name "
                  "or a suite file; SUITE#GLOB: the workloads whose names match) and end with one "
                  "table: a row per workload, a column per peer");
  cmd->add_option("--db", args->db, "SQLite database (default: $ATTN_DB or ./attn-bench.db)");
  cmd->add_option("--peers", args->peers,
                  "comma-separated globs over peer names, e.g. 'peer.torch.*' (default: all)");
  add_peer_module_flag(cmd, args->peer_modules);
  cmd->add_option("--python", args->python,
                  "Python 3 with numpy (and torch for the GPU peers) that runs the peer runner "
                  "(default: $ATTN_PEERS_PYTHON or python3 on $PATH)");
  cmd->add_option("--runner", args->runner,
                  "run the peer runner of this tools/peers folder instead of the copy built in");
  cmd->add_option("--keep-dump", args->keep_dump,
                  "write the dump, the runner and its results file here and keep them (default: "
                  "a temporary folder, removed)");
  cmd->add_option("--variant", args->variant, "only our variants whose name matches this glob");
  add_policy_flags(cmd, args->policy);
  cmd->add_option("--device", args->device, "GPU ordinal (default 0), for ours and the peers");
  cmd->add_flag("--cpu", args->cpu,
                "the CPU backend: our CPU reference variant and the CPU test peers only");
  cmd->add_option("--threads", args->threads, "CPU threads for the reference (default: all)");
  add_max_host_memory_flag(cmd, args->max_host_memory);
  cmd->add_option(
      "--reference", args->reference,
      "the oracle of ours and the peers: cpu, gpu or auto (default; as attn-bench run)");
  cmd->add_option("--peer-deadline", args->peer_deadline,
                  "seconds each peer may take, imports and compile included, before it is stopped "
                  "and recorded as timed_out (default 120; 0: none)");

  CLI::App* import = cmd->add_subcommand(
      "import", "Record a results file the peer runner wrote (tools/peers/run_peers.py --out)");
  import->add_option("results", args->results, "the runner's results file (JSON lines)")
      ->required();
  import->add_option("--db", args->db, "SQLite database (default: $ATTN_DB or ./attn-bench.db)");
  import->add_option("--workload", args->import_workload,
                     "the workload file, when its spec refers to files (traces, layouts, masks) "
                     "that are not where the spec says");
  import->callback([args, &invocation] { invocation.exit_code = import_results(*args, invocation);
});
cmd->callback([args, import, &invocation] {
  if (import->parsed()) return;
  if (args->workload.empty() && args->suite.empty()) {
    throw UsageError(
        "attn-bench peers: name a workload (file or preset) or --suite NAME, or `peers import "
        "FILE`");
  }
  invocation.exit_code = peers(*args, invocation);
});
}  // namespace attn

}  // namespace attn
