// Evaluator: compile -> verify -> measure for one (variant, config) on one batch. Each step's
// failure becomes the measurement's disposition and the caller goes on to the next case.
//
// Verification runs before any timing: the output is poisoned, the variant launched once, and the
// result compared with an oracle that shares no code with the variant: the CPU reference for GPU
// variants, the dense naive attention for the CPU reference variant.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "kernels/device/cuda_context.hpp"
#include "kernels/exec_context.hpp"
#include "kernels/problem.hpp"
#include "kernels/variant.hpp"
#include "results/measurement.hpp"
#include "tuner/timing.hpp"

namespace attn {

class Evaluator {
 public:
  struct Options {
    TimingPolicy policy;
    size_t cpu_threads = 0;  // 0: all hardware threads
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
  Measurement evaluate(const Variant& variant, const KernelConfig& config);

 private:
  Evaluator(const Batch& batch, Options options);
  const std::vector<float>& reference();

  const Batch& batch_;
  Options options_;
  Problem host_;
  std::unique_ptr<CudaContext> cuda_;
  std::unique_ptr<Stream> stream_;
  std::unique_ptr<KernelLoader> loader_;
  std::unique_ptr<Workspace> workspace_;
  std::unique_ptr<L2Flusher> flusher_;
  std::optional<Problem> device_;
  ExecContext context_;
  std::optional<std::vector<float>> reference_;
  std::string reference_name_;
};

}  // namespace attn
