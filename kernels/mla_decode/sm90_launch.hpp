// The launch both Hopper MLA variants share (mla_decode.sm90_wgmma and
// mla_decode.sm90_wgmma_key_rows): the row tiles of each sequence, the split plan of its keys
// (mla_split_plan.hpp), the parameter block with the latent pool's TMA descriptor
// (sm90_wgmma_params.hpp), the partial buffers of split sequences and the grid.
#pragma once

#include <memory>
#include <string>

#include "kernels/device/driver_api.hpp"
#include "kernels/exec_context.hpp"
#include "kernels/problem.hpp"
#include "kernels/variant.hpp"

namespace attn {

struct MlaSm90Launch {
  CUfunction kernel = nullptr;
  int tile_rows = 64;     // (query token, q head) rows per CTA
  int block_tokens = 64;  // keys per pipeline block (the split plan cuts at whole blocks)
  int box_tokens = 64;    // keys per TMA box
  int num_splits = 0;     // 0: the planner's
  int max_splits = 64;
  int threads = 384;
  int shared_bytes = 0;
};

std::unique_ptr<Launcher> launch_mla_sm90(Problem& problem, ExecContext& context,
                                          const MlaSm90Launch& launch);

}  // namespace attn
