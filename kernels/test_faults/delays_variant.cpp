// test.delays: prefix_prefill.cpu_reference followed by a sleep of `delay_ms` milliseconds, one
// axis of 24 values (10 to 33), so that a CPU sweep has a landscape whose order is known: every
// config is about 1 ms slower than the one before, and the fastest wins by some 10%, far outside
// the noise of a sleep. Sweeps of it must agree on the winner however they are split, which is what
// the cluster-sweep test checks (tests/apps/slurm_sweep_test.py); each config takes some 0.5 s to
// evaluate, long enough to stop a shard in the middle. Its name holds no "cpu", so that the CLI
// tests' `--variant '*cpu*'` runs do not take it. Registered only with ATTN_BENCH_TEST_VARIANTS=1.
#include <chrono>
#include <memory>
#include <thread>

#include "base/errors.hpp"
#include "kernels/prefix_prefill/prefix_prefill_variants.hpp"
#include "kernels/registry.hpp"
#include "kernels/test_faults/fault_variants.hpp"

namespace attn {

namespace {

class DelayedLauncher : public Launcher {
 public:
  DelayedLauncher(std::unique_ptr<Launcher> reference, std::chrono::milliseconds delay)
      : reference_(std::move(reference)), delay_(delay) {}
  void launch() override {
    reference_->launch();
    std::this_thread::sleep_for(delay_);
  }

 private:
  std::unique_ptr<Launcher> reference_;
  std::chrono::milliseconds delay_;
};

class DelaysVariant : public Variant {
 public:
  static constexpr int64_t kFirstDelayMs = 10, kDelays = 24;

  DelaysVariant() : own_(std::make_shared<Registry>()) {
    add_prefix_prefill_variants(*own_);
    reference_ = own_->find("prefix_prefill.cpu_reference");
    ATTN_ASSERT(reference_ != nullptr, "prefix_prefill.cpu_reference is registered");
  }
  std::string name() const override { return "test.delays"; }
  Family family() const override { return Family::prefix_prefill; }
  Backend backend() const override { return Backend::cpu; }
  std::string summary() const override {
    return "TEST ONLY: prefix_prefill.cpu_reference, then a sleep of `delay_ms` (a known order)";
  }
  FeatureSet features() const override { return reference_->features(); }
  std::vector<ConfigAxis> space(const Batch&, const Target&) const override {
    std::vector<int64_t> delays;
    for (int64_t i = 0; i < kDelays; ++i) delays.push_back(kFirstDelayMs + i);
    return {{"delay_ms", delays, "milliseconds slept after each launch: a known landscape"}};
  }
  KernelConfig default_config(const Batch&, const Target&) const override {
    return KernelConfig{{"delay_ms", kFirstDelayMs}};
  }
  Support supports(const Batch& batch, const KernelConfig& config,
                   const Target& target) const override {
    if (Support s = config_has_exactly(config, {"delay_ms"}, name()); !s) return s;
    const int64_t delay = config.get("delay_ms");
    if (delay < kFirstDelayMs || delay >= kFirstDelayMs + kDelays) {
      return Support::no("delay_ms must be in " + std::to_string(kFirstDelayMs) + ".." +
                         std::to_string(kFirstDelayMs + kDelays - 1));
    }
    return reference_->check(batch, KernelConfig{}, target);
  }
  std::unique_ptr<Launcher> prepare(Problem& problem, const KernelConfig& config,
                                    ExecContext& context) const override {
    return std::make_unique<DelayedLauncher>(reference_->prepare(problem, KernelConfig{}, context),
                                             std::chrono::milliseconds(config.get("delay_ms")));
  }
  Work work(const Batch& batch) const override { return reference_->work(batch); }

 private:
  std::shared_ptr<Registry> own_;  // owns reference_
  const Variant* reference_ = nullptr;
};

}  // namespace

std::unique_ptr<Variant> make_test_delays_variant() {
  return std::make_unique<DelaysVariant>();
}

}  // namespace attn
