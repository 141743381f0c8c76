// prefix_prefill.cpu_reference: the CPU oracle (kernels/reference) as a variant, so that
// `attn-bench run` on a prefill workload works end to end on a machine without a GPU.
#include "base/dtype.hpp"
#include "kernels/prefix_prefill/prefix_prefill_variants.hpp"
#include "kernels/reference/paged_attention_reference.hpp"

namespace attn {

namespace {

class CpuReferenceLauncher : public Launcher {
 public:
  CpuReferenceLauncher(Problem& problem, size_t threads) : problem_(problem), threads_(threads) {}
  void launch() override {
    std::vector<float> out = paged_attention_reference(problem_, threads_);
    const DType dtype = problem_.batch().spec.model.dtype;
    for (size_t i = 0; i < out.size(); ++i) store_from_float(problem_.out(), i, dtype, out[i]);
  }

 private:
  Problem& problem_;
  size_t threads_;
};

class CpuReferenceVariant : public Variant {
 public:
  std::string name() const override { return "prefix_prefill.cpu_reference"; }
  Family family() const override { return Family::prefix_prefill; }
  Backend backend() const override { return Backend::cpu; }
  std::string summary() const override {
    return "CPU oracle: context through the page table, causal/window/explicit masks, double "
           "accumulation";
  }
  std::vector<ConfigAxis> space(const Batch&, const Target&) const override { return {}; }
  KernelConfig default_config(const Batch&, const Target&) const override { return {}; }
  // The same oracle as paged_decode.cpu_reference: a decode-only batch is left to that one, so a
  // CPU run does not time the same computation twice.
  Support supports(const Batch& batch, const KernelConfig&, const Target& target) const override {
    if (target.backend != Backend::cpu) return Support::no("runs on the CPU backend only");
    if (batch.decode_only()) {
      return Support::no("decode-only batch: paged_decode.cpu_reference runs the same oracle");
    }
    return Support::yes();
  }
  std::unique_ptr<Launcher> prepare(Problem& problem, const KernelConfig&,
                                    ExecContext& context) const override {
    ATTN_ASSERT(problem.backend() == Backend::cpu, "cpu_reference needs a host problem");
    return std::make_unique<CpuReferenceLauncher>(problem, context.cpu_threads);
  }
  Work work(const Batch& batch) const override {
    return prefix_prefill_work(batch, batch.explicit_mask.has_value());
  }
};

}  // namespace

std::unique_ptr<Variant> make_prefix_prefill_cpu_reference() {
  return std::make_unique<CpuReferenceVariant>();
}

}  // namespace attn
