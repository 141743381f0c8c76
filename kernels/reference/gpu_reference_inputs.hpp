// What both GPU references (gpu_reference.hpp, gpu_tiled_reference.hpp) read besides the problem's
// tensors, on the device: the batch's tables (gpu_reference_tables), its block-sparse layout and
// explicit mask as the host holds them, the fp8 scales and the sink logits, plus the fp32 output
// and LSE buffers they write. params() points at all of them and at the problem's Q, pools and
// block table. Every buffer is freed when the object goes.
#pragma once

#include <vector>

#include "kernels/device/cuda_context.hpp"
#include "kernels/problem.hpp"
#include "kernels/reference/gpu_reference_params.hpp"

namespace attn {

class GpuReferenceInputs {
 public:
  // `device` is a device problem with at least one output row; it must outlive this object.
  GpuReferenceInputs(const Problem& device, const CudaContext& cuda);
  GpuReferenceInputs(const GpuReferenceInputs&) = delete;
  GpuReferenceInputs& operator=(const GpuReferenceInputs&) = delete;

  const GpuReferenceParams& params() const { return params_; }
  // After the kernel ran and its stream was synchronised: the output, [total_q, num_q_heads,
  // v_head_dim] floats, and *lse ([total_q, num_q_heads]) when given.
  std::vector<float> download(std::vector<float>* lse) const;

  // Fills the output and LSE buffers with NaN (all bits set) on `stream`, so that an element the
  // kernel does not write reads back as NaN, never as what the allocation held.
  void poison_outputs(const Stream& stream) const;

  // Uploads `bytes` (at least one byte is allocated) and keeps the buffer; returns its address.
  const void* keep(const void* host, size_t bytes);

 private:
  const CudaContext& cuda_;
  size_t rows_ = 0;
  size_t out_width_ = 0;               // v_head_dim: the output's rows
  std::vector<DeviceBuffer> buffers_;  // moved, not copied: their device addresses stay put
  DeviceBuffer out_;                   // [rows, v_head_dim] floats
  DeviceBuffer lse_;                   // [rows] floats
  GpuReferenceParams params_{};
};

}  // namespace attn
