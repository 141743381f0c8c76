// Problem: a Batch made concrete on one backend: Q, the paged K/V pools, the output and the index
// arrays, in host memory (for the CPU reference) or device memory (for GPU variants). A device
// problem is an upload of a host problem, so both hold the same bytes.
//
// Tensors (element types: dtype for Q and out, kv_dtype for the pools, int32 for index arrays):
//   q            [total_q, num_q_heads, head_dim]
//   k_pool       the batch's layout (workload_spec.hpp, KvLayout), e.g. NHD [num_pages,
//                page_size, kv_heads, head_dim]; fp8 pools hold codes (batch.k_scales)
//   v_pool       as k_pool with rows v_head_dim wide (vLLM: [num_pages, kv_heads, v_head_dim,
//                page_size])
//   out          [total_q, num_q_heads, v_head_dim] (mla: [total_q, num_q_heads, kv_lora_rank])
//   mla (attention "mla", spec.model.latent()): q is [total_q, num_q_heads, kv_lora_rank +
//                qk_rope_head_dim], a row [q_nope absorbed | q_rope]; k_pool is the latent pool
//                [num_pages, page_size, kv_lora_rank + qk_rope_head_dim], a row [c | k_rope],
//                fp8 codes with the one scale batch.k_scales[0]; v_pool is empty (null on the
//                host, 0 bytes): V is c, the first kv_lora_rank elements of each k_pool row
//   block_table  [num_seqs, max_pages_per_seq] (workloads/batch.hpp, padded_block_table): on the
//                device only; a host problem has none (the CPU references read the batch's CSR
//                page table), so block_table() is null there
//   kv_lens      [num_seqs]
//   cu_seqlens_q [num_seqs + 1]
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/device/cuda_context.hpp"
#include "kernels/exec_context.hpp"
#include "kernels/target.hpp"
#include "workloads/batch.hpp"

namespace attn {

class Problem {
 public:
  // Generates the batch's data into host memory (multi-threaded). The batch must outlive this.
  static Problem on_host(const Batch& batch);
  // Uploads a host problem to the device.
  static Problem on_device(const Problem& host, const CudaContext& context);
  // Generates Q and the pools on the device (kernels/fill: the same bytes as on_host), uploading
  // only the index arrays: no host fill and no PCIe copy of the data. The batch must outlive this.
  static Problem generated_on_device(const Batch& batch, const CudaContext& context,
                                     KernelLoader& loader, const Stream& stream);
  // Whether a batch is large enough (Q + K + V at least kDeviceFillThresholdBytes) that
  // generating its data on the device beats filling it on the host and uploading it.
  static constexpr size_t kDeviceFillThresholdBytes = size_t(256) << 20;
  static bool prefers_device_fill(const Batch& batch);

  Problem(Problem&&) = default;
  Problem& operator=(Problem&&) = default;

  const Batch& batch() const { return *batch_; }
  Backend backend() const { return backend_; }

  // Host pointers for a host problem; device addresses (as pointers) for a device problem.
  const void* q() const { return address(kQ); }
  const void* k_pool() const { return address(kKPool); }
  const void* v_pool() const { return address(kVPool); }
  void* out() const { return address(kOut); }
  const int32_t* block_table() const { return static_cast<const int32_t*>(address(kBlockTable)); }
  const int32_t* kv_lens() const { return static_cast<const int32_t*>(address(kKvLens)); }
  const int32_t* cu_seqlens_q() const { return static_cast<const int32_t*>(address(kCuSeqlensQ)); }

  size_t out_bytes() const { return bytes_[kOut]; }
  size_t total_bytes() const;  // every tensor's bytes: what one more copy of the problem takes
  // Fills the output with 0xFF bytes (NaN in bf16 and fp16) so that an element a kernel forgets
  // to write fails verification. Asynchronous on `stream` for a device problem.
  void poison_output(const Stream* stream);
  // Copies the output to host memory (synchronises the device first).
  std::vector<uint8_t> read_output() const { return download(kOut); }

  enum Tensor { kQ, kKPool, kVPool, kOut, kBlockTable, kKvLens, kCuSeqlensQ, kTensorCount };
  // A copy of one tensor's bytes in host memory (synchronises the device first).
  std::vector<uint8_t> download(Tensor t) const;

 private:
  Problem() = default;
  void* address(Tensor t) const;

  const Batch* batch_ = nullptr;
  Backend backend_ = Backend::cpu;
  const CudaContext* context_ = nullptr;
  size_t bytes_[kTensorCount] = {};
  std::vector<std::vector<uint8_t>> host_;  // [kTensorCount] for a host problem
  std::vector<DeviceBuffer> device_;        // [kTensorCount] for a device problem
};

}  // namespace attn
