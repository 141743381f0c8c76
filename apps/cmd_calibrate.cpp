// attn-bench calibrate: measures the device's ceilings (read and copy bandwidth, bf16 tensor-core
// rate) with our own kernels (measure/calibration.hpp) and stores them in the results database,
// keyed by the device fingerprint. Every kernel parameter is an option, for tuning on the device.
#include <iostream>
#include <memory>

#include "apps/commands.hpp"
#include "apps/database_path.hpp"
#include "base/build_info.hpp"
#include "base/errors.hpp"
#include "measure/calibration.hpp"
#include "measure/device_records.hpp"
#include "results/store.hpp"
#include "results/table.hpp"

namespace attn {

namespace {

struct CalibrateArgs {
  std::string db;
  std::string policy = "confirm";
  int device = 0;
  CalibrationOptions options;
  size_t stream_mib = 1024;
};

int calibrate(CalibrateArgs args) {
  std::optional<MeasurePolicy> policy = named_policy(args.policy);
  if (!policy) throw UsageError("--policy '" + args.policy + "': use screen or confirm");
  args.options.policy = *policy;
  args.options.stream_bytes = args.stream_mib << 20;
  const DeviceDiscovery found = discover_devices();
  if (found.devices.empty()) {
    throw EnvironmentError("attn-bench calibrate needs a GPU: " + found.why_none);
  }
  if (args.device < 0 || args.device >= int(found.devices.size())) {
    throw UsageError("--device " + std::to_string(args.device) + ": this machine has " +
                     std::to_string(found.devices.size()) + " GPU(s)");
  }
  const DeviceInfo& info = found.devices[size_t(args.device)];
  if (const std::string problem = check_calibration_options(args.options, info.arch());
      !problem.empty()) {
    throw UsageError(problem);
  }
  const std::string db = results_database_path(args.db);
  Store store(db);
  JitCompiler jit;
  CudaContext context(found.api, info);
  const DeviceRecord device = device_record(info, jit.nvrtc_version());
  std::cout << format("device    %s (compute %d.%d, %d SMs, %.0f MiB L2, %.0f GB/s theoretical)\n",
                      info.name.c_str(), info.cc_major, info.cc_minor, info.sm_count,
                      double(info.l2_bytes) / (1 << 20), info.theoretical_bandwidth_gbps());
  std::cout << "policy    " << args.options.policy.name << "\n" << std::endl;

  const std::vector<CalibrationEntry> entries = calibrate_device(
      context, jit, args.options,
      [](const std::string& line) { std::cerr << "attn-bench: " << line << std::endl; });

  store.upsert_device(device);
  TextTable table;
  using A = TextTable::Align;
  table.add_column("ceiling", A::left);
  table.add_column("value", A::right);
  table.add_column("median_us", A::right);
  table.add_column("n", A::right);
  table.add_column("noise", A::right);
  table.add_column("SM MHz", A::right);
  table.add_column("method", A::left);
  bool any_failed = false;
  for (const CalibrationEntry& e : entries) {
    const Measurement& m = e.measurement;
    if (!e.error.empty()) {
      any_failed = true;
      table.add_row({e.ceiling.metric, "-", "-", "-", "-", "-", e.error});
      continue;
    }
    store.add_ceiling(device.fingerprint(), e.ceiling);
    const bool tflops = e.ceiling.metric == kBf16Tflops;
    table.add_row({e.ceiling.metric,
                   format(tflops ? "%.1f TFLOP/s" : "%.1f GB/s", e.ceiling.value) +
                       (e.ceiling.unstable ? " (unstable)" : ""),
                   format("%.1f", m.stats.median), std::to_string(m.stats.count),
                   format("%.2f%%", m.timing.noise * 100),
                   e.ceiling.sm_clock_mhz ? format("%.0f", *e.ceiling.sm_clock_mhz) : "-",
                   e.ceiling.method});
    if (e.ceiling.unstable)
      std::cerr << "attn-bench: " << e.ceiling.metric << ": unstable: " << m.unstable_reason
                << "\n";
  }
  table.print(std::cout);
  std::cout << "\nstored in " << db << " for device " << device.fingerprint().substr(0, 12)
            << " (see `attn-bench devices --db " << db << "`)\n";
  return any_failed ? to_int(ExitCode::failed_cases) : 0;
}

}  // namespace

void add_calibrate_command(CLI::App& app, Invocation& invocation) {
  auto args = std::make_shared<CalibrateArgs>();
  CalibrationOptions& o = args->options;
  CLI::App* cmd = app.add_subcommand(
      "calibrate",
      "Measure this GPU's read/copy bandwidth and bf16 tensor-core rate; store them as ceilings");
  cmd->add_option("--db", args->db, "SQLite database (default: $ATTN_DB or ./attn-bench.db)");
  cmd->add_option("--device", args->device, "GPU ordinal (default 0)");
  cmd->add_option("--policy", args->policy, "measurement policy (default confirm)");
  cmd->add_option("--stream-mib", args->stream_mib, "buffer size of the bandwidth kernels (1024)");
  cmd->add_option("--stream-threads", o.stream_threads, "threads per block (256)");
  cmd->add_option("--stream-unroll", o.stream_unroll, "16-byte loads in flight per thread (4)");
  cmd->add_option("--blocks-per-sm", o.stream_blocks_per_sm, "blocks per SM of the grid (4)");
  cmd->add_option("--gemm", o.gemm_kernel, "auto (wgmma on sm_90a), wgmma or mma_sync");
  cmd->add_option("--gemm-size", o.gemm_size, "m = n = k of the GEMM (8192)");
  cmd->add_option("--gemm-bn", o.gemm_bn, "wgmma: tile columns, 128 or 256 (256)");
  cmd->add_option("--gemm-consumers", o.gemm_consumers, "wgmma: consumer warpgroups, 1 or 2 (2)");
  cmd->add_option("--gemm-stages", o.gemm_stages, "wgmma: TMA buffers in flight (4)");
  cmd->add_option("--gemm-group-m", o.gemm_group_m, "wgmma: row-tiles per L2 group (8)");
  cmd->add_option("--mma-stages", o.mma_stages, "mma_sync: cp.async buffers in flight (4)");
  cmd->add_flag("--skip-gemm", o.skip_gemm, "measure the bandwidths only");
  cmd->callback([args, &invocation] { invocation.exit_code = calibrate(*args); });
}

}  // namespace attn
