// Where measurements run: the chosen GPU (the first, or --device), or the CPU (--cpu, or no GPU).
// Choosing creates no CUDA context, so a tuning orchestrator that hands every evaluation to
// workers never holds one; open_evaluator() does, in whichever process evaluates. `attn-bench
// run`, `attn-tune tune` and the tuner's workers all choose here.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "kernels/device/cuda_context.hpp"
#include "kernels/jit/jit_compiler.hpp"
#include "kernels/target.hpp"
#include "measure/evaluator.hpp"
#include "results/records.hpp"

namespace attn {

struct BackendChoice {
  DeviceRecord device;
  Target target;
  std::string note;  // why the CPU is used; empty on a GPU
  std::shared_ptr<const DriverApi> api;
  std::optional<DeviceInfo> info;    // the GPU, when one is used
  std::unique_ptr<JitCompiler> jit;  // with a GPU
  size_t gpus_present = 0;           // GPUs this machine has (0 on the CPU backend)
  bool gpu() const { return info.has_value(); }
};

// `cpu_purpose` completes the note when no GPU is found ("running the CPU reference variant").
// Throws UsageError for a --device this machine does not have.
BackendChoice choose_backend(bool force_cpu, int device, const std::string& cpu_purpose,
                             const std::string& jit_cache_dir = {});
std::unique_ptr<Evaluator> open_evaluator(BackendChoice& backend, const Batch& batch,
                                          const Evaluator::Options& options);

}  // namespace attn
