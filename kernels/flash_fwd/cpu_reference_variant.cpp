// flash_fwd.cpu_reference: the CPU oracle (kernels/reference) as a flash_fwd variant, with the
// log-sum-exp output, so that `attn-bench run` works end to end on a machine without a GPU.
#include "base/dtype.hpp"
#include "kernels/flash_fwd/flash_fwd_variants.hpp"
#include "kernels/reference/cpu_reference_variant.hpp"

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
  std::vector<ConfigAxis> space(const Batch&, const Target&) const override { return {}; }
  KernelConfig default_config(const Batch&, const Target&) const override { return {}; }
  Support supports(const Batch& batch, const KernelConfig&, const Target& target) const override {
    if (target.backend != Backend::cpu) return Support::no("runs on the CPU backend only");
    return flash_fwd_supports_batch(batch);
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
