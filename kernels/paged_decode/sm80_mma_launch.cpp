// Host side shared by paged_decode.sm80_mma and paged_decode.sm90_tma (sm80_mma_launch.hpp).
#include "kernels/paged_decode/sm80_mma_launch.hpp"

#include <algorithm>

#include "kernels/launch_inputs.hpp"
#include "kernels/paged_decode/paged_decode_variants.hpp"
#include "kernels/paged_decode/sm80_mma_traits.hpp"

namespace attn {

Support sm80_mma_supports_limits(const Batch& batch) {
  const int group = batch.spec.group_size();
  if (group < 1 || group > paged_decode::sm80_mma::kMaxGroup) {
    return Support::no("GQA group size " + std::to_string(group) + " exceeds " +
                       std::to_string(paged_decode::sm80_mma::kMaxGroup) +
                       " (the q heads of a KV head fill the 16 rows of one mma tile)");
  }
  if (!batch.sink_logits.empty() &&
      batch.sink_logits.size() != size_t(batch.spec.model.num_q_heads)) {
    return Support::no("sink logits must have one value per q head");
  }
  return Support::yes();
}

DecodeWorkInputs tensorcore_work_inputs(const Target& target, int block_tokens, bool aligned_blocks,
                                        int num_splits, DecodeSchedule schedule, int shared_bytes,
                                        int warps, int resident_per_sm) {
  DecodeWorkInputs inputs;
  inputs.block_tokens = block_tokens;
  inputs.aligned_blocks = aligned_blocks;
  inputs.fixed_splits = num_splits;
  inputs.sm_count = target.sm_count;
  inputs.resident_per_sm = resident_per_sm;
  inputs.max_splits = paged_decode::sm80_mma::kMaxSplits;
  // cp.async pipelines (the automatic schedule's kernel) need several CTAs per SM to stream.
  if (schedule == DecodeSchedule::automatic)
    inputs.saturating_per_sm = ctas_to_fill_sm(shared_bytes, warps, resident_per_sm);
  return inputs;
}

Sm80MmaLaunch prepare_tensorcore_launch(Problem& problem, ExecContext& context, CUfunction kernel,
                                        int block_tokens, bool aligned_blocks, int num_splits,
                                        DecodeSchedule schedule, int shared_bytes, int threads) {
  const Batch& batch = problem.batch();
  const ModelShape& m = batch.spec.model;
  Sm80MmaLaunch launch;
  Sm80MmaParams& p = launch.params;
  p.q = problem.q();
  p.k_pool = problem.k_pool();
  p.v_pool = problem.v_pool();
  p.block_table = problem.block_table();
  p.kv_lens = problem.kv_lens();
  p.out = problem.out();
  const PagedPoolStrides strides = paged_pool_strides(batch);  // elements
  p.page_stride = strides.page;
  p.token_stride = strides.token;
  p.head_stride = strides.head;
  p.num_seqs = batch.num_seqs;
  p.num_q_heads = m.num_q_heads;
  p.num_kv_heads = m.num_kv_heads;
  p.group = batch.spec.group_size();
  p.page_size = batch.page_size;
  p.max_pages_per_seq = batch.max_pages_per_seq;
  p.sliding_window = effective_sliding_window(batch);
  const LogitTransform logits = log2_logit_transform(batch);
  p.score_scale = logits.score_scale;
  p.cap_log2 = logits.cap_log2;
  std::vector<DeviceBuffer>& owned = launch.owned;
  if (!batch.sink_logits.empty()) {
    owned.push_back(upload_array(*context.cuda, sink_logits_log2(batch)));
    p.sink_log2 = reinterpret_cast<const float*>(owned.back().address());
  }
  if (batch.kv_fp8()) {
    p.k_scale = upload_kv_scales(*context.cuda, batch.k_scales, m.num_kv_heads, owned);
    p.v_scale = upload_kv_scales(*context.cuda, batch.v_scales, m.num_kv_heads, owned);
  }
  const DecodeWorkInputs inputs = tensorcore_work_inputs(
      context.target, block_tokens, aligned_blocks, num_splits, schedule, shared_bytes,
      threads / 32, resident_ctas(context, kernel, shared_bytes, threads));
  const DecodeWorkPlan plan = plan_decode_work(batch, schedule, inputs);
  launch.plan = plan.description;
  owned.push_back(upload_array(*context.cuda, plan.work));
  p.work = reinterpret_cast<const int*>(owned.back().address());
  owned.push_back(upload_array(*context.cuda, plan.cta_work));
  p.cta_work = reinterpret_cast<const int*>(owned.back().address());
  owned.push_back(upload_array(*context.cuda, plan.seq_splits));
  p.seq_splits = reinterpret_cast<const int*>(owned.back().address());
  owned.push_back(upload_array(*context.cuda, plan.seq_partial));
  p.seq_partial = reinterpret_cast<const int*>(owned.back().address());
  // Counters start at zero; the CTA that merges a (sequence, KV head) resets its counter.
  owned.push_back(upload_array(
      *context.cuda, std::vector<int32_t>(size_t(batch.num_seqs) * size_t(m.num_kv_heads), 0)));
  p.split_counters = reinterpret_cast<int*>(owned.back().address());
  if (plan.partial_rows > 0) {
    const size_t rows = size_t(plan.partial_rows) * size_t(m.num_q_heads);
    const size_t out_bytes = rows * size_t(m.head_dim) * sizeof(float);
    CUdeviceptr scratch = context.workspace->get(out_bytes + rows * sizeof(float));
    p.partial_out = reinterpret_cast<float*>(scratch);
    p.partial_lse = reinterpret_cast<float*>(scratch + out_bytes);
  }

  launch.grid_x = unsigned(int64_t(plan.ctas()) * m.num_kv_heads);
  return launch;
}

}  // namespace attn
