// flash_fwd.cpu_reference: the CPU oracle (kernels/reference) as a flash_fwd variant, with the
// log-sum-exp output, so that `attn-bench run` works end to end on a machine without a GPU.
#include <cstring>

#include "base/dtype.hpp"
#include "kernels/flash_fwd/flash_fwd_variants.hpp"
#include "kernels/reference/paged_attention_reference.hpp"

namespace attn {

namespace {

class CpuReferenceLauncher : public Launcher {
 public:
  CpuReferenceLauncher(Problem& problem, size_t threads, float* lse)
      : problem_(problem), threads_(threads), lse_(lse) {}
  void launch() override {
    std::vector<float> lse;
    std::vector<float> out =
        paged_attention_reference(problem_, threads_, lse_ != nullptr ? &lse : nullptr);
    const DType dtype = problem_.batch().spec.model.dtype;
    for (size_t i = 0; i < out.size(); ++i) store_from_float(problem_.out(), i, dtype, out[i]);
    if (lse_ != nullptr) std::memcpy(lse_, lse.data(), lse.size() * sizeof(float));
  }

 private:
  Problem& problem_;
  size_t threads_;
  float* lse_;  // [total_q, num_q_heads] host floats, or null
};

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
