#include "kernels/paged_decode/paged_decode_variants.hpp"

#include "kernels/registry.hpp"
#include "kernels/target.hpp"

namespace attn {

std::unique_ptr<Variant> make_paged_decode_sm80_simt();
std::unique_ptr<Variant> make_paged_decode_sm80_mma();
std::unique_ptr<Variant> make_paged_decode_sm90_tma();
std::unique_ptr<Variant> make_paged_decode_cpu_reference();

void add_paged_decode_variants(Registry& registry) {
  registry.add(make_paged_decode_sm80_simt());
  registry.add(make_paged_decode_sm80_mma());
  registry.add(make_paged_decode_sm90_tma());
  registry.add(make_paged_decode_cpu_reference());
}

FeatureSet paged_decode_features() {
  return FeatureSet()
      .with(feature::kQueries, {"decode"})
      .note(feature::kQueries, "prefix_prefill runs batches with longer queries")
      // The one query token of a decode sequence is its last position: it sees every key whether
      // the mask is causal or not.
      .with(feature::kMask, {"causal", "non_causal"})
      .with(feature::kSlidingWindow)
      .with(feature::kLogitsSoftCap)
      .with(feature::kAttentionSinks)
      .with(feature::kSharedPrefix)
      .with(feature::kKvLayout, {"nhd", "hnd"})
      .with(feature::kDtype, {"bf16", "fp16"})
      .with(feature::kKvDtype, {"fp8_e4m3.per_tensor", "fp8_e4m3.per_head"})
      // sm90_tma's TMA boxes take 64, 128 and 256 only; its rules refuse the others.
      .with(feature::kHeadDim, {64, 80, 96, 128, 192, 256})
      .with_range(feature::kPageSize, 1, 256);
}

PagedPoolStrides paged_pool_strides(const Batch& batch) {
  const long long P = batch.page_size, H = batch.spec.model.num_kv_heads,
                  D = batch.spec.model.head_dim;
  if (batch.spec.kv_cache.layout == KvLayout::nhd) return {P * H * D, H * D, D};
  return {H * P * D, D, P * D};  // HND
}

Work paged_decode_work(const Batch& batch) {
  return minimum_work(batch, KvStorage::paged);
}

}  // namespace attn
