#include "kernels/flash_fwd/flash_fwd_variants.hpp"

#include "kernels/registry.hpp"
#include "workloads/visibility.hpp"

namespace attn {

std::unique_ptr<Variant> make_flash_fwd_sm80_mma();
std::unique_ptr<Variant> make_flash_fwd_cpu_reference();

void add_flash_fwd_variants(Registry& registry) {
  registry.add(make_flash_fwd_sm80_mma());
  registry.add(make_flash_fwd_cpu_reference());
}

Support flash_fwd_supports_batch(const Batch& batch) {
  if (batch.decode_only()) {
    return Support::no(
        "a decode batch (one query token per sequence) is paged_decode's; flash_fwd needs a "
        "sequence with more than one query token");
  }
  if (batch.sliding_window > 0) return Support::no("sliding window is not part of flash_fwd");
  if (batch.logits_soft_cap > 0) return Support::no("logits soft-cap is not part of flash_fwd");
  if (!batch.sink_logits.empty()) return Support::no("attention sinks are not part of flash_fwd");
  if (batch.block_sparse) return Support::no("block-sparse masks are not part of flash_fwd");
  if (batch.explicit_mask) return Support::no("explicit masks are not part of flash_fwd");
  if (batch.kv_dtype != batch.dtype) {
    return Support::no("KV dtype " + to_string(batch.kv_dtype) +
                       " (quantised KV cache) is not part of flash_fwd; K/V must be " +
                       to_string(batch.dtype) + " like Q");
  }
  return Support::yes();
}

Work flash_fwd_work(const Batch& batch) {
  const ModelShape& m = batch.spec.model;
  const double element = double(size_of(batch.dtype));
  Work work;
  const double q_and_out = 2.0 * double(batch.total_q) * m.num_q_heads * m.head_dim * element;
  const double kv = 2.0 * double(batch.total_kv) * m.num_kv_heads * m.head_dim * element;
  work.bytes = q_and_out + kv;
  work.flops = 4.0 * m.head_dim * double(visible_pairs(batch));
  return work;
}

}  // namespace attn
