// Host side shared by the tensor-core decode variants (paged_decode.sm80_mma and
// paged_decode.sm90_tma), whose kernels share one parameter block (sm80_mma_params.hpp), work
// list and split merge: the limits of their tiles on a batch, and the parameters of a launch.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "kernels/dtype_code_of.hpp"
#include "kernels/exec_context.hpp"
#include "kernels/paged_decode/decode_work_plan.hpp"
#include "kernels/paged_decode/sm80_mma_params.hpp"
#include "kernels/params_launcher.hpp"
#include "kernels/problem.hpp"
#include "kernels/variant.hpp"

namespace attn {

// The features are paged_decode_features() (sm90_tma: without fp8 K/V). Limits: GQA groups up to
// 16 (one mma tile of q heads), sinks one per q head.
Support sm80_mma_supports_limits(const Batch& batch);

// The work planner's inputs for blocks of block_tokens keys dealt to CTAs of `warps` warps and
// shared_bytes, resident_per_sm of them at once on each of the target's SMs: what a launch plans
// with, and what the planner's tile choice asks of the plan before any kernel is compiled.
DecodeWorkInputs tensorcore_work_inputs(const Target& target, int block_tokens, bool aligned_blocks,
                                        int num_splits, DecodeSchedule schedule, int shared_bytes,
                                        int warps, int resident_per_sm);

// The parameters of one launch of `kernel` (threads per CTA, shared bytes) over `problem`: the
// pools and logits, sinks and fp8 scales, and the work plan for block_tokens keys per block (from
// key 0 when aligned_blocks, else from the first visible key)
// (decode_work_plan.hpp: num_splits > 0 fixed, else `schedule` over the CTAs an SM holds of this
// kernel). `owned` keeps the device arrays the parameters point to; grid_x is the CTA count; `plan`
// says what the planner chose.
struct Sm80MmaLaunch {
  Sm80MmaParams params{};
  unsigned grid_x = 0;
  std::vector<DeviceBuffer> owned;
  std::string plan;
};
Sm80MmaLaunch prepare_tensorcore_launch(Problem& problem, ExecContext& context, CUfunction kernel,
                                        int block_tokens, bool aligned_blocks, int num_splits,
                                        DecodeSchedule schedule, int shared_bytes, int threads);

}  // namespace attn
