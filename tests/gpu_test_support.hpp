// Shared set-up for GPU tests: one device discovery and one JIT for the whole test binary, a macro
// that skips a test, with the reason, on a machine without a GPU, the oracle and Evaluator options
// every GPU test verifies with, and the context a test that prepares a variant itself passes.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "kernels/device/cuda_context.hpp"
#include "kernels/exec_context.hpp"
#include "kernels/jit/jit_compiler.hpp"
#include "kernels/problem.hpp"
#include "measure/evaluator.hpp"

namespace attn::testing {

struct GpuEnvironment {
  DeviceDiscovery discovery;
  std::unique_ptr<JitCompiler> jit;
  // Holds the primary context for the whole binary, so tests do not re-create it each time.
  std::unique_ptr<CudaContext> context;
  bool available() const { return !discovery.devices.empty(); }
  const DeviceInfo& device() const { return discovery.devices.front(); }
};

// The JIT compiles on half the hardware threads (at least two): `ctest -j` runs several test
// processes at once, whose parallel compiles share the cores.
GpuEnvironment& gpu();

// Compiles `programs` on the JIT's threads, each distinct program once (by cache key), and adds a
// test failure for each compile error; the checks that follow then find them in the JIT cache
// instead of compiling one at a time (on a fresh machine, most of a test's time).
void compile_in_parallel(const std::vector<JitProgram>& programs);

// Up to this much reference_work() (visible pairs x head_dim; measure/reference_oracle.hpp) a GPU
// test verifies against the CPU reference, double precision: about 2 s of one core (it does ~1e8
// of these units a second per core). Above it, against the tiled GPU reference
// (kernels/reference/gpu_tiled_reference.hpp), which takes milliseconds where the CPU one would
// take the cores the other tests compile on for minutes. The tiled reference is itself held to
// the CPU one (tests/kernels/reference/gpu_tiled_reference_gpu_test.cpp).
inline constexpr double kGpuOracleMinWork = 2e8;

struct OracleOutput {
  std::string name;        // "cpu_reference" or "gpu_tiled_fp32" (Verification::reference)
  std::vector<float> out;  // [total_q, num_q_heads, v_head_dim]
  std::vector<float> lse;  // [total_q, num_q_heads], when asked for
};

// The oracle's output for a batch: the CPU reference on `host`, or the tiled GPU reference on
// `device`, an upload of `host` (call it before any variant runs on `device`, so that a kernel
// that writes out of bounds cannot change what the oracle reads), by kGpuOracleMinWork.
OracleOutput oracle_output(const Problem& host, const Problem& device, bool with_lse);

// What a test that prepares a variant itself (instead of through the Evaluator) passes it: a
// stream, a kernel loader and a workspace on the test GPU, and the ExecContext pointing at them.
struct DeviceExec {
  explicit DeviceExec(const Target& target);
  DeviceExec(const DeviceExec&) = delete;
  DeviceExec& operator=(const DeviceExec&) = delete;
  Stream stream;
  KernelLoader loader;
  Workspace workspace;
  ExecContext context;
};

// The Evaluator options of the GPU tests' verifications: screen policy with `samples` timed
// samples (min = max), no warm-up, the event timer, `auto` oracle at kGpuOracleMinWork.
Evaluator::Options test_evaluator_options(size_t samples = 1);

}  // namespace attn::testing

#define ATTN_REQUIRE_GPU()                                                                    \
  do {                                                                                        \
    if (!::attn::testing::gpu().available())                                                  \
      GTEST_SKIP() << "no GPU on this machine (" << ::attn::testing::gpu().discovery.why_none \
                   << "); run `ctest -L gpu` on a GPU machine";                               \
  } while (0)
