// Device memory a batch takes on one GPU, estimated before anything is allocated there and checked
// against the device's free memory (docs/workload.md, "Memory"), so that a batch too large for the
// GPU is refused with the sizes instead of failing with CUDA_ERROR_OUT_OF_MEMORY half way.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/device/cuda_context.hpp"
#include "workloads/batch.hpp"

namespace attn {

struct DeviceMemoryNeed {
  int64_t inputs = 0;     // Q, K and V pools, the output, the index arrays (padded block table)
  int64_t masks = 0;      // the block-sparse layout or the explicit mask, as variants upload them
  int64_t reference = 0;  // the GPU reference: its fp32 output, and an upload of the host problem
                          // when the variants' inputs were generated on the device
  int64_t timing = 0;     // the L2 flush buffer and the copies the graph timer rotates through
  int64_t workspace = 0;  // an fp8 cache's 16-bit copies (prefix_prefill.sm90_wgmma's pass)
  int64_t margin = 0;     // other workspaces, loaded modules and the allocator's rounding
  int64_t total() const { return inputs + masks + reference + timing + workspace + margin; }
};

// What an evaluator on a GPU with `l2_bytes` of L2 allocates for `batch`. `gpu_reference`: the
// tiled GPU reference verifies (measure/reference_oracle.hpp); `device_fill`: Q and the pools are
// generated on the device (Problem::prefers_device_fill).
DeviceMemoryNeed device_memory_need(const Batch& batch, bool gpu_reference, bool device_fill,
                                    int64_t l2_bytes);

// Throws InputError (exit code 3) naming the sizes when `need` is more than the free memory of
// the context's device; nothing was allocated yet. `source` names the workload.
void check_device_memory(const DeviceMemoryNeed& need, const CudaContext& context,
                         const std::string& source);

}  // namespace attn
