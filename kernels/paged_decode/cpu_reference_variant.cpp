// paged_decode.cpu_reference: the CPU oracle (kernels/reference) as a paged_decode variant.
#include "kernels/reference/cpu_reference_variant.hpp"
#include "kernels/paged_decode/paged_decode_variants.hpp"

namespace attn {

std::unique_ptr<Variant> make_paged_decode_cpu_reference() {
  return make_cpu_reference_variant(
      {Family::paged_decode,
       "CPU oracle: reads through the page table, double accumulation, multi-threaded",
       standard_attention_reference_features().with(feature::kQueries, {"decode"}),
       {},
       [](const Batch& batch) { return paged_decode_work(batch); }});
}

}  // namespace attn
