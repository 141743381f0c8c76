// mla_decode.cpu_reference: the CPU oracle (kernels/reference, which reads the latent pool as K
// and its first kv_lora_rank elements as V) as an mla_decode variant.
#include "kernels/reference/cpu_reference_variant.hpp"
#include "kernels/mla_decode/mla_decode_variants.hpp"

namespace attn {

std::unique_ptr<Variant> make_mla_decode_cpu_reference() {
  return make_cpu_reference_variant(
      {Family::mla_decode,
       "CPU oracle: absorbed latent attention through the page table, double accumulation",
       mla_decode_features(), [](const Batch& batch) { return mla_decode_supports_batch(batch); },
       [](const Batch& batch) { return mla_decode_work(batch); }});
}

}  // namespace attn
