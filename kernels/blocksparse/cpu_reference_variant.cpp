// blocksparse.cpu_reference: the CPU oracle (kernels/reference, which applies key_visible and so
// the batch's block-sparse layout) as a blocksparse variant; it dequantises an fp8 cache's codes
// with their scales, as the family's sm80 kernels do.
#include "kernels/reference/cpu_reference_variant.hpp"
#include "kernels/blocksparse/blocksparse_variants.hpp"

namespace attn {

std::unique_ptr<Variant> make_blocksparse_cpu_reference() {
  return make_cpu_reference_variant(
      {Family::blocksparse,
       "CPU oracle: block-sparse attention through key_visible, double accumulation",
       // The family's masks only, and none of the features it does not define (the oracle
       // computes them: prefix_prefill.cpu_reference runs such batches).
       standard_attention_reference_features()
           .with(feature::kMask, {"block_sparse", "block_sparse_non_causal"})
           .note(feature::kMask, "causal", kBlocksparseNeedsALayout)
           .note(feature::kMask, "non_causal", kBlocksparseNeedsALayout)
           .without(feature::kSlidingWindow)
           .without(feature::kLogitsSoftCap)
           .without(feature::kAttentionSinks),
       [](const Batch& batch) { return blocksparse_supports_layout(batch); },
       [](const Batch& batch) { return blocksparse_work(batch); }});
}

}  // namespace attn
