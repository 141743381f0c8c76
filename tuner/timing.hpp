// The timing loop (a first version of the measurement core): warm-up launches, then samples, each
// a launch between two CUDA events after the L2 cache was flushed; the median is the estimate.
// The policy's name is recorded with every result.
#pragma once

#include <string>
#include <vector>

#include "kernels/device/cuda_context.hpp"
#include "kernels/variant.hpp"

namespace attn {

struct TimingPolicy {
  std::string name = "basic";
  int warmup = 3;
  int samples = 30;
  bool flush_l2 = true;
  double max_seconds = 30;  // stop sampling early (keeping what was taken) past this wall time
};

// Evicts the L2 between samples by writing a buffer twice the L2's size.
class L2Flusher {
 public:
  L2Flusher(const CudaContext& context, size_t l2_bytes);
  void flush(const Stream& stream);

 private:
  const CudaContext& context_;
  DeviceBuffer buffer_;
  unsigned value_ = 0;
};

// Microseconds per sample.
std::vector<double> time_cuda(Launcher& launcher, const CudaContext& context, const Stream& stream,
                              L2Flusher* flusher, const TimingPolicy& policy);
std::vector<double> time_cpu(Launcher& launcher, const TimingPolicy& policy);

}  // namespace attn
