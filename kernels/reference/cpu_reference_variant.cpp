#include "kernels/reference/cpu_reference_variant.hpp"

#include <cstring>

#include "base/dtype.hpp"
#include "base/errors.hpp"
#include "kernels/reference/paged_attention_reference.hpp"
#include "workloads/workload_validation.hpp"

namespace attn {

void CpuReferenceLauncher::launch() {
  std::vector<float> lse;
  const std::vector<float> out =
      paged_attention_reference(problem_, threads_, lse_ != nullptr ? &lse : nullptr);
  const DType dtype = problem_.batch().spec.model.dtype;
  for (size_t i = 0; i < out.size(); ++i) store_from_float(problem_.out(), i, dtype, out[i]);
  if (lse_ != nullptr) std::memcpy(lse_, lse.data(), lse.size() * sizeof(float));
}

FeatureSet reference_features() {
  return FeatureSet()
      .with(feature::kQueries, {"decode", "prefill", "mixed"})
      .with(feature::kMask,
            {"causal", "non_causal", "block_sparse", "block_sparse_non_causal", "explicit"})
      .with(feature::kSlidingWindow)
      .with(feature::kLogitsSoftCap)
      .with(feature::kAttentionSinks)
      .with(feature::kSharedPrefix)
      .with(feature::kKvLayout, {"nhd", "hnd", "vllm"})
      .with(feature::kDtype, {"bf16", "fp16"})
      .with(feature::kKvDtype, {"fp8_e4m3.per_tensor", "fp8_e4m3.per_head", "bf16", "fp16"})
      .with(feature::kHeadDim, {64, 80, 96, 128, 192, 256})
      .with(feature::kVHeadDim, {64, 80, 96, 128, 192})
      .with_range(feature::kPageSize, 1, 256)
      .with(feature::kLatentAttention)
      .with_range(feature::kKvLoraRank, kMinKvLoraRank, kMaxKvLoraRank)
      .with_range(feature::kQkRopeHeadDim, kMinQkRopeHeadDim, kMaxQkRopeHeadDim);
}

FeatureSet standard_attention_reference_features() {
  return reference_features()
      .without(feature::kLatentAttention)
      .without(feature::kKvLoraRank)
      .without(feature::kQkRopeHeadDim)
      .note(feature::kLatentAttention, "mla_decode runs multi-head latent attention");
}

namespace {

class CpuReferenceVariant : public Variant {
 public:
  explicit CpuReferenceVariant(CpuReferenceTraits traits) : traits_(std::move(traits)) {}
  std::string name() const override { return to_string(traits_.family) + ".cpu_reference"; }
  Family family() const override { return traits_.family; }
  Backend backend() const override { return Backend::cpu; }
  std::string summary() const override { return traits_.summary; }
  FeatureSet features() const override { return traits_.features; }
  std::vector<ConfigAxis> space(const Batch&, const Target&) const override { return {}; }
  KernelConfig default_config(const Batch&, const Target&) const override { return {}; }
  Support supports(const Batch& batch, const KernelConfig&, const Target& target) const override {
    if (target.backend != Backend::cpu) return Support::no("runs on the CPU backend only");
    return traits_.supports_batch ? traits_.supports_batch(batch) : Support::yes();
  }
  std::unique_ptr<Launcher> prepare(Problem& problem, const KernelConfig&,
                                    ExecContext& context) const override {
    ATTN_ASSERT(problem.backend() == Backend::cpu, "cpu_reference needs a host problem");
    return std::make_unique<CpuReferenceLauncher>(problem, context.cpu_threads);
  }
  Work work(const Batch& batch) const override { return traits_.work(batch); }

 private:
  CpuReferenceTraits traits_;
};

}  // namespace

std::unique_ptr<Variant> make_cpu_reference_variant(CpuReferenceTraits traits) {
  return std::make_unique<CpuReferenceVariant>(std::move(traits));
}

}  // namespace attn
