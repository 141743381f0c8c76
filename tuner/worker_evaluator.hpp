// WorkerEvaluator: the sweep's CaseEvaluator that runs each evaluation in a worker process
// (`attn-tune worker`, tuner/worker_protocol.hpp), so a config that hangs or kills its process
// costs one disposition instead of the sweep:
//   - no answer within `deadline_seconds` -> the worker is killed (SIGKILL), the case `timed_out`;
//   - the worker dies (a signal, an exit, a closed socket) -> the case `crashed`, reason saying
//   how;
// and either way the next case gets a freshly spawned worker. A worker that cannot start, or that
// answers with an error instead of a measurement, is an infrastructure failure: it throws
// EnvironmentError, which stops the sweep once with that message.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "tuner/tune_sweep.hpp"
#include "tuner/worker_process.hpp"

namespace attn {

struct WorkerOptions {
  // The worker's command line: program (an absolute path) and arguments; `--fd N` is appended.
  std::vector<std::string> argv;
  double deadline_seconds = 300;  // one evaluation: compile, verify, measure
  double startup_seconds = 600;   // the worker's set-up (batch, device) before it says ready
};

class WorkerEvaluator : public CaseEvaluator {
 public:
  explicit WorkerEvaluator(WorkerOptions options);
  ~WorkerEvaluator() override;  // kills and reaps the worker

  // Starts a worker now (if none runs) and waits for it to be ready, so that a worker that cannot
  // start fails before the sweep writes any attempt. evaluate() calls it as needed.
  void start();
  Measurement evaluate(const Variant& variant, const KernelConfig& config,
                       const MeasurePolicy& policy) override;

  // Every worker pid spawned so far, in order (tests check that none is left behind).
  const std::vector<pid_t>& spawned() const { return spawned_; }
  // Stops the current worker (closes its socket, then kills and reaps it).
  void stop();

 private:
  WorkerOptions options_;
  std::unique_ptr<WorkerProcess> worker_;
  std::vector<pid_t> spawned_;
};

}  // namespace attn
