// attn-bench run [workload.json | PRESET | --suite NAME]: verify and time every variant that
// supports the workload, each case a Google Benchmark benchmark (apps/gbench_driver.hpp);
// --benchmark_* flags pass through.
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>

#include "apps/case_progress.hpp"
#include "apps/commands.hpp"
#include "apps/database_path.hpp"
#include "apps/gbench_driver.hpp"
#include "apps/interrupt.hpp"
#include "apps/memory_budget.hpp"
#include "apps/module_peers.hpp"
#include "apps/peer_runner_setup.hpp"
#include "apps/policy_flags.hpp"
#include "apps/run_report.hpp"
#include "apps/suite_workloads.hpp"
#include "apps/user_kernels.hpp"
#include "base/build_info.hpp"
#include "base/errors.hpp"
#include "base/progress.hpp"
#include "base/variant_aliases.hpp"
#include "measure/bench_run.hpp"
#include "measure/device_records.hpp"
#include "results/fraction_marker.hpp"
#include "results/store.hpp"
#include "results/table.hpp"
#include "workloads/batch.hpp"
#include "workloads/mask_checks.hpp"
#include "workloads/presets.hpp"
#include "workloads/suites.hpp"

namespace attn {

namespace {

struct RunArgs {
  std::string workload;
  std::string preset;
  std::string suite;
  std::string db;
  std::string variant;
  std::vector<std::string> kernels;  // --kernel: user kernel specs
  std::string config;
  PolicyFlags policy;
  bool repeat_check = false;
  int device = 0;
  bool cpu = false;
  size_t threads = 0;
  std::string reference = "auto";
  std::string max_host_memory;
  std::string format = "table";  // of the run's table: table, csv, md, json (apps/run_report.hpp)
  bool quiet = false;            // the table only: no header lines, no progress
  // --peer-module: Python modules whose peers run beside ours through the peer runner
  std::vector<std::string> peer_modules;
  std::string python, runner;
  double peer_deadline = 120;
};

// The modules' peers of a run: the runner and the runs it listed (before any GPU work), and a work
// folder for each workload's dump.
struct RunModulePeers {
  std::string python;
  std::filesystem::path script;
  std::vector<std::string> modules;
  std::optional<WorkFolder> folder;
  std::vector<std::string> units;  // the runs whose peer --variant matches, in the runner's order
  double deadline_s = 120;
};

void print_batch(const Batch& batch, std::ostream& out) {
  const ModelShape& m = batch.spec.model;
  out << "workload  " << batch.spec.name << " (" << batch.spec_hash.substr(0, 12) << ")\n";
  out << format("batch     %d sequences, %lld query tokens, %lld keys (kv_len %lld..%lld)\n",
                batch.num_seqs, (long long)batch.total_q, (long long)batch.total_kv,
                (long long)*std::min_element(batch.kv_lens.begin(), batch.kv_lens.end()),
                (long long)batch.max_kv_len());
  if (m.latent()) {
    out << format(
        "model     %d q heads, latent attention (kv_lora_rank %d, qk_rope_head_dim %d), %s, "
        "latent cache %s; pages of %d (%s), %lld pages\n",
        m.num_q_heads, m.kv_lora_rank, m.qk_rope_head_dim, to_string(m.dtype).c_str(),
        to_string(batch.kv_dtype).c_str(), batch.page_size,
        to_string(batch.spec.kv_cache.allocation).c_str(), (long long)batch.num_pages);
    return;
  }
  // "head_dim 192 (V 128)" when V is narrower than Q and K.
  const std::string dims = m.effective_v_head_dim() == m.head_dim
                               ? std::to_string(m.head_dim)
                               : format("%d (V %d)", m.head_dim, m.effective_v_head_dim());
  out << format(
      "model     %d q heads, %d kv heads, head_dim %s, %s; pages of %d (%s, %s), %lld pages\n",
      m.num_q_heads, m.num_kv_heads, dims.c_str(), to_string(m.dtype).c_str(), batch.page_size,
      to_string(batch.spec.kv_cache.layout).c_str(),
      to_string(batch.spec.kv_cache.allocation).c_str(), (long long)batch.num_pages);
}

void print_device(const BenchSession& session, std::ostream& out) {
  const DeviceRecord& d = session.device();
  if (session.backend() == "cuda") {
    out << format("device    %s (compute %d.%d, %d SMs, %.1f GiB, driver %s, NVRTC %s)\n",
                  d.name.c_str(), d.cc_major, d.cc_minor, d.sm_count,
                  double(d.memory_bytes) / (1 << 30), d.driver_text().c_str(),
                  d.nvrtc_version.c_str());
  } else {
    out << "device    " << d.name << " (" << d.sm_count << " threads)\n";
  }
  if (!session.backend_note().empty()) out << "note      " << session.backend_note() << "\n";
  out << "reference " << session.reference_name();
  if (session.backend() == "cuda") out << " (" << session.reference_choice() << ")";
  out << "\n";
  if (session.backend() == "cuda" && !session.clock_note().empty()) {
    out << "note      " << session.clock_note() << "\n";
  }
  const MeasurePolicy& p = session.policy();
  out << format(
      "policy    %s: noise <= %.2g%% of the median, %zu..%zu samples, <= %gs per case, "
      "timer %s\n",
      p.name.c_str(), p.noise * 100, p.min_samples, p.max_samples, p.max_seconds,
      to_string(p.timer).c_str());
  out << std::flush;
}

// "read_bw 1.23 TB/s (calibrated 2025-...)" or the advice to calibrate.
void print_ceilings(const BenchSession& session, std::ostream& out) {
  if (session.backend() != "cuda") {
    out << std::endl;
    return;
  }
  const DeviceCeilings& c = session.ceilings();
  if (c.empty()) {
    out << "ceilings  none for this device: fractions of ceiling are not shown; run "
           "`attn-bench calibrate` once to measure them\n";
  } else {
    std::string text;
    for (const auto& [metric, record] : c.by_metric) {
      text += (text.empty() ? "" : ", ") + metric + " " + format("%.1f", record.value);
      if (metric == kBf16Tflops) text += " (" + describe_clock(record) + ")";
    }
    out << "ceilings  " << text << " (calibrated " << c.by_metric.begin()->second.measured_at
        << ")\n";
    if (c.by_metric.count(kBf16Tflops)) {
      const std::string note = unscaled_ceiling_note(c.by_metric.at(kBf16Tflops));
      if (!note.empty()) out << "note      " << note << "\n";
    }
  }
  out << std::endl;
}

ReferenceOracle reference_oracle_from(const RunArgs& args) {
  std::optional<ReferenceOracle> oracle = reference_oracle_from_string(args.reference);
  if (!oracle) throw UsageError("--reference '" + args.reference + "': use cpu, gpu or auto");
  if (*oracle == ReferenceOracle::gpu && args.cpu) {
    throw UsageError("--reference gpu needs the CUDA backend; --cpu verifies against naive_dense");
  }
  return *oracle;
}

BenchOptions bench_options_from(const RunArgs& args) {
  BenchOptions options;
  options.variant_filter = args.variant;
  if (!args.config.empty()) options.config_override = KernelConfig::from_key(args.config);
  options.policy = policy_from(args.policy);
  options.device = args.device;
  options.force_cpu = args.cpu;
  options.cpu_threads = args.threads;
  options.reference = reference_oracle_from(args);
  return options;
}

// One workload's rows, for the table of a suite.
struct SuiteRow {
  std::string workload;
  int64_t run_id = 0;
  BenchRow row;
};

// The outcome of one workload's run.
struct WorkloadOutcome {
  int exit_code = 0;
  bool interrupted = false;
};

// Verifies and times every matching variant on one workload: prints the batch, the device and the
// table, records a run in `store`. The workload was validated and its memory checked by the caller.
WorkloadOutcome run_workload(const Batch& batch, const RunArgs& args, const Invocation& invocation,
                             const BenchOptions& bench_options, const Registry& registry,
                             const std::string& db, Store& store, std::vector<SuiteRow>* suite_rows,
                             RunModulePeers* peers, size_t workload_index) {
  GbenchOptions gbench{invocation.benchmark_args};
  const WorkloadSpec& spec = batch.spec;
  const RunFormat run_format = *run_format_from_string(args.format);  // checked by run()
  // The bar shows each sample of the case in hand; Ctrl-C stops sampling between two samples.
  Progress* progress_now = nullptr;
  std::optional<InterruptHandler> interrupt;
  BenchOptions options = bench_options;
  options.sampling = case_progress_hooks(
      &progress_now, [&interrupt] { return interrupt.has_value() && interrupt->requested(); });

  // With a --benchmark_format, stdout belongs to Google Benchmark's reporter (JSON or CSV must
  // stay parseable); attn-bench's own lines go to stderr then. With --format csv, md or json (or
  // a suite in one of them) the table alone is on stdout, the lines about the batch and device
  // on stderr; --quiet drops them.
  const bool suite_in_a_format = suite_rows != nullptr && run_format != RunFormat::table;
  std::ostream& out = gbench.has_format() || suite_in_a_format ? std::cerr : std::cout;
  std::ostream discarded(nullptr);
  std::ostream& header = args.quiet                                               ? discarded
                         : !gbench.has_format() && run_format == RunFormat::table ? std::cout
                                                                                  : std::cerr;
  print_batch(batch, header);
  BenchSession session = BenchSession::open(batch, options);
  print_device(session, header);
  session.load_ceilings(store);
  print_ceilings(session, header);

  std::vector<std::pair<std::string, BenchCase>> named_cases;
  for (BenchCase& c : session.cases(registry)) {
    named_cases.emplace_back(gbench_name(spec.name, c), std::move(c));
  }
  const bool with_peers = peers && !peers->units.empty();
  if (named_cases.empty() && !with_peers) {
    std::cerr << "attn-bench: no " << session.backend() << " variant matches '" << args.variant
              << "'\n";
    return {to_int(ExitCode::usage), false};
  }
  size_t total = 0;
  for (const auto& [name, c] : named_cases) {
    if (gbench_filter_matches(gbench.filter(), name)) total += size_t(gbench.repetitions());
  }

  const DeviceRecord& device = session.device();
  std::map<std::string, std::string> context = {
      {"attn_tool_version", tool_version()},
      {"attn_git_commit", git_commit()},
      {"attn_build_type", build_type()},
      {"attn_device", device.name},
      {"attn_device_fingerprint", device.fingerprint()},
      {"attn_device_uuid", device.uuid},
      {"attn_backend", session.backend()},
      {"attn_workload", spec.name + " " + batch.spec_hash.substr(0, 12)},
      {"attn_policy", options.policy.name},
  };
  if (device.kind == "gpu") {
    context["attn_device_cc"] =
        std::to_string(device.cc_major) + "." + std::to_string(device.cc_minor);
    context["attn_driver"] = device.driver_version.empty() ? "unknown" : device.driver_version;
    context["attn_driver_cuda"] = device.cuda_driver_version;
    context["attn_nvrtc"] = device.nvrtc_version;
  }
  for (const auto& [metric, record] : session.ceilings().by_metric) {
    context["attn_ceiling_" + metric] = format("%.1f", record.value);
  }

  if (gbench.lists_only()) {
    run_gbench(invocation.argv.front(), gbench, context, named_cases,
               [](const BenchCase&) -> const BenchRow* {
                 throw std::logic_error("--benchmark_list_tests runs nothing");
               });
    return {to_int(ExitCode::ok), false};
  }

  const RunRecord record = run_record("attn-bench run", invocation);
  session.begin(store, record);
  Progress progress(args.quiet ? discarded : std::cerr, total, !args.quiet && stderr_is_terminal());
  progress_now = &progress;
  // Ctrl-C, SIGTERM, SIGHUP: the case in progress finishes and is recorded, the rest are not run,
  // the run is marked interrupted and what ran is printed; a second signal exits at once, closing
  // the run first (apps/interrupt.hpp).
  interrupt.emplace("attn-bench");
  interrupt->close_runs_in(db);
  size_t ran = 0;
  try {
    run_gbench(invocation.argv.front(), gbench, context, named_cases,
               [&](const BenchCase& c) -> const BenchRow* {
                 if (interrupt->requested()) return nullptr;
                 progress.begin(c.full_name);
                 const BenchRow& row =
                     args.repeat_check ? session.repeat_check(c).first : session.measure(c);
                 progress.finish_step();
                 ++ran;
                 return &row;
               });
    if (with_peers && !interrupt->requested()) {
      // The modules' peers on the same batch, each config verified against the same oracle's
      // output and timed under the same policy by the peer runner, recorded in this run.
      progress.clear();
      ModulePeerRunner::Options runner_options;
      runner_options.python = peers->python;
      runner_options.script = peers->script;
      runner_options.modules = peers->modules;
      runner_options.folder =
          peers->folder->path() / ("workload-" + std::to_string(workload_index));
      runner_options.device = session.backend() == "cuda" ? std::to_string(args.device) : "cpu";
      runner_options.deadline_s = peers->deadline_s;
      runner_options.backend = session.backend();
      std::filesystem::create_directories(runner_options.folder);
      const ModulePeerRunner runner(std::move(runner_options), batch, session.reference_output(),
                                    session.reference_name());
      header << "peers     " << peers->units.size() << " runs of --peer-module peers\n"
             << std::flush;
      PeerRunnerOutcome outcome = runner.run(peers->units, options.policy, registry,
                                             [&interrupt] { return interrupt->requested(); });
      for (PeerRow& row : outcome.rows) {
        Measurement& m = row.measurement;
        const std::string name =
            m.variant +
            (m.config_key.empty() ? "" : "." + KernelConfig::from_key(m.config_key).label());
        const Family family = *family_from_string(m.family);
        session.record(name, family, std::move(m));
      }
      if (!outcome.failure.empty()) {
        throw EnvironmentError("--peer-module: " + outcome.failure +
                               " (its output is above; what ran is recorded)");
      }
    }
  } catch (const std::exception& e) {
    session.fail(e.what());  // what ran stays recorded; the run is not left "running"
    throw;
  }
  const bool interrupted = interrupt->requested();
  interrupt.reset();
  const BenchReport& report = session.finish(interrupted);
  progress.clear();  // the table starts on a line of its own
  progress_now = nullptr;
  if (!(suite_in_a_format && args.quiet)) {
    print_report(report, db, out, suite_in_a_format ? RunFormat::table : run_format);
  }
  if (suite_rows) {
    for (const BenchRow& row : report.rows) suite_rows->push_back({spec.name, report.run_id, row});
  }

  if (interrupted) {
    std::cerr << "attn-bench: interrupted: " << ran << " of " << total
              << " cases ran and are recorded in run " << report.run_id << " (status "
              << "'interrupted'); the database is consistent; the rest were not run\n";
    return {to_int(ExitCode::interrupted), true};
  }

  if (report.rows.empty()) {
    std::cerr << "attn-bench: --benchmark_filter '" << gbench.filter() << "' matched no case\n";
    return {to_int(ExitCode::usage), false};
  }
  if (report.any_failed()) return {to_int(ExitCode::failed_cases), false};
  if (!report.any_passed()) {
    std::cerr << "attn-bench: no variant could run this workload (all unsupported)\n";
    return {to_int(ExitCode::failed_cases), false};
  }
  return {to_int(ExitCode::ok), false};
}

// The suite's table: every case of every workload, the fastest passed one of each workload
// marked, with its fraction of the ceiling.
void print_suite_table(const std::string& suite, const std::vector<SuiteRow>& rows,
                       std::ostream& out) {
  std::map<std::string, double> best;
  for (const SuiteRow& r : rows) {
    const Measurement& m = r.row.measurement;
    if (m.disposition != Disposition::passed) continue;
    auto it = best.find(r.workload);
    if (it == best.end() || m.stats.median < it->second) best[r.workload] = m.stats.median;
  }
  TextTable table;
  using A = TextTable::Align;
  table.add_column("workload", A::left);
  table.add_column("variant", A::left);
  table.add_column("status", A::left);
  table.add_column("median_us", A::right);
  table.add_column("GB/s", A::right);
  table.add_column("TFLOP/s", A::right);
  table.add_column("of ceiling", A::right);
  table.add_column("best", A::left);
  // Declined variants are left out (each workload's own table names them and why); a workload
  // that no variant ran keeps one row saying so.
  std::map<std::string, bool> ran;
  for (const SuiteRow& r : rows) {
    ran[r.workload] |= r.row.measurement.disposition != Disposition::unsupported;
  }
  std::map<std::string, bool> shown;
  for (const SuiteRow& r : rows) {
    const Measurement& m = r.row.measurement;
    if (m.disposition == Disposition::unsupported) {
      if (ran[r.workload] || shown[r.workload]) continue;
      shown[r.workload] = true;
      table.add_row({r.workload, "-", "unsupported", "-", "-", "-", "-", ""});
      continue;
    }
    const bool timed = m.disposition == Disposition::passed;
    const bool fastest = timed && best.count(r.workload) && best[r.workload] == m.stats.median;
    table.add_row({r.workload, r.row.full_name, to_string(m.disposition),
                   timed ? format("%.2f", m.stats.median) : "-",
                   timed ? format("%.1f", m.gbps()) : "-", timed ? format("%.3f", m.tflops()) : "-",
                   timed ? fraction_cell(r.row.against) : "-", fastest ? "*" : ""});
  }
  out << "\nsuite     " << suite << ": " << best.size() << " workloads with a passing variant\n";
  table.print(out);
}

int run(const RunArgs& args, const Invocation& invocation) {
  // Everything the user gave is checked before any GPU work: the workloads (a suite's all of
  // them), the options and each workload's host memory.
  std::vector<WorkloadSpec> specs;
  std::string suite_name;
  if (!args.suite.empty()) {
    if (!args.workload.empty() || !args.preset.empty()) {
      throw UsageError("--suite runs the suite's workloads: give no workload or --preset with it");
    }
    GbenchOptions gbench{invocation.benchmark_args};
    if (gbench.has_format() || !gbench.out_file().empty() || gbench.lists_only()) {
      throw UsageError(
          "--suite runs one benchmark set per workload: --benchmark_format, --benchmark_out and "
          "--benchmark_list_tests need a single workload");
    }
    Suite suite = checked_suite(args.suite, args.cpu ? MemoryUse::run_cpu : MemoryUse::run,
                                args.max_host_memory);
    suite_name = suite.name;
    specs = std::move(suite.workloads);
  } else {
    specs.push_back(args.workload.empty()
                        ? load_preset(args.preset.empty() ? "default" : args.preset)
                        : load_workload_argument(args.workload));
    check_mask_limits(specs.front());
    check_host_memory(specs.front(),
                      args.workload.empty() ? "workload " + specs.front().name : args.workload,
                      args.cpu ? MemoryUse::run_cpu : MemoryUse::run, args.max_host_memory);
  }
  const BenchOptions options = bench_options_from(args);
  const std::optional<RunFormat> run_format = run_format_from_string(args.format);
  if (!run_format) throw UsageError("--format '" + args.format + "': use table, csv, md or json");
  // The first batch is built before the database is opened: a workload whose referenced files
  // fail only then leaves no database behind.
  std::optional<Batch> first_batch = generate_batch(specs.front());
  const Registry registry = make_registry_with_user_kernels(args.kernels);
  // The modules' peers, listed by the runner (which imports them) before any GPU work or database
  // write: a module that raises or breaks the protocol is invalid input (exit 3).
  std::optional<RunModulePeers> peers;
  if (!args.peer_modules.empty()) {
    if (args.peer_deadline < 0) throw UsageError("--peer-deadline must be >= 0 (0: no deadline)");
    GbenchOptions gbench{invocation.benchmark_args};
    if (gbench.has_format() || gbench.lists_only()) {
      throw UsageError(
          "--peer-module runs the peers after Google Benchmark's cases: it cannot "
          "be given with --benchmark_format or --benchmark_list_tests");
    }
    peers.emplace();
    peers->modules = checked_peer_modules(args.peer_modules);
    peers->python = peer_runner_python(args.python);
    peers->deadline_s = args.peer_deadline;
    peers->folder.emplace();
    peers->script = peer_runner_script(args.runner, peers->folder->path());
    for (const RunnerPeer& peer :
         list_runner_peers(peers->python, peers->script, peers->folder->path(), peers->modules)) {
      if (peer.name.rfind("peer.user.", 0) == 0 &&
          (args.variant.empty() || variant_glob_match(args.variant, peer.name))) {
        peers->units.push_back(peer.unit);
      }
    }
  }
  if (!args.variant.empty() && registry.matching(args.variant).empty() &&
      !(peers && !peers->units.empty())) {
    throw UsageError("--variant '" + args.variant + "' matches no variant (see `attn-bench list`)");
  }
  const std::string db = results_database_path(args.db);
  Store store(db);
  if (build_type() == "Debug") {
    std::cerr << "attn-bench: WARNING: this is a Debug build; host-side timings are not "
                 "representative\n";
  }

  std::vector<SuiteRow> suite_rows;
  int exit_code = to_int(ExitCode::ok);
  for (size_t i = 0; i < specs.size(); ++i) {
    if (!suite_name.empty() && !args.quiet) {
      print_suite_progress(std::cerr, "attn-bench", suite_name, i, specs.size());
    }
    const Batch batch = i == 0 ? std::move(*first_batch) : generate_batch(specs[i]);
    first_batch.reset();
    const WorkloadOutcome outcome =
        run_workload(batch, args, invocation, options, registry, db, store,
                     suite_name.empty() ? nullptr : &suite_rows, peers ? &*peers : nullptr, i);
    // The first failure's code stands, except that an interruption stops the suite.
    if (exit_code == to_int(ExitCode::ok)) exit_code = outcome.exit_code;
    if (outcome.interrupted) {
      exit_code = outcome.exit_code;
      break;
    }
    if (!suite_name.empty() && i + 1 < specs.size() && !args.quiet) {
      (*run_format == RunFormat::table ? std::cout : std::cerr) << "\n";
    }
  }
  if (!suite_name.empty() && *run_format == RunFormat::table) {
    GbenchOptions gbench{invocation.benchmark_args};
    print_suite_table(suite_name, suite_rows, gbench.has_format() ? std::cerr : std::cout);
  } else if (!suite_name.empty()) {
    // One document for the whole suite on stdout: each row with its workload and run.
    std::vector<WorkloadRow> rows;
    for (const SuiteRow& r : suite_rows) rows.push_back({r.workload, r.run_id, &r.row});
    print_workload_rows(suite_name, rows, db, std::cout, *run_format);
  }
  return exit_code;
}

}  // namespace

void add_run_command(CLI::App& app, Invocation& invocation) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* cmd = app.add_subcommand(
      "run", "Verify and time every variant that supports a workload; record results in SQLite");
  auto* workload = cmd->add_option(
      "workload", args->workload,
      "workload.json or a preset name (a file wins; default: the built-in preset 'default')");
  cmd->add_option("--preset", args->preset, "run a built-in preset (see `attn-bench list`)")
      ->excludes(workload);
  cmd->add_option("--suite", args->suite,
                  "run every workload of a suite (a built-in suite's name or a suite file; "
                  "SUITE#GLOB: the workloads whose names match) and print one combined table");
  cmd->add_option("--db", args->db, "SQLite database (default: $ATTN_DB or ./attn-bench.db)");
  cmd->add_option("--variant", args->variant, "only variants whose name matches this glob");
  add_kernel_spec_flag(cmd, args->kernels);
  add_peer_module_flag(cmd, args->peer_modules);
  add_module_runner_flags(cmd, args->python, args->runner, args->peer_deadline);
  cmd->add_option("--config", args->config,
                  "override config axes of the default config, e.g. tile_tokens=64,warps=4");
  add_policy_flags(cmd, args->policy);
  cmd->add_flag("--repeat-check", args->repeat_check,
                "measure each case twice and report the difference of the medians (A/A noise)");
  cmd->add_option("--device", args->device, "GPU ordinal (default 0)");
  cmd->add_flag("--cpu", args->cpu, "run the CPU backend even when a GPU exists");
  cmd->add_option("--threads", args->threads, "CPU threads for the reference (default: all)");
  add_max_host_memory_flag(cmd, args->max_host_memory);
  cmd->add_option("--format", args->format,
                  "the run's table: table (default), csv, md or json; csv, md and json print the "
                  "table alone on stdout (one for a whole --suite; independent of "
                  "--benchmark_format)");
  cmd->add_flag("-q,--quiet", args->quiet,
                "print the table only: no lines about the batch and device, no progress");
  cmd->add_option("--reference", args->reference,
                  "oracle that verifies GPU variants: cpu (double precision), gpu (naive fp32 "
                  "kernel) or auto (gpu above a work threshold; default)");
  cmd->callback([args, &invocation] { invocation.exit_code = run(*args, invocation); });
}

}  // namespace attn
