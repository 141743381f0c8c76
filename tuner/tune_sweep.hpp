// TuneSweep: attn-tune tune for one workload on one backend. For each matching variant: build and
// prune its space, keep this shard's configs, and let the strategy propose trials under the budget.
// Each trial whose (workload, device, variant, config, policy) is already in the database is
// answered from it (resume); any other is evaluated with an attempt row written before and
// finished after, and its measurement stored at once. A config with `quarantine_after` attempts
// that never came back, crashed or timed out is not tried again. At the end the winner of each
// variant and over all variants is chosen from the confirm-policy results (tuner/winner.hpp) and
// stored with the configs tied with it.
//
// The evaluation itself is behind CaseEvaluator, so the same sweep runs with the in-process
// Evaluator (attn-tune tune) or anything a test supplies.
#pragma once

#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "kernels/registry.hpp"
#include "results/store.hpp"
#include "tuner/search_space.hpp"
#include "tuner/shard.hpp"
#include "tuner/strategy.hpp"
#include "tuner/winner.hpp"
#include "workloads/batch.hpp"

namespace attn {

class CaseEvaluator {
 public:
  virtual ~CaseEvaluator() = default;
  virtual Measurement evaluate(const Variant& variant, const KernelConfig& config,
                               const MeasurePolicy& policy) = 0;
};

struct TuneOptions {
  std::string variant_filter;
  std::vector<AxisOverride> overrides;
  std::string strategy = "halving";
  Budget budget;  // per variant
  Shard shard;
  uint64_t seed = 1;
  int quarantine_after = 2;
  bool use_priors = true;  // model: seed with this variant's results on other workloads/devices
};

struct VariantSummary {
  std::string variant;
  size_t space = 0, shard_configs = 0;
  size_t evaluated = 0, resumed = 0, failed = 0, quarantined = 0;
  double measure_seconds = 0;  // wall time of the evaluations this run made
  bool budget_exhausted = false;
  std::optional<WinnerChoice> winner;
};

struct TuneReport {
  int64_t run_id = 0;
  std::vector<VariantSummary> variants;
  std::optional<WinnerChoice> overall;
  bool interrupted = false;
  size_t failures() const;
};

class TuneSweep {
 public:
  TuneSweep(Store& store, const Batch& batch, const Registry& registry, const DeviceRecord& device,
            const Target& target, CaseEvaluator& evaluator, TuneOptions options,
            std::ostream& progress);
  // Polled between trials; true stops the sweep (Ctrl-C), which then still chooses winners from
  // what it has and finishes the run row as "interrupted".
  void set_stop_request(std::function<bool()> stop) { stop_ = std::move(stop); }
  TuneReport run(const RunRecord& run);

 private:
  VariantSummary tune_variant(const Variant& variant, int64_t run_id);
  std::vector<Candidate> candidates(const Variant& variant,
                                    const std::vector<KernelConfig>& configs) const;
  void store_winner(const std::string& scope, const WinnerChoice& choice, int64_t run_id);
  void progress_line(const std::string& what);

  Store& store_;
  const Batch& batch_;
  const Registry& registry_;
  DeviceRecord device_;
  Target target_;
  CaseEvaluator& evaluator_;
  TuneOptions options_;
  std::ostream& progress_;
  std::function<bool()> stop_;
  int64_t device_id_ = 0, workload_id_ = 0;
  size_t done_ = 0, total_ = 0, failures_ = 0;
  double best_us_ = 0;
  std::string best_name_;
  double elapsed_ = 0;
};

}  // namespace attn
