// Programs the compile tests compile in the background, and the check every one of them gets.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <future>
#include <regex>
#include <string>
#include <vector>

#include "kernels/jit/jit_compiler.hpp"
#include "kernels/variant.hpp"

namespace attn::testing {

// A program compiling (JitCompiler::compile_async) and the name a failure reports it by.
struct CompileJob {
  std::string what;
  std::future<CompiledProgram> compiled;
};

// Waits for every job: each compiled into `lowered` kernels, ptxas (--ptxas-options=-v) reported
// its registers and spilled nothing; a compile error fails the test with its log.
inline void expect_compiled_without_spills(std::vector<CompileJob>& jobs, size_t lowered) {
  const std::regex spills("([1-9][0-9]*) bytes spill (stores|loads)");
  for (CompileJob& job : jobs) {
    try {
      const CompiledProgram compiled = job.compiled.get();
      EXPECT_EQ(compiled.lowered_names.size(), lowered) << job.what;
      EXPECT_NE(compiled.log.find("registers"), std::string::npos) << job.what << compiled.log;
      EXPECT_FALSE(std::regex_search(compiled.log, spills)) << job.what << ":\n" << compiled.log;
    } catch (const CompileError& error) {
      ADD_FAILURE() << job.what << ": " << error.what() << "\n" << error.log();
    }
  }
}

// Whether a compile test compiles the `index`-th accepted config of its `batch`-th batch: every one
// with ATTN_TEST_EXHAUSTIVE set, else every third, rotating with the batch, so that each config
// position is compiled in every third batch (CI time: these tests were half of the CPU tests'; the
// GPU tests run every config).
inline bool compiles_config(size_t batch, size_t index) {
  return std::getenv("ATTN_TEST_EXHAUSTIVE") != nullptr || (batch + index) % 3 == 0;
}

// Queues a compile (ptxas -v) of each of `configs` that `variant` accepts for `batch` on `target`
// and that compiles_config picks for the `batch_index`-th batch; returns how many it accepts.
inline int queue_accepted_compiles(const Variant& variant, const Batch& batch, const Target& target,
                                   const std::vector<KernelConfig>& configs, size_t batch_index,
                                   JitCompiler& jit, std::vector<CompileJob>& jobs) {
  int accepted = 0;
  for (const KernelConfig& config : configs) {
    if (!variant.check(batch, config, target)) continue;
    if (!compiles_config(batch_index, size_t(accepted++))) continue;
    JitProgram program = variant.programs(batch, config, target).front();
    program.options.push_back("--ptxas-options=-v");
    jobs.push_back({program.name, jit.compile_async(program)});
  }
  return accepted;
}

}  // namespace attn::testing
