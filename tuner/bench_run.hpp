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
  std::string variant_filter;                   // glob over variant names; empty: all
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
  int64_t run_id = 0;
  std::vector<BenchRow> rows;
  bool any_failed() const;  // some row is incorrect or failed to compile/launch
  bool any_passed() const;
};

// One backend chosen for a batch: the first GPU (or --device), else the CPU. Opening it creates the
// CUDA context and uploads the batch's data, so nothing here runs before the caller has validated
// its input.
class BenchSession {
 public:
  static BenchSession open(const Batch& batch, const BenchOptions& options);
  BenchSession(BenchSession&&) noexcept;
  ~BenchSession();

  const std::string& backend() const { return backend_; }
  const std::string& backend_note() const { return backend_note_; }
  const DeviceRecord& device() const { return device_; }

  // Runs every matching variant of this backend; `progress` receives one line before each case is
  // prepared (so a hang can be attributed). Each result is stored as soon as it exists.
  BenchReport run(const Registry& registry, Store& store, const RunRecord& run,
                  const std::function<void(const std::string&)>& progress);

 private:
  BenchSession(const Batch& batch, const BenchOptions& options);
  struct State;
  const Batch& batch_;
  BenchOptions options_;
  std::string backend_, backend_note_;
  DeviceRecord device_;
  std::unique_ptr<State> state_;
};

}  // namespace attn
