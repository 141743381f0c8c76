// One `attn-bench run`: the cases (variant, config) that match the filter on the chosen backend,
// each prepared, verified and timed by the Evaluator and written to the store as soon as it exists.
// The caller (apps/cmd_run.cpp, through Google Benchmark) decides the order and repetitions.
// Without a GPU (or with force_cpu) the CPU backend runs the CPU reference variant.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/kernel_config.hpp"
#include "base/sample_statistics.hpp"
#include "kernels/registry.hpp"
#include "measure/reference_oracle.hpp"
#include "measure/sampler.hpp"
#include "measure/timing_policy.hpp"
#include "results/ceilings.hpp"
#include "results/records.hpp"
#include "results/store.hpp"
#include "workloads/batch.hpp"

namespace attn {

struct BenchOptions {
  std::string variant_filter;                   // glob over variant names; empty: all
  std::optional<KernelConfig> config_override;  // axes set here replace the default config's
  MeasurePolicy policy = confirm_policy();
  int device = 0;          // GPU ordinal
  bool force_cpu = false;  // run the CPU backend even when a GPU exists
  size_t cpu_threads = 0;
  std::string jit_cache_dir;                               // empty: the JIT's default
  ReferenceOracle reference = ReferenceOracle::automatic;  // the oracle of CUDA evaluations
  // Each timing sample of a case is heard, and sampling may stop between two (measure/sampler.hpp):
  // the progress within a long case, and Ctrl-C within a second instead of after the case.
  SamplingHooks sampling;
};

struct BenchCase {
  const Variant* variant = nullptr;
  KernelConfig config;
  std::string full_name;  // variant name + config label
};

struct BenchRow {
  std::string full_name;
  int64_t measurement_id = 0;
  Measurement measurement;
  // The measurement against its family's ceiling on this device, with the datasheet peak and what
  // explains a fraction above 100% (results/fraction_marker.hpp); no fraction when not timed or
  // not calibrated.
  CeilingFraction against;
};

// The A/A noise floor of one case: measured twice in a row in one process.
struct RepeatCheck {
  BenchRow first, second;
  Comparison comparison;  // of the kept samples; relative_difference of the medians
};

struct BenchReport {
  int64_t run_id = 0;
  std::vector<BenchRow> rows;
  std::vector<RepeatCheck> repeat_checks;
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
  const std::string& clock_note() const;
  const DeviceRecord& device() const { return device_; }
  const MeasurePolicy& policy() const { return options_.policy; }
  // The oracle that verifies every case ("cpu_reference", "gpu_tiled_fp32", "naive_dense").
  const std::string& reference_name() const;
  // Why: "--reference gpu" or "auto: visible pairs x head_dim 6.9e+10 >= 3.2e+09".
  std::string reference_choice() const;

  // The matching cases of this backend, each at its default config (with the override applied).
  std::vector<BenchCase> cases(const Registry& registry) const;

  // Starts a run in the store and loads the device's ceilings (empty when never calibrated).
  void begin(Store& store, const RunRecord& run);
  const DeviceCeilings& ceilings() const { return ceilings_; }
  // Loads the device's ceilings without starting a run, so they can be printed (and put in the
  // Google Benchmark context) before the first case.
  void load_ceilings(Store& store);
  // Measures one case and records it at once.
  const BenchRow& measure(const BenchCase& bench_case);
  // Measures one case twice and records both and their comparison.
  const RepeatCheck& repeat_check(const BenchCase& bench_case);
  // The oracle's output for the batch ([total_q, num_q_heads, v_head_dim] floats, by
  // reference_name()'s oracle), computed once: what verifies every case. `attn-bench peers` writes
  // it into the dump the peers are verified against.
  const std::vector<float>& reference_output();
  // Records a measurement made outside this session (a peer, measure/peer_results.hpp) in this run,
  // on this device and workload, set against the ceiling of `family`; it joins the report's rows.
  const BenchRow& record(const std::string& full_name, Family family, Measurement measurement);
  // Closes the run ("completed" or "failed_cases"; "interrupted" when the caller stopped early)
  // and returns everything measured.
  const BenchReport& finish(bool interrupted = false);
  // Closes the run as "error: <reason>" when the caller cannot go on (an exception between begin()
  // and finish()), so that it does not stay "running". Never throws: it is called while an
  // exception is on its way up, and the database may be what failed (the next writer then closes
  // the run as interrupted).
  void fail(const std::string& reason) noexcept;

 private:
  BenchSession(const Batch& batch, const BenchOptions& options);
  BenchRow measure_and_store(const BenchCase& bench_case);
  // Sets row.measurement's ceiling and fraction, and row.against.
  void set_against_ceiling(Family family, BenchRow& row) const;
  struct State;
  const Batch& batch_;
  BenchOptions options_;
  std::string backend_, backend_note_;
  DeviceRecord device_;
  DeviceCeilings ceilings_;
  Store* store_ = nullptr;
  int64_t device_id_ = 0, workload_id_ = 0;
  BenchReport report_;
  std::unique_ptr<State> state_;
};

}  // namespace attn
