// blocksparse.cpu_reference: the CPU oracle (kernels/reference, which applies key_visible and so
// the batch's block-sparse layout) as a blocksparse variant.
#include "kernels/blocksparse/blocksparse_variants.hpp"
#include "kernels/reference/cpu_reference_variant.hpp"

namespace attn {

std::unique_ptr<Variant> make_blocksparse_cpu_reference() {
  return make_cpu_reference_variant(
      {Family::blocksparse,
       "CPU oracle: block-sparse attention through key_visible, double accumulation",
       [](const Batch& batch) { return blocksparse_supports_batch(batch); },
       [](const Batch& batch) { return blocksparse_work(batch); }});
}

}  // namespace attn
