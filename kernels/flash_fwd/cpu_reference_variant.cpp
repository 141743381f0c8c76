// flash_fwd.cpu_reference: the CPU oracle (kernels/reference) as a flash_fwd variant, with the
// log-sum-exp output, so that `attn-bench run` works end to end on a machine without a GPU.
#include "kernels/reference/cpu_reference_variant.hpp"
#include "base/dtype.hpp"
#include "kernels/flash_fwd/flash_fwd_variants.hpp"

namespace attn {

namespace {

class CpuReferenceVariant : public FlashFwdVariant {
 public:
  std::string name() const override { return "flash_fwd.cpu_reference"; }
  Family family() const override { return Family::flash_fwd; }
  Backend backend() const override { return Backend::cpu; }
  std::string summary() const override {
    return "CPU oracle: dense attention with LSE, double accumulation, multi-threaded";
  }
  // The oracle's features within the family's scope: prefill and mixed batches (decode is
  // paged_decode's), dense masks, none of the features the family does not define (the oracle
  // computes them: prefix_prefill.cpu_reference runs such batches). Every layout: the oracle
  // reads through the page table.
  FeatureSet features() const override {
    return standard_attention_reference_features()
        .with(feature::kQueries, {"prefill", "mixed"})
        .note(feature::kQueries, "decode", "paged_decode runs decode batches")
        .with(feature::kMask, {"causal", "non_causal"})
        .without(feature::kSlidingWindow)
        .without(feature::kLogitsSoftCap)
        .without(feature::kAttentionSinks);
  }
  std::vector<ConfigAxis> space(const Batch&, const Target&) const override { return {}; }
  KernelConfig default_config(const Batch&, const Target&) const override { return {}; }
  Support supports(const Batch&, const KernelConfig&, const Target& target) const override {
    if (target.backend != Backend::cpu) return Support::no("runs on the CPU backend only");
    return Support::yes();
  }
  std::unique_ptr<Launcher> prepare_with_lse(Problem& problem, const KernelConfig&,
                                             ExecContext& context, float* lse) const override {
    ATTN_ASSERT(problem.backend() == Backend::cpu, "cpu_reference needs a host problem");
    return std::make_unique<CpuReferenceLauncher>(problem, context.cpu_threads, lse);
  }
  Work work(const Batch& batch) const override { return flash_fwd_work(batch); }
};

}  // namespace

std::unique_ptr<Variant> make_flash_fwd_cpu_reference() {
  return std::make_unique<CpuReferenceVariant>();
}

}  // namespace attn
