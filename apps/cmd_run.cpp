// attn-bench run [workload.json | PRESET]: verify and time every variant that supports the
// workload, each case a Google Benchmark benchmark (apps/gbench_driver.hpp); --benchmark_* flags
// pass through.
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
#include "apps/policy_flags.hpp"
#include "apps/run_report.hpp"
#include "base/build_info.hpp"
#include "base/errors.hpp"
#include "base/progress.hpp"
#include "measure/bench_run.hpp"
#include "measure/device_records.hpp"
#include "results/fraction_marker.hpp"
#include "results/store.hpp"
#include "results/table.hpp"
#include "workloads/batch.hpp"
#include "workloads/mask_checks.hpp"
#include "workloads/presets.hpp"

namespace attn {

namespace {

struct RunArgs {
  std::string workload;
  std::string preset;
  std::string db;
  std::string variant;
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
};

void print_batch(const Batch& batch, std::ostream& out) {
  const ModelShape& m = batch.spec.model;
  out << "workload  " << batch.spec.name << " (" << batch.spec_hash.substr(0, 12) << ")\n";
  out << format("batch     %d sequences, %lld query tokens, %lld keys (kv_len %lld..%lld)\n",
                batch.num_seqs, (long long)batch.total_q, (long long)batch.total_kv,
                (long long)*std::min_element(batch.kv_lens.begin(), batch.kv_lens.end()),
                (long long)batch.max_kv_len());
  out << format(
      "model     %d q heads, %d kv heads, head_dim %d, %s; pages of %d (%s, %s), %lld pages\n",
      m.num_q_heads, m.num_kv_heads, m.head_dim, to_string(m.dtype).c_str(), batch.page_size,
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

int run(const RunArgs& args, const Invocation& invocation) {
  // Everything the user gave is checked before any GPU work.
  const WorkloadSpec spec = args.workload.empty()
                                ? load_preset(args.preset.empty() ? "default" : args.preset)
                                : load_workload_argument(args.workload);
  BenchOptions options;
  options.variant_filter = args.variant;
  if (!args.config.empty()) options.config_override = KernelConfig::from_key(args.config);
  options.policy = policy_from(args.policy);
  options.device = args.device;
  options.force_cpu = args.cpu;
  options.cpu_threads = args.threads;
  options.reference = reference_oracle_from(args);
  const std::optional<RunFormat> run_format = run_format_from_string(args.format);
  if (!run_format) throw UsageError("--format '" + args.format + "': use table, csv, md or json");
  // The bar shows each sample of the case in hand; Ctrl-C stops sampling between two samples.
  Progress* progress_now = nullptr;
  std::optional<InterruptHandler> interrupt;
  options.sampling = case_progress_hooks(
      &progress_now, [&interrupt] { return interrupt.has_value() && interrupt->requested(); });
  GbenchOptions gbench{invocation.benchmark_args};

  // The host memory the run will hold, against the budget, before anything is allocated.
  check_mask_limits(spec);
  check_host_memory(spec, args.workload.empty() ? "preset " + spec.name : args.workload,
                    args.cpu ? MemoryUse::run_cpu : MemoryUse::run, args.max_host_memory);
  const Batch batch = generate_batch(spec);
  const Registry registry = make_registry();
  if (!args.variant.empty() && registry.matching(args.variant).empty()) {
    throw UsageError("--variant '" + args.variant + "' matches no variant (see `attn-bench list`)");
  }
  const std::string db = results_database_path(args.db);
  Store store(db);

  // With a --benchmark_format, stdout belongs to Google Benchmark's reporter (JSON or CSV must
  // stay parseable); attn-bench's own lines go to stderr then. With --format csv, md or json the
  // table alone is on stdout, the lines about the batch and device on stderr; --quiet drops them.
  std::ostream& out = gbench.has_format() ? std::cerr : std::cout;
  std::ostream discarded(nullptr);
  std::ostream& header = args.quiet                                               ? discarded
                         : gbench.has_format() || *run_format != RunFormat::table ? std::cerr
                                                                                  : std::cout;
  if (build_type() == "Debug") {
    std::cerr << "attn-bench: WARNING: this is a Debug build; host-side timings are not "
                 "representative\n";
  }
  print_batch(batch, header);
  BenchSession session = BenchSession::open(batch, options);
  print_device(session, header);
  session.load_ceilings(store);
  print_ceilings(session, header);

  std::vector<std::pair<std::string, BenchCase>> named_cases;
  for (BenchCase& c : session.cases(registry)) {
    named_cases.emplace_back(gbench_name(spec.name, c), std::move(c));
  }
  if (named_cases.empty()) {
    std::cerr << "attn-bench: no " << session.backend() << " variant matches '" << args.variant
              << "'\n";
    return to_int(ExitCode::usage);
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
    return to_int(ExitCode::ok);
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
  } catch (const std::exception& e) {
    session.fail(e.what());  // what ran stays recorded; the run is not left "running"
    throw;
  }
  const bool interrupted = interrupt->requested();
  interrupt.reset();
  const BenchReport& report = session.finish(interrupted);
  progress.clear();  // the table starts on a line of its own
  progress_now = nullptr;
  print_report(report, db, out, *run_format);

  if (interrupted) {
    std::cerr << "attn-bench: interrupted: " << ran << " of " << total
              << " cases ran and are recorded in run " << report.run_id << " (status "
              << "'interrupted'); the database is consistent; the rest were not run\n";
    return to_int(ExitCode::interrupted);
  }

  if (report.rows.empty()) {
    std::cerr << "attn-bench: --benchmark_filter '" << gbench.filter() << "' matched no case\n";
    return to_int(ExitCode::usage);
  }
  if (report.any_failed()) return to_int(ExitCode::failed_cases);
  if (!report.any_passed()) {
    std::cerr << "attn-bench: no variant could run this workload (all unsupported)\n";
    return to_int(ExitCode::failed_cases);
  }
  return to_int(ExitCode::ok);
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
  cmd->add_option("--db", args->db, "SQLite database (default: $ATTN_DB or ./attn-bench.db)");
  cmd->add_option("--variant", args->variant, "only variants whose name matches this glob");
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
                  "table alone on stdout (independent of --benchmark_format)");
  cmd->add_flag("-q,--quiet", args->quiet,
                "print the table only: no lines about the batch and device, no progress");
  cmd->add_option("--reference", args->reference,
                  "oracle that verifies GPU variants: cpu (double precision), gpu (naive fp32 "
                  "kernel) or auto (gpu above a work threshold; default)");
  cmd->callback([args, &invocation] { invocation.exit_code = run(*args, invocation); });
}

}  // namespace attn
