#include "kernels/launch_inputs.hpp"

#include "kernels/device/cuda_context.hpp"

namespace attn {

LogitTransform log2_logit_transform(const Batch& batch) {
  const double scale = double(batch.softmax_scale);
  LogitTransform t;
  if (batch.logits_soft_cap > 0) {
    const double cap = double(batch.logits_soft_cap);
    t.score_scale = float(scale / cap);
    t.cap_log2 = float(cap * kLog2e);
  } else {
    t.score_scale = float(scale * kLog2e);
  }
  return t;
}

std::vector<float> sink_logits_log2(const Batch& batch) {
  std::vector<float> out(batch.sink_logits.size());
  for (size_t h = 0; h < out.size(); ++h) out[h] = float(double(batch.sink_logits[h]) * kLog2e);
  return out;
}

std::vector<float> scales_per_kv_head(const std::vector<float>& scales, int num_kv_heads) {
  std::vector<float> out(size_t(num_kv_heads), 1.0f);
  for (size_t h = 0; h < out.size() && !scales.empty(); ++h)
    out[h] = scales.size() == 1 ? scales[0] : scales[h];
  return out;
}

int effective_sliding_window(const Batch& batch) {
  return batch.sliding_window > 0 && batch.sliding_window < batch.max_kv_len()
             ? int(batch.sliding_window)
             : 0;
}

void allow_dynamic_shared_memory(const ExecContext& context, CUfunction kernel, int bytes) {
  ATTN_CU_CHECK(context.cuda->api(),
                cuFuncSetAttribute(kernel, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes));
}

}  // namespace attn
