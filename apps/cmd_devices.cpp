// attn-bench devices [--json]: the driver (its version from NVML, the CUDA version it supports),
// the GPUs it reports (or plainly that there are none), with the ceilings `attn-bench calibrate`
// stored for each; as text, or as one JSON object for scripts.
#include <filesystem>
#include <iostream>
#include <memory>

#include "apps/commands.hpp"
#include "apps/database_path.hpp"
#include "kernels/device/cuda_context.hpp"
#include "kernels/jit/jit_compiler.hpp"
#include "measure/device_records.hpp"
#include "measure/nvml_monitor.hpp"
#include "results/device_json.hpp"
#include "results/store.hpp"
#include "results/table.hpp"

namespace attn {

namespace {

// The ceilings `attn-bench calibrate` stored for this device, or how to get them. The database is
// only read when it exists, read-only: `devices` never creates or changes one.
void print_ceilings(const DeviceInfo& d, const std::string& nvrtc_version, const std::string& db) {
  if (!std::filesystem::exists(db)) {
    std::cout << "    ceilings             none (no database " << db
              << "): run `attn-bench calibrate`\n";
    return;
  }
  const Store store(db, StoreAccess::read_only);
  const DeviceCeilings c = store.ceilings(device_record(d, nvrtc_version).fingerprint());
  if (c.empty()) {
    std::cout << "    ceilings             none in " << db << ": run `attn-bench calibrate`\n";
    return;
  }
  for (const auto& [metric, r] : c.by_metric) {
    std::cout << format("    %-20s %.1f %s%s  (%s, %s, attn-bench %s, %s)\n", metric.c_str(),
                        r.value, metric == kBf16Tflops ? "TFLOP/s" : "GB/s",
                        r.unstable ? " unstable" : "", describe_clock(r).c_str(),
                        r.measured_at.c_str(), r.tool_version.c_str(), r.method.c_str());
  }
}

// The stored ceilings of a device, or null when there is no database or none for it.
nlohmann::ordered_json ceilings_or_null(const DeviceInfo& d, const std::string& nvrtc_version,
                                        const std::string& db) {
  if (nvrtc_version.empty() || !std::filesystem::exists(db)) return nullptr;
  const Store store(db, StoreAccess::read_only);
  const DeviceCeilings c = store.ceilings(device_record(d, nvrtc_version).fingerprint());
  if (c.empty()) return nullptr;
  return ceilings_json(c);
}

// The same facts as `devices`, as one JSON object: "gpus" (empty without one, and "no_gpu" says
// why), "driver", "nvrtc" and, per GPU, its fingerprint and "ceilings" (null when not calibrated).
void devices_json(const std::string& db_flag) {
  const DeviceDiscovery found = discover_devices();
  nlohmann::ordered_json out;
  std::string nvrtc_version, nvrtc_problem;
  nlohmann::ordered_json nvrtc;
  try {
    JitCompiler jit;
    nvrtc_version = jit.nvrtc_version();
    nvrtc = {{"version", nvrtc_version},
             {"library", jit.nvrtc_library()},
             {"jit_cache", jit.cache_dir()}};
  } catch (const EnvironmentError& e) {
    nvrtc = {{"unavailable", e.what()}};
  }
  if (found.devices.empty()) {
    out["driver"] = nullptr;
    out["no_gpu"] = found.why_none;
  } else {
    std::string why_not;
    const std::string driver = nvml_driver_version(&why_not);
    nlohmann::ordered_json version = nullptr;  // NVML's, or null when it cannot be read
    if (!driver.empty()) version = driver;
    out["driver"] = nlohmann::ordered_json::object();
    out["driver"]["version"] = version;
    out["driver"]["supports_cuda"] = format_cuda_version(found.devices[0].driver_version);
    out["driver"]["built_with_cuda"] = format_cuda_version(CUDA_VERSION);
  }
  out["gpus"] = nlohmann::ordered_json::array();
  const std::string db = results_database_path(db_flag);
  for (const DeviceInfo& d : found.devices) {
    nlohmann::ordered_json gpu = {
        {"ordinal", d.ordinal},
        {"name", d.name},
        {"uuid", d.uuid},
        {"compute_capability", std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor)},
        {"jit_target", d.arch()},
        {"multiprocessors", d.sm_count},
        {"memory_bytes", d.total_memory},
        {"memory_bus_bits", d.memory_bus_bits},
        {"memory_clock_mhz", d.memory_clock_khz / 1e3},
        {"theoretical_gbps", d.theoretical_bandwidth_gbps()},
        {"l2_bytes", d.l2_bytes},
        {"sm_clock_mhz", d.sm_clock_khz / 1e3},
        {"shared_memory_per_block_optin", d.max_shared_per_block_optin}};
    if (!nvrtc_version.empty()) gpu["fingerprint"] = device_record(d, nvrtc_version).fingerprint();
    gpu["ceilings"] = ceilings_or_null(d, nvrtc_version, db);
    out["gpus"].push_back(std::move(gpu));
  }
  out["nvrtc"] = nvrtc;
  std::cout << out.dump(2) << "\n";
}

void devices(const std::string& db_flag) {
  const DeviceDiscovery found = discover_devices();
  std::string nvrtc_version;  // part of the device fingerprint the ceilings are keyed by
  try {
    nvrtc_version = JitCompiler().nvrtc_version();
  } catch (const EnvironmentError&) {
  }
  if (found.devices.empty()) {
    std::cout << "no GPU: " << found.why_none << "\n";
  } else {
    std::string why_not;
    const std::string driver = nvml_driver_version(&why_not);
    std::cout << "driver " << (driver.empty() ? "unknown (" + why_not + ")" : driver)
              << ", supports CUDA " << format_cuda_version(found.devices[0].driver_version)
              << "; built with CUDA " << format_cuda_version(CUDA_VERSION) << "\n";
    for (const DeviceInfo& d : found.devices) {
      std::cout << format("\n[%d] %s\n", d.ordinal, d.name.c_str());
      std::cout << format("    uuid                 %s\n", d.uuid.c_str());
      std::cout << format("    compute capability   %d.%d (JIT target %s)\n", d.cc_major,
                          d.cc_minor, d.arch().c_str());
      std::cout << format("    multiprocessors      %d\n", d.sm_count);
      std::cout << format(
          "    memory               %.1f GiB, %d-bit bus, %.0f MHz (%.0f GB/s theoretical)\n",
          double(d.total_memory) / (1 << 30), d.memory_bus_bits, d.memory_clock_khz / 1e3,
          d.theoretical_bandwidth_gbps());
      std::cout << format("    L2 cache             %.1f MiB\n", double(d.l2_bytes) / (1 << 20));
      std::cout << format("    SM clock             %.0f MHz\n", d.sm_clock_khz / 1e3);
      std::cout << format("    shared memory/block  %d KiB (opt-in)\n",
                          d.max_shared_per_block_optin / 1024);
      if (!nvrtc_version.empty()) print_ceilings(d, nvrtc_version, results_database_path(db_flag));
    }
  }
  try {
    JitCompiler jit;
    std::cout << "\nNVRTC " << jit.nvrtc_version() << " (" << jit.nvrtc_library() << "), JIT cache "
              << jit.cache_dir() << "\n";
  } catch (const EnvironmentError& e) {
    std::cout << "\nNVRTC unavailable: " << e.what() << "\n";
  }
}
}  // namespace

void add_devices_command(CLI::App& app, Invocation& invocation) {
  auto db = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand(
      "devices", "List the GPUs (or say that there are none) and their calibrated ceilings");
  cmd->add_option("--db", *db,
                  "SQLite database with ceilings (default: $ATTN_DB or ./attn-bench.db)");
  cmd->add_flag("--json", *json, "one JSON object instead of text (for scripts)");
  cmd->callback([db, json, &invocation] {
    if (*json) {
      devices_json(*db);
    } else {
      devices(*db);
    }
    invocation.exit_code = 0;
  });
}

}  // namespace attn
