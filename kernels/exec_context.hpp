// What a variant needs to prepare and launch on one backend: the target, and for CUDA the context,
// the stream, the JIT (through a KernelLoader that loads each compiled program once) and a
// workspace for scratch memory that is kept between runs.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "kernels/device/cuda_context.hpp"
#include "kernels/jit/jit_compiler.hpp"
#include "kernels/target.hpp"

namespace attn {

// Compiles programs through the JIT and keeps their modules loaded in one context.
class KernelLoader {
 public:
  KernelLoader(const CudaContext& context, JitCompiler& jit) : context_(context), jit_(jit) {}
  // Compiles (or finds in the cache) and loads; throws CompileError when NVRTC rejects it.
  const CompiledProgram& load(const JitProgram& program);
  // The kernel `name_expression` of a loaded program.
  CUfunction function(const JitProgram& program, const std::string& name_expression);
  JitCompiler& jit() { return jit_; }

 private:
  struct Loaded {
    CompiledProgram compiled;
    std::unique_ptr<Module> module;
  };
  Loaded& entry(const JitProgram& program);  // compiles and loads on first use
  const CudaContext& context_;
  JitCompiler& jit_;
  std::map<std::string, Loaded> loaded_;  // by cache key
};

// Scratch device memory that grows to the largest request and is reused by later runs.
class Workspace {
 public:
  explicit Workspace(const CudaContext& context) : context_(context) {}
  CUdeviceptr get(size_t bytes);

 private:
  const CudaContext& context_;
  DeviceBuffer buffer_;
};

struct ExecContext {
  Target target;
  const CudaContext* cuda = nullptr;  // null for the cpu backend
  const Stream* stream = nullptr;
  KernelLoader* loader = nullptr;
  Workspace* workspace = nullptr;
  size_t cpu_threads = 0;  // 0: all hardware threads
};

}  // namespace attn
