// One `attn-bench run`: every variant that matches the filter and supports the batch is prepared,
// verified and timed on one backend, and each result is written to the store as it is produced.
// Without a GPU (or with force_cpu) the CPU backend runs the CPU reference variant.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kernels/kernel_config.hpp"
#include "kernels/registry.hpp"
#include "results/records.hpp"
#include "results/store.hpp"
#include "tuner/timing.hpp"
#include "workloads/batch.hpp"

namespace attn {

struct BenchOptions {
  std::string variant_filter;                 // glob over variant names; empty: all
  std::optional<KernelConfig> config_override;  // axes set here replace the default config's
  TimingPolicy policy;
  int device = 0;          // GPU ordinal
  bool force_cpu = false;  // run the CPU backend even when a GPU exists
  size_t cpu_threads = 0;
  std::string jit_cache_dir;  // empty: the JIT's default
};

struct BenchRow {
  std::string full_name;  // variant name + config label
  Measurement measurement;
};

struct BenchReport {
  std::string backend;       // "cuda" or "cpu"
  std::string backend_note;  // why the CPU backend ran, when it did
  DeviceRecord device;
  int64_t run_id = 0;
  std::vector<BenchRow> rows;
  bool any_failed() const;   // some row is incorrect or failed to compile/launch
  bool any_passed() const;
};

// `progress` receives one line before each case is prepared (so a hang can be attributed).
BenchReport run_benchmark(const Batch& batch, const Registry& registry, const BenchOptions& options,
                          Store& store, const RunRecord& run,
                          const std::function<void(const std::string&)>& progress);

}  // namespace attn
