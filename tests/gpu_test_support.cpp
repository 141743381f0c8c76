#include "tests/gpu_test_support.hpp"

#include <algorithm>
#include <future>
#include <set>

#include "base/thread_pool.hpp"
#include "kernels/reference/gpu_tiled_reference.hpp"
#include "kernels/reference/paged_attention_reference.hpp"
#include "measure/reference_oracle.hpp"

namespace attn::testing {

DeviceExec::DeviceExec(const Target& target)
    : stream(*gpu().context), loader(*gpu().context, *gpu().jit), workspace(*gpu().context) {
  context.target = target;
  context.cuda = gpu().context.get();
  context.stream = &stream;
  context.loader = &loader;
  context.workspace = &workspace;
}

GpuEnvironment& gpu() {
  static GpuEnvironment* environment = [] {
    auto* e = new GpuEnvironment();
    e->discovery = discover_devices();
    if (e->available()) {
      JitOptions options;
      options.threads = std::max<size_t>(2, hardware_threads() / 2);
      e->jit = std::make_unique<JitCompiler>(options);
      e->context = std::make_unique<CudaContext>(e->discovery.api, e->device());
    }
    return e;
  }();
  return *environment;
}

void compile_in_parallel(const std::vector<JitProgram>& programs) {
  auto& env = gpu();
  std::set<std::string> keys;
  std::vector<std::future<CompiledProgram>> compiles;
  for (const JitProgram& program : programs) {
    if (keys.insert(env.jit->cache_key(program)).second)
      compiles.push_back(env.jit->compile_async(program));
  }
  for (auto& compiled : compiles) {
    try {
      compiled.get();
    } catch (const CompileError& error) {
      ADD_FAILURE() << error.what() << "\n" << error.log();
    }
  }
}

OracleOutput oracle_output(const Problem& host, const Problem& device, bool with_lse) {
  OracleOutput o;
  std::vector<float>* lse = with_lse ? &o.lse : nullptr;
  if (reference_work(host.batch()) < kGpuOracleMinWork) {
    o.name = "cpu_reference";
    o.out = paged_attention_reference(host, 0, lse);
    return o;
  }
  auto& env = gpu();
  Stream stream(*env.context);
  KernelLoader loader(*env.context, *env.jit);
  o.name = kGpuTiledReferenceName;
  o.out = gpu_tiled_paged_attention_reference(device, *env.context, loader, stream, lse);
  return o;
}

Evaluator::Options test_evaluator_options(size_t samples) {
  Evaluator::Options options;
  options.policy = screen_policy();
  options.policy.min_samples = options.policy.max_samples = samples;
  options.policy.warmup_min = 0;
  options.policy.warmup_max_seconds = 0;
  options.policy.timer = TimerMode::events;
  options.gpu_reference_min_work = kGpuOracleMinWork;
  return options;
}

}  // namespace attn::testing
