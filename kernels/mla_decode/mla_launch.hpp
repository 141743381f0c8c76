// The launch every GPU variant of mla_decode shares: the row tiles of each sequence, the split plan
// of its keys (mla_split_plan.hpp), the kernel parameters (sm80_mma_params.hpp) with the work
// list, the split counters and the partial buffers of split sequences, and the grid. The Hopper
// variants add the latent pool's TMA descriptor (sm90_wgmma_params.hpp).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kernels/device/driver_api.hpp"
#include "kernels/exec_context.hpp"
#include "kernels/mla_decode/sm80_mma_params.hpp"
#include "kernels/problem.hpp"
#include "kernels/variant.hpp"

namespace attn {

struct MlaLaunchSpec {
  CUfunction kernel = nullptr;
  int tile_rows = 64;     // (query token, q head) rows per CTA
  int block_tokens = 64;  // keys per pipeline block (the split plan cuts at whole blocks)
  int num_splits = 0;     // 0: the planner's
  int max_splits = 64;
  int threads = 128;
  int shared_bytes = 0;
  float kv_scale = 1.0f;  // an fp8 latent cache's scale
};

struct MlaLaunch {
  MlaSm80Params params{};
  std::vector<DeviceBuffer> owned;  // what the parameters point into
  LaunchShape shape;
  std::string plan;  // the split plan and the row tiles, in words
};

MlaLaunch prepare_mla_launch(Problem& problem, ExecContext& context, const MlaLaunchSpec& spec);

// The Hopper variants' launcher: prepare_mla_launch's parameters with the latent pool's TMA
// descriptor, boxes of 64 columns x box_tokens keys.
std::unique_ptr<Launcher> launch_mla_sm90(Problem& problem, ExecContext& context,
                                          const MlaLaunchSpec& spec, int box_tokens);

}  // namespace attn
