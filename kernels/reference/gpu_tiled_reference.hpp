// The tiled GPU reference (device code: gpu_tiled_reference.cuh): the oracle for large problems,
// those the CPU reference would take minutes over and the naive GPU reference (gpu_reference.hpp,
// every row reading every key from global memory) seconds to tens of seconds. Same semantics and
// interface as both, in fp32: a CTA per (tile of query tokens of one sequence, q head) stages K
// and V in shared memory and runs an online softmax per row. Shares no code with the optimised
// variants; its per-element rules are the naive reference's (gpu_reference_params.hpp), and its
// inputs are uploaded the same way (gpu_reference_inputs.hpp).
#pragma once

#include <string>
#include <vector>

#include "kernels/device/cuda_context.hpp"
#include "kernels/exec_context.hpp"
#include "kernels/jit/jit_compiler.hpp"
#include "kernels/problem.hpp"
#include "kernels/support.hpp"
#include "workloads/batch.hpp"

namespace attn {

// The name verification records for this oracle (Verification::reference).
inline constexpr const char* kGpuTiledReferenceName = "gpu_tiled_fp32";

// The launch: one CTA per (query tile, q head). Query tiles are up to kGpuTiledRows consecutive
// tokens of one sequence, in token order; a sequence without queries has none.
struct GpuTiledPlan {
  std::vector<int> tile_seq;                // [tiles]
  std::vector<long long> tile_first_query;  // [tiles] index of its first query in the sequence
  LaunchShape shape;                        // grid (tiles, num_q_heads), kGpuTiledThreads threads
};

// Whether the tiled GPU reference computes `batch`: standard attention up to head_dim (and
// v_head_dim) kGpuTiledMaxHeadDim. It declines multi-head latent attention: its threads of a row
// hold at most kGpuTiledMaxHeadDim dims and its shared-memory tiles stage K and V as two pools,
// where a latent row is kv_lora_rank + qk_rope_head_dim wide (576 for DeepSeek-V3) and V lies
// inside it; the naive GPU reference (gpu_reference.hpp) verifies those.
Support gpu_tiled_reference_supports(const Batch& batch);

// Throws an internal error for a head_dim or v_head_dim above kGpuTiledMaxHeadDim or a grid CUDA
// cannot launch.
GpuTiledPlan gpu_tiled_reference_plan(const Batch& batch);

// One program with the kernel for the batch's dtypes.
JitProgram gpu_tiled_reference_program(const Batch& batch, const std::string& arch);

// Runs the oracle on a device problem and returns the output, [total_q, num_q_heads, v_head_dim]
// floats, and *lse ([total_q, num_q_heads], natural log, -inf for a row that sees no key) when
// given. Synchronises `stream`; every buffer it allocates is freed before it returns.
std::vector<float> gpu_tiled_paged_attention_reference(const Problem& device,
                                                       const CudaContext& cuda,
                                                       KernelLoader& loader, const Stream& stream,
                                                       std::vector<float>* lse = nullptr);

}  // namespace attn
