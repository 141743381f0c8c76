// TuneSweep: attn-tune tune for one workload on one backend. For each matching variant: build and
// prune its space, keep this shard's configs, and let the strategy propose trials under the budget.
// Each trial whose (workload, device, variant, config, policy) is already in the database is
// answered from it (resume); any other is claimed (Store::claim_attempt: the attempt row, written
// in one transaction with the checks) and evaluated, and its measurement stored at once with the
// attempt finished. A trial another live tuner holds is left for later and, once that tuner has
// stored its result, answered from the database; so several tuners on one sweep share it, each
// case evaluated once. While the sweep runs, a thread renews the heartbeat of its open attempts.
// A config with `quarantine_after` attempts that came back crashed or timed out is not tried
// again; an attempt cut off by the death of its tuner (a kill -9) does not count. At the end the
// winner of each variant and over all variants is chosen from the confirm-policy results
// (tuner/winner.hpp) and stored with the configs tied with it.
//
// The evaluation itself is behind CaseEvaluator, so the same sweep runs with the in-process
// Evaluator (attn-tune tune) or anything a test supplies.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "kernels/registry.hpp"
#include "measure/phase_seconds.hpp"
#include "results/store.hpp"
#include "tuner/compile_ahead.hpp"
#include "tuner/planner_gap.hpp"
#include "tuner/search_space.hpp"
#include "tuner/shard.hpp"
#include "tuner/strategy.hpp"
#include "tuner/winner.hpp"
#include "workloads/batch.hpp"

namespace attn {

// One evaluation handed to a CaseEvaluator that may run several at once.
struct CaseRequest {
  size_t tag = 0;  // the caller's, returned with the result
  const Variant* variant = nullptr;
  KernelConfig config;
  MeasurePolicy policy;
};
struct CaseResult {
  size_t tag = 0;
  size_t slot = 0;  // the slot (worker, GPU) that evaluated it
  Measurement measurement;
  PhaseSeconds phase_seconds;  // all zero from an evaluator that does not see the phases
};

class CaseEvaluator {
 public:
  virtual ~CaseEvaluator() = default;
  // One case, start to end.
  virtual Measurement evaluate(const Variant& variant, const KernelConfig& config,
                               const MeasurePolicy& policy) = 0;

  // Several cases at once, one per slot (a worker per GPU). The defaults give one slot whose case
  // runs through evaluate() inside wait().
  virtual size_t slots() const { return 1; }
  // A slot that would take a case now, if any.
  virtual std::optional<size_t> idle_slot() const {
    return pending_ ? std::nullopt : std::optional<size_t>(0);
  }
  // The process that will run the slot's next case (started now if needed), for the attempt row;
  // nullopt when cases run in this process.
  virtual std::optional<int64_t> slot_process(size_t slot) { return std::nullopt; }
  // Hands a case to an idle slot.
  virtual void begin(size_t slot, CaseRequest request) { pending_ = std::move(request); }
  // Blocks until one case handed over is done.
  virtual CaseResult wait();

 protected:
  // The default wait()'s evaluation of the case begun: evaluate(), with no phase seconds. An
  // evaluator that sees the phases overrides it to time them.
  virtual CaseResult evaluate_case(const CaseRequest& request);

