#include "measure/calibration.hpp"

#include <cmath>
#include <cstring>

#include "base/build_info.hpp"
#include "base/thread_pool.hpp"
#include "kernels/calibrate/calibrate_params.hpp"
#include "kernels/calibrate/gemm_traits.hpp"
#include "kernels/device/tensor_map.hpp"
#include "kernels/exec_context.hpp"
#include "measure/callback_launcher.hpp"
#include "measure/clock_probe.hpp"
#include "measure/nvml_monitor.hpp"
#include "measure/stream_program.hpp"
#include "measure/timing_core.hpp"

namespace attn {

namespace {

std::string wgmma_kernel(int bn, int consumers, int stages, int group_m) {
  return "attn::gemm_sm90_wgmma<" + std::to_string(bn) + ", " + std::to_string(consumers) + ", " +
         std::to_string(stages) + ", " + std::to_string(group_m) + ">";
}
std::string mma_kernel(int stages) {
  return "attn::gemm_mma_sync<" + std::to_string(stages) + ">";
}

std::string format_bytes_label(size_t bytes) {
  if (bytes % (size_t(1) << 30) == 0) return std::to_string(bytes >> 30) + " GiB";
  return std::to_string(bytes >> 20) + " MiB";
}

bool use_wgmma(const CalibrationOptions& o, const std::string& arch) {
  return o.gemm_kernel == "wgmma" || (o.gemm_kernel == "auto" && arch == "sm_90a");
}

// bf16 bits of a uniform value in [-1, 1) from a counter (round to nearest even).
uint16_t random_bf16(uint64_t seed, uint64_t index) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (index + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  const float value = float(double(z >> 11) * 0x1.0p-53 * 2.0 - 1.0);
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  bits += 0x7fff + ((bits >> 16) & 1);
  return uint16_t(bits >> 16);
}
float bf16_value(uint16_t bits) {
  const uint32_t wide = uint32_t(bits) << 16;
  float value;
  std::memcpy(&value, &wide, 4);
  return value;
}

std::vector<uint16_t> random_matrix(size_t elements, uint64_t seed) {
  std::vector<uint16_t> out(elements);
  parallel_for(elements, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) out[i] = random_bf16(seed, i);
  });
  return out;
}

}  // namespace

JitProgram gemm_wgmma_program(const std::string& arch, int bn, int consumers, int stages,
                              int group_m) {
  JitProgram program;
  program.name = "calibrate.gemm_sm90_wgmma.n" + std::to_string(bn) + ".c" +
                 std::to_string(consumers) + ".s" + std::to_string(stages) + ".g" +
                 std::to_string(group_m);
  program.source = "#include \"kernels/calibrate/gemm_sm90_wgmma.cuh\"\n";
  program.kernels = {wgmma_kernel(bn, consumers, stages, group_m)};
  program.arch = arch;
  return program;
}

JitProgram gemm_mma_sync_program(const std::string& arch, int stages) {
  JitProgram program;
  program.name = "calibrate.gemm_mma_sync.s" + std::to_string(stages);
  program.source = "#include \"kernels/calibrate/gemm_mma_sync.cuh\"\n";
  program.kernels = {mma_kernel(stages)};
  program.arch = arch;
  return program;
}

std::optional<double> ceiling_clock_mhz(const Measurement& m) {
  if (m.clocks.median_mhz > 0) return m.clocks.median_mhz;
  if (m.clocks.nvml_sm_clock_mhz && *m.clocks.nvml_sm_clock_mhz > 0) {
    return m.clocks.nvml_sm_clock_mhz;
  }
  return std::nullopt;
}

