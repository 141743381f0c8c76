// prefix_prefill.cpu_reference: the CPU oracle (kernels/reference) as a prefix_prefill variant.
#include "kernels/reference/cpu_reference_variant.hpp"
#include "kernels/prefix_prefill/prefix_prefill_variants.hpp"

namespace attn {

std::unique_ptr<Variant> make_prefix_prefill_cpu_reference() {
  return make_cpu_reference_variant(
      {Family::prefix_prefill,
       "CPU oracle: context through the page table, causal/window/explicit masks, double "
       "accumulation",
       standard_attention_reference_features(),
       // The same oracle as paged_decode.cpu_reference: a decode-only batch is left to that one,
       // so a CPU run does not time the same computation twice (a rule of this family, not a
       // feature the oracle lacks).
       [](const Batch& batch) {
         if (batch.decode_only()) {
           return Support::no("decode-only batch: paged_decode.cpu_reference runs the same oracle");
         }
         return Support::yes();
       },
       [](const Batch& batch) { return prefix_prefill_work(batch); }});
}

}  // namespace attn
