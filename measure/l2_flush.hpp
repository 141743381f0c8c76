// L2Flusher: empties the L2 of the kernel's data between samples, so that each sample reads its
// inputs from DRAM as a kernel in an inference step would, and leaves the L2 clean: a memset of a
// buffer twice the L2's size evicts every line (the outputs of the last sample with the rest),
// then a read of a second buffer of that size (stream_read) evicts the memset's dirty lines. Their
// write-back to DRAM therefore happens before the start event, not inside the timed kernel, whose
// misses evict clean lines only; that write-back (tens of MB) would otherwise add several
// microseconds to every sample. Move-only; the buffers are freed by their own destructors.
#pragma once

#include <cstddef>

#include "kernels/device/cuda_context.hpp"
#include "kernels/exec_context.hpp"

namespace attn {

class L2Flusher {
 public:
  // Compiles (or finds in the JIT cache) the read kernel through `loader`.
  L2Flusher(const CudaContext& context, KernelLoader& loader, size_t l2_bytes);
  L2Flusher(L2Flusher&&) noexcept = default;
  L2Flusher& operator=(L2Flusher&&) noexcept = default;

  // Enqueues the flush on `stream` (asynchronous).
  void flush(const Stream& stream);
  // Device memory the flusher holds (both buffers).
  size_t bytes() const { return written_.bytes() + read_.bytes(); }
  // Its buffers' size for an L2 of l2_bytes: twice the L2, at least 1 MiB, each.
  static size_t buffer_bytes(size_t l2_bytes);

 private:
  const CudaContext* context_;
  DeviceBuffer written_, read_, sink_;
  CUfunction read_kernel_ = nullptr;
  unsigned grid_ = 0;
  unsigned value_ = 0;
};

}  // namespace attn