std::string check_calibration_options(const CalibrationOptions& o, const std::string& arch) {
  if (o.stream_bytes < (size_t(1) << 20) || o.stream_bytes % 16 != 0)
    return "the stream buffer must be at least 1 MiB and a multiple of 16 bytes";
  if (o.stream_threads < 32 || o.stream_threads > 1024 || o.stream_threads % 32 != 0)
    return "stream threads must be a multiple of 32 up to 1024";
  if (o.stream_unroll < 1 || o.stream_unroll > 16) return "stream unroll must be 1..16";
  if (o.stream_blocks_per_sm < 1 || o.stream_blocks_per_sm > 32)
    return "blocks per SM must be 1..32";
  if (o.gemm_kernel != "auto" && o.gemm_kernel != "wgmma" && o.gemm_kernel != "mma_sync")
    return "the GEMM kernel must be auto, wgmma or mma_sync";
  if (o.skip_gemm) return {};
  if (use_wgmma(o, arch)) {
    if (arch != "sm_90a") return "the wgmma GEMM needs sm_90a (Hopper); this device is " + arch;
    switch (gemm::sm90_check(o.gemm_bn, o.gemm_consumers, o.gemm_stages)) {
      case gemm::kOk:
        break;
      case gemm::kTileN:
        return "--gemm-bn must be 128 or 256";
      case gemm::kConsumers:
        return "--gemm-consumers must be 1 or 2";
      case gemm::kStages:
        return "--gemm-stages must be 2..8";
      default:
        return "the wgmma GEMM config needs " +
               std::to_string(gemm::sm90_shared_bytes(o.gemm_bn, o.gemm_consumers, o.gemm_stages)) +
               " bytes of shared memory (limit " + std::to_string(gemm::kMaxSharedBytes) + ")";
    }
    if (o.gemm_group_m < 1 || o.gemm_group_m > 64) return "--gemm-group-m must be 1..64";
    if (o.gemm_size % std::max(gemm::sm90_bm(o.gemm_consumers), o.gemm_bn) != 0 ||
        o.gemm_size % gemm::kSm90BK != 0)
      return "--gemm-size must be a multiple of the tile (" +
             std::to_string(std::max(gemm::sm90_bm(o.gemm_consumers), o.gemm_bn)) + ")";
  } else {
    if (gemm::mma_check(o.mma_stages) != gemm::kOk) return "--mma-stages must be 2..6";
    if (o.gemm_size % gemm::kMmaBM != 0) return "--gemm-size must be a multiple of 128";
  }
  if (o.gemm_size < 256 || o.gemm_size > 32768) return "--gemm-size must be 256..32768";
  return {};
}

