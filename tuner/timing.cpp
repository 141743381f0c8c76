#include "tuner/timing.hpp"

#include <chrono>

namespace attn {

namespace {
double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
}  // namespace

L2Flusher::L2Flusher(const CudaContext& context, size_t l2_bytes)
    : context_(context), buffer_(context, std::max<size_t>(2 * l2_bytes, 1 << 20)) {}

void L2Flusher::flush(const Stream& stream) {
  ATTN_CU_CHECK(context_.api(), cuMemsetD32Async(buffer_.address(), ++value_, buffer_.bytes() / 4,
                                                 stream.handle()));
}

std::vector<double> time_cuda(Launcher& launcher, const CudaContext& context, const Stream& stream,
                              L2Flusher* flusher, const TimingPolicy& policy) {
  for (int i = 0; i < policy.warmup; ++i) launcher.launch();
  stream.synchronize();
  Event start(context), stop(context);
  std::vector<double> samples;
  const auto began = std::chrono::steady_clock::now();
  for (int i = 0; i < policy.samples; ++i) {
    if (flusher && policy.flush_l2) flusher->flush(stream);
    start.record(stream);
    launcher.launch();
    stop.record(stream);
    stop.synchronize();
    samples.push_back(double(stop.elapsed_ms_since(start)) * 1e3);
    if (seconds_since(began) > policy.max_seconds) break;
  }
  return samples;
}

std::vector<double> time_cpu(Launcher& launcher, const TimingPolicy& policy) {
  for (int i = 0; i < policy.warmup; ++i) launcher.launch();
  std::vector<double> samples;
  const auto began = std::chrono::steady_clock::now();
  for (int i = 0; i < policy.samples; ++i) {
    const auto start = std::chrono::steady_clock::now();
    launcher.launch();
    samples.push_back(seconds_since(start) * 1e6);
    if (seconds_since(began) > policy.max_seconds) break;
  }
  return samples;
}

}  // namespace attn
