// attn-bench calibrate: the device ceilings measured with kernels of our own
// (kernels/calibrate/*.cuh), each timed by the timing core under a policy:
//   read_gbps    stream_read over a buffer many times the L2 (16-byte loads, XOR checksum)
//   copy_gbps    stream_copy between two such buffers (bytes read + written)
//   memcpy_gbps  cuMemcpyDtoDAsync of the same buffers, for reference
//   bf16_tflops  a large bf16 GEMM (m = n = k = 8192 by default) on random data, verified on
//                sampled entries against an fp64 host dot product: gemm_sm90_wgmma (TMA + wgmma)
//                on sm_90a, gemm_mma_sync (ldmatrix + mma.sync) elsewhere
// Every kernel parameter is an option here (and on the command line) so that they can be tuned on
// the device without editing source.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kernels/device/cuda_context.hpp"
#include "kernels/jit/jit_compiler.hpp"
#include "measure/timing_policy.hpp"
#include "results/ceilings.hpp"
#include "results/measurement.hpp"

namespace attn {

struct CalibrationOptions {
  MeasurePolicy policy = confirm_policy();  // timer forced to events, no L2 flush
  size_t stream_bytes = size_t(1) << 30;    // per buffer
  int stream_threads = 256;
  int stream_unroll = 4;
  int stream_blocks_per_sm = 4;
  int gemm_size = 8192;              // m = n = k
  std::string gemm_kernel = "auto";  // auto (wgmma on sm_90a, else mma_sync), wgmma, mma_sync
  int gemm_bn = 256;
  int gemm_consumers = 2;
  int gemm_stages = 4;
  int gemm_group_m = 8;
  int mma_stages = 4;
  bool skip_gemm = false;
};

// The programs calibrate compiles besides stream_program (measure/stream_program.hpp); the CPU
// tests, which have NVRTC but no GPU, compile them too.
JitProgram gemm_wgmma_program(const std::string& arch, int bn, int consumers, int stages,
                              int group_m);
JitProgram gemm_mma_sync_program(const std::string& arch, int stages);
// Empty when the options are valid for `arch`; else what is wrong.
std::string check_calibration_options(const CalibrationOptions& options, const std::string& arch);

// The SM clock a ceiling was measured at, from its measurement: the median clock-probe reading
// of the kept samples, else NVML's reading at the end, else nullopt (not known).
std::optional<double> ceiling_clock_mhz(const Measurement& measurement);

struct CalibrationEntry {
  CeilingRecord ceiling;    // value 0 when it could not be measured
  Measurement measurement;  // samples and statistics behind it
  std::string error;        // why it could not be measured (e.g. the GEMM failed verification)
};

// Runs every calibration on one device; `progress` gets a line before each step.
std::vector<CalibrationEntry> calibrate_device(
    const CudaContext& context, JitCompiler& jit, const CalibrationOptions& options,
    const std::function<void(const std::string&)>& progress);

}  // namespace attn
