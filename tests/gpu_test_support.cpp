#include "tests/gpu_test_support.hpp"

namespace attn::testing {

GpuEnvironment& gpu() {
  static GpuEnvironment* environment = [] {
    auto* e = new GpuEnvironment();
    e->discovery = discover_devices();
    if (e->available()) e->jit = std::make_unique<JitCompiler>();
    return e;
  }();
  return *environment;
}

}  // namespace attn::testing
