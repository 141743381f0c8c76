// ClockProbe: reads the SM clock of the GPU beside each sample with a one-thread kernel
// (kernels/measure/clock_probe.cuh) that counts clock64() cycles over a window of %globaltimer.
// Move-only (it owns a small device buffer).
#pragma once

#include <memory>
#include <vector>

#include "kernels/exec_context.hpp"
#include "kernels/jit/jit_compiler.hpp"

namespace attn {

// The JIT program of the probe for an architecture (also compiled by the CPU tests).
JitProgram clock_probe_program(const std::string& arch);

class ClockProbe {
 public:
  ClockProbe(const CudaContext& context, KernelLoader& loader, const std::string& arch);
  ClockProbe(ClockProbe&&) noexcept = default;
  ClockProbe& operator=(ClockProbe&&) noexcept = default;

  // Enqueues one reading on `stream` and waits for it: the SM clock in MHz.
  double read_mhz(const Stream& stream);

 private:
  const CudaContext* context_;
  CUfunction function_;
  DeviceBuffer reading_;
};

}  // namespace attn
