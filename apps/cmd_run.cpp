// attn-bench run [workload.json | PRESET]: verify and time every variant that supports the
// workload.
#include <iostream>
#include <memory>

#include "apps/commands.hpp"
#include "base/build_info.hpp"
#include "base/errors.hpp"
#include "results/store.hpp"
#include "results/table.hpp"
#include "tuner/bench_run.hpp"
#include "tuner/device_records.hpp"
#include "workloads/batch.hpp"
#include "workloads/presets.hpp"

namespace attn {

namespace {

struct RunArgs {
  std::string workload;
  std::string preset;
  std::string db;
  std::string variant;
  std::string config;
  int samples = 30;
  int warmup = 3;
  bool no_flush_l2 = false;
  int device = 0;
  bool cpu = false;
  size_t threads = 0;
};

std::string database_path(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("ATTN_DB"); env && *env) return env;
  return "attn-bench.db";
}

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
    out << format("device    %s (compute %d.%d, %d SMs, %.1f GiB, driver CUDA %s, NVRTC %s)\n",
                  d.name.c_str(), d.cc_major, d.cc_minor, d.sm_count,
                  double(d.memory_bytes) / (1 << 30), d.driver_version.c_str(),
                  d.nvrtc_version.c_str());
  } else {
    out << "device    " << d.name << " (" << d.sm_count << " threads)\n";
  }
  if (!session.backend_note().empty()) out << "note      " << session.backend_note() << "\n";
  out << std::endl;
}

void print_report(const BenchReport& report, const std::string& db, std::ostream& out) {
  TextTable table;
  using A = TextTable::Align;
  table.add_column("variant", A::left);
  table.add_column("status", A::left);
  table.add_column("median_us", A::right);
  table.add_column("p10..p90_us", A::right);
  table.add_column("n", A::right);
  table.add_column("GB/s", A::right);
  table.add_column("TFLOP/s", A::right);
  table.add_column("rel_err", A::right);
  std::vector<std::string> notes;
  for (const auto& row : report.rows) {
    const Measurement& m = row.measurement;
    const bool timed = m.disposition == Disposition::passed;
    table.add_row({row.full_name, to_string(m.disposition),
                   timed ? format("%.2f", m.stats.median) : "-",
                   timed ? format("%.2f..%.2f", m.stats.p10, m.stats.p90) : "-",
                   timed ? std::to_string(m.stats.count) : "-",
                   timed ? format("%.1f", m.gbps()) : "-", timed ? format("%.3f", m.tflops()) : "-",
                   m.verification.checked ? format("%.1e", m.verification.rel_l2_error) : "-"});
    if (!m.reason.empty()) notes.push_back(row.full_name + ": " + m.reason);
  }
  table.print(out);
  for (const auto& note : notes) out << "\n" << note << "\n";
  out << "\nrecorded  run " << report.run_id << " in " << db << " (policy "
      << (report.rows.empty() ? "-" : report.rows.front().measurement.policy) << ")\n";
}

int run(const RunArgs& args, const Invocation& invocation) {
  // Everything the user gave is checked before any GPU work.
  const WorkloadSpec spec = args.workload.empty()
                                ? load_preset(args.preset.empty() ? "default" : args.preset)
                                : load_workload_argument(args.workload);
  BenchOptions options;
  options.variant_filter = args.variant;
  if (!args.config.empty()) options.config_override = KernelConfig::from_key(args.config);
  if (args.samples < 1) throw UsageError("--samples must be at least 1");
  if (args.warmup < 0) throw UsageError("--warmup must not be negative");
  options.policy.samples = args.samples;
  options.policy.warmup = args.warmup;
  options.policy.flush_l2 = !args.no_flush_l2;
  options.device = args.device;
  options.force_cpu = args.cpu;
  options.cpu_threads = args.threads;

  const Batch batch = generate_batch(spec);
  const Registry registry = make_registry();
  if (!args.variant.empty() && registry.matching(args.variant).empty()) {
    throw UsageError("--variant '" + args.variant + "' matches no variant (see `attn-bench list`)");
  }
  const std::string db = database_path(args.db);
  Store store(db);

  if (build_type() == "Debug") {
    std::cerr << "attn-bench: WARNING: this is a Debug build; host-side timings are not "
                 "representative\n";
  }
  print_batch(batch, std::cout);
  BenchSession session = BenchSession::open(batch, options);
  print_device(session, std::cout);
  RunRecord record{"attn-bench run",
                   tool_version(),
                   git_commit(),
                   build_type(),
                   quote_command_line(invocation.argv),
                   host_name(),
                   utc_timestamp_now()};
  const BenchReport report = session.run(registry, store, record, [](const std::string& line) {
    std::cerr << "attn-bench: " << line << std::endl;
  });
  print_report(report, db, std::cout);

  if (report.rows.empty()) {
    std::cerr << "attn-bench: no " << session.backend() << " variant matches '" << args.variant
              << "'\n";
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
  cmd->add_option("--samples", args->samples, "timed samples per case (default 30)");
  cmd->add_option("--warmup", args->warmup, "untimed launches before sampling (default 3)");
  cmd->add_flag("--no-flush-l2", args->no_flush_l2, "do not flush the L2 cache between samples");
  cmd->add_option("--device", args->device, "GPU ordinal (default 0)");
  cmd->add_flag("--cpu", args->cpu, "run the CPU backend even when a GPU exists");
  cmd->add_option("--threads", args->threads, "CPU threads for the reference (default: all)");
  cmd->callback([args, &invocation] { invocation.exit_code = run(*args, invocation); });
}

}  // namespace attn
