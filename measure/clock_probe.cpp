#include "measure/clock_probe.hpp"

#include "kernels/measure/clock_probe_params.hpp"

namespace attn {

namespace {
constexpr const char* kKernel = "attn::clock_probe";
// 20 us: long enough that a 1 us timer tick is 5% before the edge alignment and negligible after
// it, short enough to add little to a sample.
constexpr unsigned long long kSpanNs = 20000;
}  // namespace

JitProgram clock_probe_program(const std::string& arch) {
  JitProgram program;
  program.name = "clock_probe";
  program.source = "#include \"kernels/measure/clock_probe.cuh\"\n";
  program.kernels = {kKernel};
  program.arch = arch;
  return program;
}

ClockProbe::ClockProbe(const CudaContext& context, KernelLoader& loader, const std::string& arch)
    : context_(&context),
      function_(loader.function(clock_probe_program(arch), kKernel)),
      reading_(context, sizeof(ClockProbeReading)) {}

double ClockProbe::read_mhz(const Stream& stream) {
  ClockProbeParams params{};
  params.out = reinterpret_cast<ClockProbeReading*>(reading_.address());
  params.slot = 0;
  params.span_ns = kSpanNs;
  LaunchShape shape;
  shape.block_x = 32;
  launch(*context_, function_, shape, stream, params);
  stream.synchronize();
  ClockProbeReading reading{};
  reading_.download(&reading, sizeof reading);
  return reading.ns > 0 ? double(reading.cycles) / double(reading.ns) * 1e3 : 0;
}

}  // namespace attn
