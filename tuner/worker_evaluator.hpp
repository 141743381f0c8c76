// WorkerEvaluator: the sweep's CaseEvaluator that runs each evaluation in a worker process
// (`attn-tune worker`, tuner/worker_protocol.hpp), one worker per slot (per GPU with --devices),
// so a config that hangs or kills its process costs one disposition instead of the sweep:
//   - a phase (compile, verify, measure; the worker reports each start) with no progress within
//     its deadline -> the worker is killed (SIGKILL), the case `timed_out`, the phase named;
//   - the worker dies (a signal, an exit, a closed socket) -> the case `crashed`, reason saying
//     how and in which phase;
//   - the worker answers with a sticky CUDA error (its context is lost) -> the case `crashed`,
//     the worker stopped;
// and each time the slot's next case gets a freshly spawned worker. Each result carries the seconds
// its case spent in each phase, as the orchestrator saw them (compile counts from the request, so
// it includes the request's way to the worker; the last phase ends with the answer, the crash or
// the kill), whether the case passed or not. A worker that cannot start, or that answers with an
// error instead of a measurement, is an infrastructure failure: it throws EnvironmentError, which
// stops the sweep once with that message.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "measure/phase_deadlines.hpp"
#include "measure/phase_seconds.hpp"
#include "tuner/tune_sweep.hpp"
#include "tuner/worker_process.hpp"

namespace attn {

struct WorkerOptions {
  // The worker's command line: program (an absolute path) and arguments; `--fd N` is appended.
  std::vector<std::string> argv;
  // One worker per entry, each with `--device N` appended; empty: one worker, argv as given.
  std::vector<int> devices;
  PhaseDeadlines deadlines;
  double startup_seconds = 600;  // the worker's set-up (batch, device) before it says ready
  // Polled while cases are in flight (every 0.1 s at most): true once the sweep should stop.
  std::function<bool()> stop_requested;
  double stop_grace_seconds = 1.0;  // after SIGUSR1, how long a worker may take to answer
};

class WorkerEvaluator : public CaseEvaluator {
 public:
  explicit WorkerEvaluator(WorkerOptions options);
  ~WorkerEvaluator() override;  // kills and reaps every worker

  // Starts every slot's worker that is not running (all at once) and waits until each is ready,
  // so that a worker that cannot start fails before the sweep writes any attempt.
  void start();
  Measurement evaluate(const Variant& variant, const KernelConfig& config,
                       const MeasurePolicy& policy) override;

  size_t slots() const override { return slots_.size(); }
  // The idle slot with the fewest cases done.
  std::optional<size_t> idle_slot() const override;
  std::optional<int64_t> slot_process(size_t slot) override;
  void begin(size_t slot, CaseRequest request) override;
  CaseResult wait() override;

  // Every worker pid spawned so far, in order (tests check that none is left behind).
  const std::vector<pid_t>& spawned() const { return spawned_; }
  // Cases each slot evaluated.
  std::vector<size_t> cases_per_slot() const;
  // Workers stopped because they reported a sticky CUDA error.
  size_t sticky_replacements() const { return sticky_replacements_; }
  // Stops every worker (closes its socket, then kills and reaps it).
  void stop();

 private:
  struct Slot {
    std::vector<std::string> argv;
    std::string label;  // "device 1", or "" with one worker
    std::unique_ptr<WorkerProcess> worker;
    std::optional<CaseRequest> request;  // in flight
    // The phases of the case in flight as the worker reports them (compile from the request until
    // the worker says otherwise); a case that crashes or times out keeps the time of its phases.
    PhaseClock clock;
    std::string phases_done;  // "compile 1.2 s, verify 0.3 s" of the case in flight
    size_t cases = 0;
  };
  void spawn(Slot& slot);
  void await_ready(Slot& slot);
  // The case in flight on `slot` ended with `m`; the slot is idle again.
  CaseResult finish(Slot& slot, Measurement m);
  CaseResult failed(Slot& slot, Disposition disposition, const std::string& reason);
  // After the stop request: SIGUSR1 to every worker with a case in flight (once), and the case of
  // one that has not answered within the grace, killed; nullopt while the grace runs.
  std::optional<CaseResult> forward_stop();
  // Takes whatever the slot's worker has sent; a result when its case is over.
  std::optional<CaseResult> collect(Slot& slot);

  WorkerOptions options_;
  std::vector<Slot> slots_;
  std::vector<pid_t> spawned_;
  size_t sticky_replacements_ = 0;
  std::optional<std::chrono::steady_clock::time_point> stop_forwarded_;
};

}  // namespace attn
