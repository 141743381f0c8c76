// test.cpu_incorrect: paged_decode.cpu_reference whose output is then overwritten with zeros, so
// that verification fails (disposition `incorrect`) on a machine without a GPU. The CLI tests use
// it to run a batch that mixes passed, declined and failed cases on the CPU
// (tests/apps/gbench_cli_test.cpp). Registered only with ATTN_BENCH_TEST_VARIANTS=1.
#include <cstring>
#include <memory>

#include "base/errors.hpp"
#include "kernels/paged_decode/paged_decode_variants.hpp"
#include "kernels/registry.hpp"
#include "kernels/test_faults/fault_variants.hpp"

namespace attn {

namespace {

// Runs the reference, then zeroes the output: every element is written (nothing is left
// poisoned), and every one is wrong wherever the reference is not zero.
class ZeroedOutputLauncher : public Launcher {
 public:
  ZeroedOutputLauncher(std::unique_ptr<Launcher> reference, Problem& problem)
      : reference_(std::move(reference)), problem_(problem) {}
  void launch() override {
    reference_->launch();
    std::memset(problem_.out(), 0, problem_.out_bytes());
  }

 private:
  std::unique_ptr<Launcher> reference_;
  Problem& problem_;
};

class CpuIncorrectVariant : public Variant {
 public:
  CpuIncorrectVariant() : own_(std::make_shared<Registry>()) {
    add_paged_decode_variants(*own_);
    reference_ = own_->find("paged_decode.cpu_reference");
    ATTN_ASSERT(reference_ != nullptr, "paged_decode.cpu_reference is registered");
  }
  std::string name() const override { return "test.cpu_incorrect"; }
  Family family() const override { return Family::paged_decode; }
  Backend backend() const override { return Backend::cpu; }
  std::string summary() const override {
    return "TEST ONLY: paged_decode.cpu_reference with its output zeroed (incorrect)";
  }
  FeatureSet features() const override { return reference_->features(); }
  std::vector<ConfigAxis> space(const Batch&, const Target&) const override { return {}; }
  KernelConfig default_config(const Batch&, const Target&) const override { return {}; }
  Support supports(const Batch& batch, const KernelConfig& config,
                   const Target& target) const override {
    return reference_->check(batch, config, target);
  }
  std::unique_ptr<Launcher> prepare(Problem& problem, const KernelConfig& config,
                                    ExecContext& context) const override {
    ATTN_ASSERT(problem.backend() == Backend::cpu, "test.cpu_incorrect needs a host problem");
    return std::make_unique<ZeroedOutputLauncher>(reference_->prepare(problem, config, context),
                                                  problem);
  }
  Work work(const Batch& batch) const override { return reference_->work(batch); }

 private:
  std::shared_ptr<Registry> own_;  // owns reference_
  const Variant* reference_ = nullptr;
};

}  // namespace

std::unique_ptr<Variant> make_test_cpu_incorrect_variant() {
  return std::make_unique<CpuIncorrectVariant>();
}

}  // namespace attn
