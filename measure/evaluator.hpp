// Evaluator: compile -> verify -> measure for one (variant, config) on one batch. Each step's
// failure becomes the measurement's disposition and the caller goes on to the next case.
//
// Verification runs before any timing: the output is poisoned, the variant launched once, and the
// result compared with an oracle that shares no code with the variant: for GPU variants the CPU
// reference, or the tiled GPU reference for a large problem (Options::reference, and
// measure/reference_oracle.hpp for the threshold of `auto`); the dense naive attention for the CPU
// reference variant. The measurement's verification.reference names the oracle used.
//
// A sticky CUDA error (kernels/device/sticky_errors.hpp: an illegal address and its kin) makes the
// case `crashed` and loses the context: context_lost() says why, and a later evaluate() throws
// EnvironmentError, since nothing more can run in this process (a worker is replaced instead).
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "kernels/device/cuda_context.hpp"
#include "kernels/exec_context.hpp"
#include "kernels/problem.hpp"
#include "kernels/variant.hpp"
#include "measure/phase_deadlines.hpp"
#include "measure/reference_oracle.hpp"
#include "measure/timing_core.hpp"
#include "results/measurement.hpp"

namespace attn {

// A measurement of (variant, config, policy) with only what identifies the case filled in: family,
// variant, config, backend, policy. Evaluations and the worker machinery fill in the rest.
Measurement case_measurement(const Variant& variant, const KernelConfig& config,
                             const MeasurePolicy& policy);

class Evaluator {
 public:
  struct Options {
    MeasurePolicy policy = confirm_policy();
    size_t cpu_threads = 0;  // 0: all hardware threads
    // The oracle of a CUDA evaluation; `automatic` takes the GPU reference when reference_work()
    // is at least gpu_reference_min_work. Ignored on the CPU backend.
    ReferenceOracle reference = ReferenceOracle::automatic;
    double gpu_reference_min_work = kDefaultGpuReferenceMinWork;
    // Hear each timing sample and stop between two (a progress bar, Ctrl-C); sampler.hpp.
    SamplingHooks sampling;
  };

  // CPU backend: the batch's data in host memory.
  static std::unique_ptr<Evaluator> on_cpu(const Batch& batch, Options options);
  // CUDA backend on one device: data generated on the host and uploaded.
  static std::unique_ptr<Evaluator> on_cuda(const Batch& batch,
                                            std::shared_ptr<const DriverApi> api,
                                            const DeviceInfo& device, JitCompiler& jit,
                                            Options options);
  ~Evaluator();

  const Target& target() const { return context_.target; }
  const MeasurePolicy& policy() const { return options_.policy; }
  // The oracle verification compares with ("cpu_reference", "gpu_tiled_fp32", "naive_dense"),
  // chosen when the evaluator is made; computed once, on the first verification.
  const std::string& reference_name() const { return reference_name_; }
  // Why it was chosen: "--reference gpu", "auto: visible pairs x head_dim 6.9e+10 >= 3.2e+09", or
  // "the CPU backend" for a CPU evaluator.
  std::string reference_choice() const;
  // Why the SM clock is not read beside samples (empty when it is), and NVML's absence.
  const std::string& clock_note() const { return clock_note_; }
  Measurement evaluate(const Variant& variant, const KernelConfig& config) {
    return evaluate(variant, config, options_.policy);
  }
  // Under another policy than the evaluator's own (the tuner's rungs: screen, then confirm).
  // `on_phase` hears the start of compile, verify and measure (a worker reports them).
  Measurement evaluate(const Variant& variant, const KernelConfig& config,
                       const MeasurePolicy& policy, const PhaseObserver& on_phase = {});
  // Why the CUDA context is unusable (a sticky error in an earlier case); empty while it is fine.
  const std::string& context_lost() const { return context_lost_; }
  // The oracle's output for the batch, [total_q, num_q_heads, v_head_dim] floats: computed on first
  // use (by reference_name()'s oracle) and kept; every evaluation is verified against it.
  const std::vector<float>& reference();

 private:
  Evaluator(const Batch& batch, Options options);
  // Copies of the device problem whose inputs together are at least twice the L2 (for the graph
  // timer), each with a launcher of `variant` at `config`; made on first use, kept for later cases.
  std::vector<Launcher*> rotation(const Variant& variant, const KernelConfig& config,
                                  Launcher& first, std::vector<std::unique_ptr<Launcher>>& owned);

  const Batch& batch_;
  Options options_;
  Problem host_;
  std::unique_ptr<CudaContext> cuda_;
  std::unique_ptr<Stream> stream_;
  std::unique_ptr<KernelLoader> loader_;
  std::unique_ptr<Workspace> workspace_;
  std::unique_ptr<L2Flusher> flusher_;
  std::unique_ptr<ClockProbe> probe_;
  std::unique_ptr<NvmlMonitor> nvml_;
  std::string clock_note_;
  std::vector<Problem> rotation_problems_;
  std::optional<Problem> device_;
  bool device_generated_ = false;  // device_ was generated on the GPU, not uploaded from host_
  ExecContext context_;
  std::optional<std::vector<float>> reference_;
  std::string reference_name_;
  std::string context_lost_;
};

}  // namespace attn
