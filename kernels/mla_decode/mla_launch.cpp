// The launch every GPU variant of mla_decode shares (mla_launch.hpp).
#include "kernels/mla_decode/mla_launch.hpp"

#include <algorithm>

#include "kernels/device/tensor_map.hpp"
#include "kernels/launch_inputs.hpp"
#include "kernels/mla_decode/mla_decode_variants.hpp"
#include "kernels/mla_decode/mla_split_plan.hpp"
#include "kernels/mla_decode/sm90_wgmma_params.hpp"
#include "kernels/params_launcher.hpp"

namespace attn {

MlaLaunch prepare_mla_launch(Problem& problem, ExecContext& context, const MlaLaunchSpec& spec) {
  const Batch& batch = problem.batch();
  const ModelShape& m = batch.spec.model;
  allow_dynamic_shared_memory(context, spec.kernel, spec.shared_bytes);

  std::vector<int> row_tiles(size_t(batch.num_seqs));
  int max_row_tiles = 1;
  int64_t max_rows = 0;
  for (int s = 0; s < batch.num_seqs; ++s) {
    const int64_t rows = mla_rows_of(batch, s);
    row_tiles[size_t(s)] = int((rows + spec.tile_rows - 1) / spec.tile_rows);
    max_row_tiles = std::max(max_row_tiles, row_tiles[size_t(s)]);
    max_rows = std::max(max_rows, rows);
  }
  MlaSplitInputs inputs;
  inputs.block_tokens = spec.block_tokens;
  inputs.fixed_splits = spec.num_splits;
  inputs.sm_count = context.target.sm_count;
  inputs.resident_per_sm = resident_ctas(context, spec.kernel, spec.shared_bytes, spec.threads);
  inputs.max_splits = spec.max_splits;
  const MlaSplitPlan plan = plan_mla_splits(batch.kv_lens, row_tiles, inputs);

  MlaLaunch launch;
  MlaSm80Params& p = launch.params;
  p.q = problem.q();
  p.latent = problem.k_pool();
  p.block_table = problem.block_table();
  p.out = problem.out();
  std::vector<MlaWorkItem> work(size_t(plan.ctas()));
  for (size_t c = 0; c < work.size(); ++c) {
    const int32_t* item = plan.work.data() + 5 * c;
    const size_t s = size_t(item[0]);
    const int64_t q0 = batch.cu_seqlens_q[s];
    work[c] = MlaWorkItem{item[0],
                          item[1],
                          item[2],
                          item[3],
                          item[4],
                          int(q0),
                          int(batch.cu_seqlens_q[s + 1] - q0),
                          int(batch.kv_lens[s])};
  }
  launch.owned.push_back(upload_array(*context.cuda, work));
  p.work = reinterpret_cast<const MlaWorkItem*>(launch.owned.back().address());
  launch.owned.push_back(upload_array(*context.cuda, plan.seq_partial));
  p.seq_partial = reinterpret_cast<const int*>(launch.owned.back().address());
  // Counters start at zero; the CTA that merges a (sequence, row tile) resets its counter.
  launch.owned.push_back(upload_array(
      *context.cuda, std::vector<int32_t>(size_t(batch.num_seqs) * size_t(max_row_tiles), 0)));
  p.split_counters = reinterpret_cast<int*>(launch.owned.back().address());
  if (plan.partial_slots > 0) {
    const size_t rows = size_t(plan.partial_slots) * size_t(max_rows);
    const size_t out_bytes = rows * size_t(m.kv_lora_rank) * sizeof(float);
    CUdeviceptr scratch = context.workspace->get(out_bytes + rows * sizeof(float));
    p.partial_out = reinterpret_cast<float*>(scratch);
    p.partial_lse = reinterpret_cast<float*>(scratch + out_bytes);
  }
  p.kv_scale = spec.kv_scale;
  p.scale_log2 = float(double(batch.softmax_scale) * kLog2e);
  p.num_q_heads = m.num_q_heads;
  p.page_size = batch.page_size;
  p.max_pages_per_seq = batch.max_pages_per_seq;
  p.max_rows = int(max_rows);
  p.row_tiles = max_row_tiles;
  p.causal = batch.causal ? 1 : 0;

  launch.shape.grid_x = unsigned(plan.ctas());
  launch.shape.grid_y = unsigned(max_row_tiles);
  launch.shape.block_x = unsigned(spec.threads);
  launch.shape.shared_bytes = unsigned(spec.shared_bytes);
  launch.plan = plan.description + ", " + std::to_string(max_row_tiles) + " row tiles of " +
                std::to_string(spec.tile_rows) + " rows";
  return launch;
}

std::unique_ptr<Launcher> launch_mla_sm90(Problem& problem, ExecContext& context,
                                          const MlaLaunchSpec& spec, int box_tokens) {
  MlaLaunch launch = prepare_mla_launch(problem, context, spec);
  const Batch& batch = problem.batch();
  const ModelShape& m = batch.spec.model;
  MlaSm90Params params{};
  params.base = launch.params;
  // The pool as [pages x page_size slots][rank + rope], boxes of 64 columns x box_tokens slots;
  // an fp8 pool's rows as pairs of codes (16-bit elements: boxes of 128 codes, the last one
  // zero-filled past the row).
  const uint64_t width = uint64_t(m.kv_lora_rank + m.qk_rope_head_dim);
  const bool fp8 = batch.kv_fp8();
  params.latent_map = encode_tensor_map_2d(
      context.cuda->api(), fp8 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : tensor_map_type(m.dtype),
      problem.k_pool(), fp8 ? width / 2 : width,
      uint64_t(batch.num_pages) * uint64_t(batch.page_size), fp8 ? width : width * 2,
      uint32_t(box_tokens));
  auto launcher = std::make_unique<ParamsLauncher<MlaSm90Params>>(
      context, spec.kernel, launch.shape, params, std::move(launch.owned));
  launcher->set_plan(launch.plan + ", TMA boxes of " + std::to_string(box_tokens) + " keys");
  return launcher;
}

}  // namespace attn