 private:
  std::optional<CaseRequest> pending_;
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
  // Claims: another tuner's claim whose heartbeat is older than this is abandoned and taken over.
  // The heartbeat is renewed every min(10, claim_stale_seconds / 4) seconds.
  double claim_stale_seconds = 60;
  // How often a tuner left with only trials other tuners hold looks at the database again.
  double claim_poll_seconds = 0.05;
};

struct VariantSummary {
  std::string variant;
  size_t space = 0, shard_configs = 0;
  // Configs of the space that the shard map does not list (each shard then takes them by the hash
  // rule); 0 without a map.
  size_t unmapped = 0;
  size_t evaluated = 0, resumed = 0, failed = 0, quarantined = 0;
  // Configs the evaluation itself found unsupported (a user module's peer declines them when it
  // runs): not measured, and not a failure, as a declined case of `attn-bench run` is not.
  size_t declined = 0;
  // Of `resumed`: results another tuner stored while this one ran (claims it found taken).
  size_t by_other_tuners = 0;
  double measure_seconds = 0;  // wall time of the evaluations this run made
  // The same evaluations' seconds in each phase, as far as the evaluator reports them (all zero
  // when it does not: PhaseSeconds::known()). Their total is at most measure_seconds; the rest is
  // the sweep's own work around each case (the attempt rows, the result's way back).
  PhaseSeconds phase_seconds;
  bool budget_exhausted = false;
  std::optional<WinnerChoice> winner;
  std::string planner_key;            // the variant's default config for the batch
  std::optional<PlannerGap> planner;  // that config against the winner (planner_gap.hpp)
};

struct TuneReport {
  int64_t run_id = 0;
  std::vector<VariantSummary> variants;
  std::optional<WinnerChoice> overall;
  // The variants' planner configs against the overall winner, the nearest of them (what
  // `attn-bench run` would have picked).
  std::optional<PlannerGap> overall_planner;
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
  // The device each slot of the evaluator measures on (one worker per GPU), so each measurement
  // and attempt is recorded with its own GPU; resume, quarantine and winners look at all of them.
  // Default: `device` for every slot.
  void set_slot_devices(const std::vector<DeviceRecord>& devices);
  // Before each evaluation, the programs of the next `depth` trials of the batch are handed to
  // `ahead` (tuner/compile_ahead.hpp) to compile while this one runs.
  // The cases of `variant` go to `evaluator` instead of the sweep's own (a user module's peer runs
  // through the peer runner, apps/module_peers.hpp). Variants are tuned one after another, so two
  // evaluators never measure at once.
  void evaluate_with(const Variant& variant, CaseEvaluator& evaluator) {
    routed_[&variant] = &evaluator;
  }
  void set_compile_ahead(CompileAhead* ahead, size_t depth) {
    compile_ahead_ = ahead;
    compile_ahead_depth_ = depth;
  }
  // On a terminal, the progress is one bar redrawn in place (the count, the ETA, the best so far,
  // the failures, the trial in hand) and cleared when the sweep ends; elsewhere one plain line per
  // trial (the default), so logs keep every trial.
  void set_progress_terminal(bool terminal) { terminal_ = terminal; }
  TuneReport run(const RunRecord& run);

 private:
  VariantSummary tune_variant(const Variant& variant, int64_t run_id);
  std::vector<Candidate> candidates(const Variant& variant,
                                    const std::vector<KernelConfig>& configs) const;
  void store_winner(const std::string& scope, const WinnerChoice& choice, int64_t run_id);
  StoredMedians stored_medians() const;
  void progress_line(const std::string& what);
  void clear_progress();
  void note_outcome(const Outcome& out, bool top_rung, const std::string& name,
                    const std::string& policy, const Measurement& m);
  std::vector<int64_t> distinct_device_ids() const;
  bool is_my_device(int64_t device_id) const;
  // find_measurements over every device of the sweep, in row order.
  std::vector<StoredMeasurement> on_my_devices(MeasurementFilter filter) const;

  Store& store_;
  const Batch& batch_;
  const Registry& registry_;
  DeviceRecord device_;
  Target target_;
  CaseEvaluator& evaluator_;
  std::map<const Variant*, CaseEvaluator*> routed_;
  TuneOptions options_;
  std::ostream& progress_;
  bool terminal_ = false, drawn_ = false;
  std::function<bool()> stop_;
  std::vector<DeviceRecord> slot_devices_;
  int64_t device_id_ = 0, workload_id_ = 0;
  std::vector<int64_t> device_ids_;  // by slot
  CompileAhead* compile_ahead_ = nullptr;
  size_t compile_ahead_depth_ = 0;
  size_t done_ = 0, total_ = 0, failures_ = 0;
  double best_us_ = 0;
  std::string best_name_;
  double elapsed_ = 0;
};

}  // namespace attn
