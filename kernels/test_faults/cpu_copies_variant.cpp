// test.cpu_reference_copies: prefix_prefill.cpu_reference under two config axes whose values
// change nothing (24 configs), so that a CPU sweep has a space to search. The crash-safety tests
// kill `attn-tune tune` over and over in the middle of such sweeps and resume them
// (tests/apps/crash_safety_test.cpp); the CPU reference variants alone have one config each.
// Registered only with ATTN_BENCH_TEST_VARIANTS=1.
#include <memory>

#include "base/errors.hpp"
#include "kernels/prefix_prefill/prefix_prefill_variants.hpp"
#include "kernels/registry.hpp"
#include "kernels/test_faults/fault_variants.hpp"

namespace attn {

namespace {

class CpuCopiesVariant : public Variant {
 public:
  static constexpr int kCopies = 6, kRepeats = 4;  // two axes, so that a report draws heatmaps

  CpuCopiesVariant() : own_(std::make_shared<Registry>()) {
    add_prefix_prefill_variants(*own_);
    reference_ = own_->find("prefix_prefill.cpu_reference");
    ATTN_ASSERT(reference_ != nullptr, "prefix_prefill.cpu_reference is registered");
  }
  std::string name() const override { return "test.cpu_reference_copies"; }
  Family family() const override { return Family::prefix_prefill; }
  Backend backend() const override { return Backend::cpu; }
  std::string summary() const override {
    return "TEST ONLY: prefix_prefill.cpu_reference with axes `copy` and `repeat` that change "
           "nothing";
  }
  FeatureSet features() const override { return reference_->features(); }
  std::vector<ConfigAxis> space(const Batch&, const Target&) const override {
    std::vector<int64_t> copies, repeats;
    for (int i = 0; i < kCopies; ++i) copies.push_back(i);
    for (int i = 0; i < kRepeats; ++i) repeats.push_back(i);
    return {{"copy", copies, "the same computation each time: a space for CPU sweep tests"},
            {"repeat", repeats, "the same computation each time"}};
  }
  KernelConfig default_config(const Batch&, const Target&) const override {
    return KernelConfig{{"copy", 0}, {"repeat", 0}};
  }
  Support supports(const Batch& batch, const KernelConfig& config,
                   const Target& target) const override {
    if (Support s = config_has_exactly(config, {"copy", "repeat"}, name()); !s) return s;
    const int64_t copy = config.get("copy"), repeat = config.get("repeat");
    if (copy < 0 || copy >= kCopies || repeat < 0 || repeat >= kRepeats) {
      return Support::no("copy must be in 0.." + std::to_string(kCopies - 1) +
                         " and repeat in 0.." + std::to_string(kRepeats - 1));
    }
    return reference_->check(batch, KernelConfig{}, target);
  }
  std::unique_ptr<Launcher> prepare(Problem& problem, const KernelConfig&,
                                    ExecContext& context) const override {
    return reference_->prepare(problem, KernelConfig{}, context);
  }
  Work work(const Batch& batch) const override { return reference_->work(batch); }

 private:
  std::shared_ptr<Registry> own_;  // owns reference_
  const Variant* reference_ = nullptr;
};

}  // namespace

void add_test_cpu_variants(Registry& registry) {
  registry.add(std::make_unique<CpuCopiesVariant>());
  registry.add(make_test_cpu_incorrect_variant());
  registry.add(make_test_delays_variant());
}

}  // namespace attn
