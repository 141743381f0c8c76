#include "kernels/prefix_prefill/prefix_prefill_variants.hpp"

#include "kernels/registry.hpp"
#include "workloads/visibility.hpp"

namespace attn {

std::unique_ptr<Variant> make_prefix_prefill_mma();
std::unique_ptr<Variant> make_prefix_prefill_masked();
std::unique_ptr<Variant> make_prefix_prefill_cpu_reference();

void add_prefix_prefill_variants(Registry& registry) {
  registry.add(make_prefix_prefill_mma());
  registry.add(make_prefix_prefill_masked());
  registry.add(make_prefix_prefill_cpu_reference());
}

Support prefix_prefill_supports_batch(const Batch& batch) {
  const DType dtype = batch.spec.model.dtype;
  if (dtype != DType::bf16 && dtype != DType::fp16) {
    return Support::no("dtype " + to_string(dtype) + " is not bf16 or fp16");
  }
  if (batch.kv_dtype != batch.dtype && batch.kv_dtype != DType::fp8_e4m3) {
    return Support::no("KV dtype " + to_string(batch.kv_dtype) + " is neither the Q dtype " +
                       to_string(batch.dtype) + " nor fp8_e4m3");
  }
  if (batch.block_sparse) {
    return Support::no(
        "block-sparse layouts are the blocksparse family's (prefix_prefill reads "
        "causal, window and explicit masks)");
  }
  if (!batch.sink_logits.empty() &&
      batch.sink_logits.size() != size_t(batch.spec.model.num_q_heads)) {
    return Support::no("sink logits must have one value per q head");
  }
  if (batch.num_seqs < 1) return Support::no("the batch has no sequence");
  // Positions and token indices are 32-bit in the kernel (byte offsets are 64-bit).
  if (batch.max_kv_len() >= (int64_t(1) << 30) || batch.total_q >= (int64_t(1) << 30)) {
    return Support::no("sequences or batches of 2^30 tokens or more are not supported");
  }
  return Support::yes();
}

bool prefix_prefill_v_dim_major(const Batch& batch) {
  return batch.spec.kv_cache.layout == KvLayout::vllm;
}

PoolStrides prefix_prefill_pool_strides(const Batch& batch, bool value) {
  const long long e = static_cast<long long>(size_of(batch.kv_dtype));
  const long long P = batch.page_size, H = batch.spec.model.num_kv_heads,
                  D = batch.spec.model.head_dim;
  switch (batch.spec.kv_cache.layout) {
    case KvLayout::nhd:  // [pages, page_size, kv_heads, head_dim]
      return {P * H * D * e, D * e, H * D * e, 16};
    case KvLayout::hnd:  // [pages, kv_heads, page_size, head_dim]
      return {H * P * D * e, P * D * e, D * e, 16};
    case KvLayout::vllm:
      if (value) return {H * D * P * e, D * P * e, e, P * e};  // [pages, kv_heads, head_dim, page]
      return {H * D * P * e, D * P * e, 16, P * 16};  // [pages, kv_heads, head_dim / x, page, x]
  }
  return {};
}

Work prefix_prefill_work(const Batch& batch, bool reads_explicit_mask) {
  const ModelShape& m = batch.spec.model;
  const double element = double(size_of(batch.dtype));
  const double kv_element = double(size_of(batch.kv_dtype));
  Work work;
  const double q_and_out = 2.0 * double(batch.total_q) * m.num_q_heads * m.head_dim * element;
  const double kv = 2.0 * double(batch.total_kv) * m.num_kv_heads * m.head_dim * kv_element;
  const double pages = double(batch.page_indices.size()) * 4.0 + double(batch.num_seqs) * 16.0;
  const double mask =
      reads_explicit_mask && batch.explicit_mask ? double(batch.explicit_mask->bits.size()) : 0.0;
  work.bytes = q_and_out + kv + pages + mask;
  work.flops = 4.0 * m.head_dim * double(visible_pairs(batch));
  return work;
}

}  // namespace attn
