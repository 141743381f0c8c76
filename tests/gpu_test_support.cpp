#include "tests/gpu_test_support.hpp"

namespace attn::testing {

GpuEnvironment& gpu() {
  static GpuEnvironment* environment = [] {
    auto* e = new GpuEnvironment();
    e->discovery = discover_devices();
    if (e->available()) {
      e->jit = std::make_unique<JitCompiler>();
      e->context = std::make_unique<CudaContext>(e->discovery.api, e->device());
    }
    return e;
  }();
  return *environment;
}

}  // namespace attn::testing
