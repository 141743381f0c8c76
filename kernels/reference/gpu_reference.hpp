// The naive GPU reference (device code: gpu_reference.cuh): the oracle for problems too large for
// the CPU reference to verify in seconds. Same semantics and interface as paged_attention_reference
// (paged_attention_reference.hpp), in fp32 instead of double, on a device problem. Shares no code
// with the optimised variants; its per-element rules (visibility, pool addressing, element
// decoding, fp8 scales) are in gpu_reference_params.hpp, checked against the host's on the CPU.
#pragma once

#include <string>
#include <vector>

#include "kernels/device/cuda_context.hpp"
#include "kernels/exec_context.hpp"
#include "kernels/jit/jit_compiler.hpp"
#include "kernels/problem.hpp"
#include "kernels/reference/gpu_reference_params.hpp"
#include "kernels/support.hpp"
#include "workloads/batch.hpp"

namespace attn {

// The name verification records for this oracle (Verification::reference).
inline constexpr const char* kGpuReferenceName = "gpu_naive_fp32";

// Whether the naive GPU reference computes `batch`: every standard-attention batch (Q and K read
// head_dim wide, V and the output v_head_dim wide, e.g. DeepSeek-V3's prefill, Q/K 192 and V 128)
// and multi-head latent attention (attention "mla": one kv head whose K row is the latent row,
// kv_lora_rank + qk_rope_head_dim wide, and whose V is its first kv_lora_rank elements, from the
// same pool under the same fp8 scale). It declines rows wider than 32 x
// kGpuReferenceMaxDimsPerLane, which the schema never makes. The tiled GPU reference takes less
// (gpu_tiled_reference_supports). Both throw an internal error when called on a batch they decline.
Support gpu_reference_supports(const Batch& batch);

// The GPU reference that verifies `batch` when a GPU reference does (use_gpu_reference): the
// tiled one (kGpuTiledReferenceName) where it takes the batch, else the naive one
// (kGpuReferenceName: multi-head latent attention). Only for a batch gpu_reference_supports takes.
const char* gpu_reference_name_for(const Batch& batch);

// The host arrays the kernel reads besides the problem's tensors and the batch's masks, built
// from the batch with the host's own definitions (pool_offset, the CPU reference's row order).
// The block-sparse layout and the explicit mask are read (and uploaded) from the batch as they are.
struct GpuReferenceTables {
  std::vector<long long> context_lens;                // [num_seqs]
  std::vector<long long> kv_lens;                     // [num_seqs]
  std::vector<long long> cu_seqlens_q;                // [num_seqs + 1]
  std::vector<int> seq_of_token;                      // [total_q]
  std::vector<long long> k_dim_offset, v_dim_offset;  // [head_dim], [v_head_dim]
  GpuReferencePool k_strides{}, v_strides{};  // strides only (data and dim_offset left null)
};

// Throws an internal error when a layout's pool_offset is not of the affine-plus-dim-table form
// GpuReferencePool describes (checked at every page, slot and head corner for every dim).
GpuReferenceTables gpu_reference_tables(const Batch& batch);

// The mask view of `tables` and the batch's masks with host pointers, to evaluate
// gpu_reference_key_visible on the host.
GpuReferenceMask gpu_reference_host_mask(const Batch& batch, const GpuReferenceTables& tables);

// One program with the kernel for the batch's dtypes.
JitProgram gpu_reference_program(const Batch& batch, const std::string& arch);

// Runs the oracle on a device problem and returns the output, [total_q, num_q_heads, v_head_dim]
// floats, and *lse ([total_q, num_q_heads], natural log, -inf for a row that sees no key) when
// given. Synchronises `stream`; every buffer it allocates is freed before it returns.
std::vector<float> gpu_paged_attention_reference(const Problem& device, const CudaContext& cuda,
                                                 KernelLoader& loader, const Stream& stream,
                                                 std::vector<float>* lse = nullptr);

}  // namespace attn
