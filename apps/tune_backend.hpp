// What `attn-tune tune` and its workers (`attn-tune worker`) add to the backend choice
// (measure/backend.hpp): the device record of each worker slot, the in-process evaluator of
// --isolate none, and the path workers are started from.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "measure/backend.hpp"
#include "measure/evaluator.hpp"
#include "measure/phase_seconds.hpp"
#include "tuner/tune_sweep.hpp"

namespace attn {

// The backend of `attn-tune tune` and `attn-tune worker`; throws UsageError for a --device this
// machine does not have.
BackendChoice choose_tune_backend(bool cpu, int device);
// An evaluator on `backend` under the confirm policy (each case brings its own policy); `sampling`
// hears its samples and stops them (the stop request).
std::unique_ptr<Evaluator> open_tune_evaluator(BackendChoice& backend, const Batch& batch,
                                               size_t threads, SamplingHooks sampling = {});
// The device record of each GPU in `devices` (--devices), or the host CPU's for each entry on the
// CPU backend, where the numbers only name worker slots (each worker ignores its --device).
// Throws UsageError for GPUs of different models: one sweep compares their results.
std::vector<DeviceRecord> slot_device_records(const BackendChoice& backend,
                                              const std::vector<int>& devices);

// The sweep's CaseEvaluator in this process (--isolate none): one slot, and each case's phases
// timed from the evaluator's own phase reports (the ones a worker forwards).
class InProcessEvaluator : public CaseEvaluator {
 public:
  explicit InProcessEvaluator(Evaluator& evaluator) : evaluator_(evaluator) {}
  Measurement evaluate(const Variant& variant, const KernelConfig& config,
                       const MeasurePolicy& policy) override {
    return evaluator_.evaluate(variant, config, policy);
  }

 protected:
  CaseResult evaluate_case(const CaseRequest& request) override {
    PhaseClock clock;
    Measurement m = evaluator_.evaluate(*request.variant, request.config, request.policy,
                                        [&](EvalPhase phase) { clock.start(phase); });
    return {request.tag, 0, std::move(m), clock.stop()};
  }

 private:
  Evaluator& evaluator_;
};

// The running binary's absolute path (/proc/self/exe), to start workers from.
std::string own_executable();

}  // namespace attn
