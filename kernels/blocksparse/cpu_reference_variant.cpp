// blocksparse.cpu_reference: the CPU oracle (kernels/reference, which applies key_visible and so
// the batch's block-sparse layout) as a blocksparse variant, so that `attn-bench run` works end to
// end on a machine without a GPU.
#include "base/dtype.hpp"
#include "kernels/blocksparse/blocksparse_variants.hpp"
#include "kernels/reference/paged_attention_reference.hpp"

namespace attn {

namespace {

class CpuReferenceLauncher : public Launcher {
 public:
  CpuReferenceLauncher(Problem& problem, size_t threads) : problem_(problem), threads_(threads) {}
  void launch() override {
    const std::vector<float> out = paged_attention_reference(problem_, threads_);
    const DType dtype = problem_.batch().spec.model.dtype;
    for (size_t i = 0; i < out.size(); ++i) store_from_float(problem_.out(), i, dtype, out[i]);
  }

 private:
  Problem& problem_;
  size_t threads_;
};

class CpuReferenceVariant : public Variant {
 public:
  std::string name() const override { return "blocksparse.cpu_reference"; }
  Family family() const override { return Family::blocksparse; }
  Backend backend() const override { return Backend::cpu; }
  std::string summary() const override {
    return "CPU oracle: block-sparse attention through key_visible, double accumulation";
  }
  std::vector<ConfigAxis> space(const Batch&, const Target&) const override { return {}; }
  KernelConfig default_config(const Batch&, const Target&) const override { return {}; }
  Support supports(const Batch& batch, const KernelConfig&, const Target& target) const override {
    if (target.backend != Backend::cpu) return Support::no("runs on the CPU backend only");
    return blocksparse_supports_batch(batch);
  }
  std::unique_ptr<Launcher> prepare(Problem& problem, const KernelConfig&,
                                    ExecContext& context) const override {
    ATTN_ASSERT(problem.backend() == Backend::cpu, "cpu_reference needs a host problem");
    return std::make_unique<CpuReferenceLauncher>(problem, context.cpu_threads);
  }
  Work work(const Batch& batch) const override { return blocksparse_work(batch); }
};

}  // namespace

std::unique_ptr<Variant> make_blocksparse_cpu_reference() {
  return std::make_unique<CpuReferenceVariant>();
}

}  // namespace attn
