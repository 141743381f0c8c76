// Shared set-up for GPU tests: one device discovery and one JIT for the whole test binary, and a
// macro that skips a test, with the reason, on a machine without a GPU.
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include "kernels/device/cuda_context.hpp"
#include "kernels/jit/jit_compiler.hpp"

namespace attn::testing {

struct GpuEnvironment {
  DeviceDiscovery discovery;
  std::unique_ptr<JitCompiler> jit;
  // Holds the primary context for the whole binary, so tests do not re-create it each time.
  std::unique_ptr<CudaContext> context;
  bool available() const { return !discovery.devices.empty(); }
  const DeviceInfo& device() const { return discovery.devices.front(); }
};

GpuEnvironment& gpu();

}  // namespace attn::testing

#define ATTN_REQUIRE_GPU()                                                                    \
  do {                                                                                        \
    if (!::attn::testing::gpu().available())                                                  \
      GTEST_SKIP() << "no GPU on this machine (" << ::attn::testing::gpu().discovery.why_none \
                   << "); run `ctest -L gpu` on a GPU machine";                               \
  } while (0)
