// Where `attn-tune tune` and its workers (`attn-tune worker`) evaluate: the chosen GPU, or the CPU
// variants (--cpu, or no GPU). Choosing it creates no CUDA context, so an orchestrator that hands
// every evaluation to workers never holds one; open_evaluator() does, in whichever process
// evaluates.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "kernels/device/cuda_context.hpp"
#include "kernels/jit/jit_compiler.hpp"
#include "kernels/target.hpp"
#include "results/records.hpp"
#include "tuner/evaluator.hpp"
#include "tuner/phase_seconds.hpp"
#include "tuner/tune_sweep.hpp"

namespace attn {

struct TuneBackend {
  DeviceRecord device;
  Target target;
  std::string note;  // why the CPU is used; empty on a GPU
  std::shared_ptr<const DriverApi> api;
  std::optional<DeviceInfo> info;    // the GPU, when one is used
  std::unique_ptr<JitCompiler> jit;  // with a GPU
  size_t gpus_present = 0;           // GPUs this machine has (0 on the CPU backend)
  bool gpu() const { return info.has_value(); }
};
// Throws UsageError for a --device this machine does not have.
TuneBackend choose_tune_backend(bool cpu, int device);
std::unique_ptr<Evaluator> open_evaluator(TuneBackend& backend, const Batch& batch, size_t threads);
// The device record of each GPU in `devices` (--devices), or the host CPU's for each entry on the
// CPU backend, where the numbers only name worker slots (each worker ignores its --device).
// Throws UsageError for GPUs of different models: one sweep compares their results.
std::vector<DeviceRecord> slot_device_records(const TuneBackend& backend,
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