std::vector<CalibrationEntry> calibrate_device(
    const CudaContext& context, JitCompiler& jit, const CalibrationOptions& options,
    const std::function<void(const std::string&)>& progress) {
  const DeviceInfo& device = context.info();
  const std::string arch = device.arch();
  if (const std::string problem = check_calibration_options(options, arch); !problem.empty()) {
    throw UsageError(problem);
  }
  const DriverApi& api = context.api();
  Stream stream(context);
  KernelLoader loader(context, jit);
  std::unique_ptr<ClockProbe> probe;
  try {
    probe = std::make_unique<ClockProbe>(context, loader, arch);
  } catch (const Error&) {
    // measured without clock filtering; the result's clock fields stay empty
  }
  std::string why_no_nvml;
  std::unique_ptr<NvmlMonitor> nvml = NvmlMonitor::open(device.uuid, &why_no_nvml);
  const CudaTimingTools tools{&context, &stream, nullptr, probe.get(), nvml.get()};
  MeasurePolicy policy = options.policy;
  policy.timer = TimerMode::events;  // every calibration launch is long (ms)
  policy.flush_l2 = false;           // the buffers are many times the L2
  const RotationFactory no_rotation = [](double) -> std::vector<Launcher*> {
    throw std::logic_error("calibration never uses the graph timer");
  };

  auto timed = [&](const std::string& metric, const std::string& method, double work,
                   const std::function<void()>& enqueue) {
    CalibrationEntry entry;
    entry.ceiling.metric = metric;
    entry.ceiling.method = method;
    entry.ceiling.tool_version = tool_version();
    entry.ceiling.git_commit = git_commit();
    CallbackLauncher launcher(enqueue);
    Measurement& m = entry.measurement;
    m.family = "calibrate";
    m.variant = metric;
    m.policy = policy.name;
    time_on_cuda(launcher, no_rotation, policy, tools, m);
    m.disposition = Disposition::passed;
    // work: bytes (GB/s) or FLOPs (TFLOP/s): GB/s = bytes / us / 1e3, TFLOP/s = flops / us / 1e6
    const bool flops = metric == kBf16Tflops;
    entry.ceiling.value = work / (m.stats.median * (flops ? 1e6 : 1e3));
    entry.ceiling.sample_count = int64_t(m.stats.count);
    entry.ceiling.noise = m.timing.noise;
    entry.ceiling.unstable = m.unstable;
    entry.ceiling.sm_clock_mhz = ceiling_clock_mhz(m);
    return entry;
  };

  std::vector<CalibrationEntry> entries;
  const size_t vectors = options.stream_bytes / 16;
  DeviceBuffer source(context, options.stream_bytes), target(context, options.stream_bytes);
  ATTN_CU_CHECK(api, cuMemsetD32Async(source.address(), 0x3f803f80u, options.stream_bytes / 4,
                                      stream.handle()));
  DeviceBuffer sink(context, 16);
  const JitProgram streams = stream_program(arch, options.stream_threads, options.stream_unroll);
  StreamParams sp{};
  sp.src = source.pointer();
  sp.dst = target.pointer();
  sp.vectors = vectors;
  sp.sink = static_cast<unsigned int*>(sink.pointer());
  sp.sentinel = 0x9e3779b9u;  // the XOR of the constant fill is 0: never equal
  LaunchShape shape;
  shape.grid_x = unsigned(device.sm_count * options.stream_blocks_per_sm);
  shape.block_x = unsigned(options.stream_threads);
  const std::string stream_config = format_bytes_label(options.stream_bytes) + ", " +
                                    std::to_string(options.stream_threads) + " threads x " +
                                    std::to_string(options.stream_blocks_per_sm) +
                                    " blocks/SM, unroll " + std::to_string(options.stream_unroll);

  progress("read bandwidth: stream_read over " + stream_config);
  CUfunction read = loader.function(
      streams, stream_kernel("stream_read", options.stream_threads, options.stream_unroll));
  entries.push_back(timed(kReadGbps, "stream_read 16 B loads, " + stream_config,
                          double(options.stream_bytes),
                          [&] { launch(context, read, shape, stream, sp); }));

  progress("copy bandwidth: stream_copy over " + stream_config);
  CUfunction copy = loader.function(
      streams, stream_kernel("stream_copy", options.stream_threads, options.stream_unroll));
  entries.push_back(timed(kCopyGbps, "stream_copy 16 B, read + written, " + stream_config,
                          2.0 * double(options.stream_bytes),
                          [&] { launch(context, copy, shape, stream, sp); }));

  progress("copy bandwidth: cuMemcpyDtoDAsync (reference)");
  entries.push_back(timed(
      kMemcpyGbps, "cuMemcpyDtoDAsync, read + written, " + format_bytes_label(options.stream_bytes),
      2.0 * double(options.stream_bytes), [&] {
        ATTN_CU_CHECK(api, cuMemcpyDtoDAsync(target.address(), source.address(),
                                             options.stream_bytes, stream.handle()));
      }));
  if (options.skip_gemm) return entries;

  // --- bf16 GEMM ---
  const int size = options.gemm_size;
  const size_t elements = size_t(size) * size_t(size);
  progress("bf16 GEMM: generating " + std::to_string(size) + "^3 random operands");
  const std::vector<uint16_t> a = random_matrix(elements, 1), b = random_matrix(elements, 2);
  DeviceBuffer a_device(context, elements * 2), b_device(context, elements * 2),
      c_device(context, elements * 2);
  a_device.upload(a.data(), elements * 2);
  b_device.upload(b.data(), elements * 2);
  GemmParams gp{};
  gp.a = static_cast<const unsigned short*>(a_device.pointer());
  gp.b = static_cast<const unsigned short*>(b_device.pointer());
  gp.c = static_cast<unsigned short*>(c_device.pointer());
  gp.m = gp.n = gp.k = size;

  std::string method;
  CUfunction gemm_function = nullptr;
  LaunchShape gemm_shape;
  if (use_wgmma(options, arch)) {
    const JitProgram program = gemm_wgmma_program(arch, options.gemm_bn, options.gemm_consumers,
                                                  options.gemm_stages, options.gemm_group_m);
    progress("bf16 GEMM: compiling " + program.name);
    gemm_function = loader.function(program, program.kernels.front());
    const int bm = gemm::sm90_bm(options.gemm_consumers);
    // A and B [size, size] bf16, boxes of 64 K elements (gemm::kSm90BK) by bm or bn rows.
    static_assert(gemm::kSm90BK == 64, "one 128-byte swizzle row of bf16 per box row");
    gp.a_map = encode_tensor_map_2d(api, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, gp.a, size, size,
                                    uint64_t(size) * 2, bm);
    gp.b_map = encode_tensor_map_2d(api, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, gp.b, size, size,
                                    uint64_t(size) * 2, options.gemm_bn);
    const int tiles = (size / bm) * (size / options.gemm_bn);
    gemm_shape.grid_x = unsigned(std::min(tiles, device.sm_count));
    gemm_shape.block_x = unsigned(gemm::sm90_threads(options.gemm_consumers));
    gemm_shape.shared_bytes = unsigned(
        gemm::sm90_shared_bytes(options.gemm_bn, options.gemm_consumers, options.gemm_stages));
    method = "gemm_sm90_wgmma (TMA + wgmma m64n" + std::to_string(options.gemm_bn) + "k16, " +
             std::to_string(options.gemm_consumers) + " consumer warpgroups, " +
             std::to_string(options.gemm_stages) + " stages, group_m " +
             std::to_string(options.gemm_group_m) + ")";
  } else {
    const JitProgram program = gemm_mma_sync_program(arch, options.mma_stages);
    progress("bf16 GEMM: compiling " + program.name);
    gemm_function = loader.function(program, program.kernels.front());
    gemm_shape.grid_x = unsigned((size / gemm::kMmaBM) * (size / gemm::kMmaBN));
    gemm_shape.block_x = unsigned(gemm::kMmaThreads);
    gemm_shape.shared_bytes = unsigned(gemm::mma_shared_bytes(options.mma_stages));
    method = "gemm_mma_sync (ldmatrix + mma.sync m16n8k16, 128x128x32 tiles, " +
             std::to_string(options.mma_stages) + " stages)";
  }
  method += ", m = n = k = " + std::to_string(size) + ", random bf16 in [-1, 1)";
  ATTN_CU_CHECK(api,
                cuFuncSetAttribute(gemm_function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                   int(gemm_shape.shared_bytes)));
  auto run_gemm = [&] { launch(context, gemm_function, gemm_shape, stream, gp); };

  // Verify before timing: poison C, run once, compare sampled entries with an fp64 dot product.
  progress("bf16 GEMM: verifying " + method);
  ATTN_CU_CHECK(api, cuMemsetD16Async(c_device.address(), 0xffff, elements, stream.handle()));
  run_gemm();
  stream.synchronize();
  std::vector<uint16_t> c(elements);
  c_device.download(c.data(), elements * 2);
  double error_sq = 0, reference_sq = 0;
  size_t nonfinite = 0;
  constexpr int kChecked = 512;
  for (int s = 0; s < kChecked; ++s) {
    // Corners and edges of tiles are where indexing goes wrong: include them.
    const size_t row = s < 4 ? size_t(s % 2) * (size - 1) : random_bf16(7, s) * 131u % size;
    const size_t col = s < 4 ? size_t(s / 2) * (size - 1) : random_bf16(9, s) * 257u % size;
    double dot = 0;
    for (int k = 0; k < size; ++k) {
      dot += double(bf16_value(a[row * size + k])) * double(bf16_value(b[col * size + k]));
    }
    const double got = bf16_value(c[row * size + col]);
    if (!std::isfinite(got)) ++nonfinite;
    error_sq += (got - dot) * (got - dot);
    reference_sq += dot * dot;
  }
  const double rel_l2 = std::sqrt(error_sq / std::max(reference_sq, 1e-30));
  const double flops = 2.0 * double(size) * double(size) * double(size);
  if (nonfinite > 0 || !(rel_l2 < 1e-2)) {
    CalibrationEntry failed;
    failed.ceiling.metric = kBf16Tflops;
    failed.ceiling.method = method;
    failed.error = "GEMM output wrong on sampled entries (rel_l2 " + std::to_string(rel_l2) + ", " +
                   std::to_string(nonfinite) + " non-finite): no tensor ceiling stored";
    entries.push_back(std::move(failed));
    return entries;
  }
  progress("bf16 GEMM: timing (sampled rel_l2 " + std::to_string(rel_l2) + ")");
  entries.push_back(timed(kBf16Tflops, method, flops, run_gemm));
  entries.back().measurement.verification = {true, 0, rel_l2, 0, kChecked, 1e-2, "fp64 host dot"};
  return entries;
}

}  // namespace attn
