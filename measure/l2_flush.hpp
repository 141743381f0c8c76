// L2Flusher: evicts the L2 cache between samples by writing a buffer twice the L2's size, so that
// each sample reads its inputs from DRAM as a kernel in an inference step would. Move-only; the
// buffer is freed by its own destructor.
#pragma once

#include <cstddef>

#include "kernels/device/cuda_context.hpp"

namespace attn {

class L2Flusher {
 public:
  L2Flusher(const CudaContext& context, size_t l2_bytes);
  L2Flusher(L2Flusher&&) noexcept = default;
  L2Flusher& operator=(L2Flusher&&) noexcept = default;

  // Enqueues the flush on `stream` (asynchronous).
  void flush(const Stream& stream);
  size_t bytes() const { return buffer_.bytes(); }

 private:
  const DriverApi* api_;
  DeviceBuffer buffer_;
  unsigned value_ = 0;
};

}  // namespace attn
