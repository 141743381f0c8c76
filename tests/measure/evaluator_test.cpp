#include "measure/evaluator.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "kernels/registry.hpp"
#include "measure/phase_seconds.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

TEST(Evaluator, CpuReferenceVariantPassesAndIsTimed) {
  testing::SpecShape shape;
  const Batch batch = generate_batch(testing::make_decode_spec(shape, {0, 5, 40, 129}));
  Evaluator::Options options;
  options.policy = screen_policy();
  options.policy.min_samples = options.policy.max_samples = 3;
  options.policy.warmup_min = 1;
  options.policy.noise = 1e-12;  // unreachable: sampling stops at max_samples, flagged unstable
  auto evaluator = Evaluator::on_cpu(batch, options);
  const Registry registry = make_registry();
  const Variant& variant = *registry.find("paged_decode.cpu_reference");
  const Measurement m =
      evaluator->evaluate(variant, variant.default_config(batch, evaluator->target()));
  EXPECT_EQ(m.disposition, Disposition::passed) << m.reason;
  EXPECT_EQ(m.samples_us.size(), 3u);
  EXPECT_GT(m.stats.median, 0);
  EXPECT_TRUE(m.verification.checked);
  EXPECT_EQ(m.verification.reference, "naive_dense");
  EXPECT_GT(m.bytes, 0);
  EXPECT_GT(m.flops, 0);
  EXPECT_EQ(m.policy, "screen");
  EXPECT_EQ(m.timing.timer, "cpu");
  EXPECT_EQ(m.timing.stop_reason, "max_samples");
  EXPECT_TRUE(m.unstable);
  EXPECT_NE(m.unstable_reason.find("max_samples"), std::string::npos) << m.unstable_reason;
  EXPECT_GE(m.timing.warmup_samples, 1);
}

// The phases are reported in order, once each, so that a PhaseClock fed by them (what the
// in-process sweep and a worker do) gives each phase its own time; an unsupported case reports
// none.
TEST(Evaluator, ReportsTheStartOfEachPhaseForItsClock) {
  testing::SpecShape shape;
  const Batch batch = generate_batch(testing::make_decode_spec(shape, {5, 40, 129}));
  auto evaluator = Evaluator::on_cpu(batch, {});
  const Registry registry = make_registry();
  const Variant& variant = *registry.find("paged_decode.cpu_reference");
  std::vector<EvalPhase> phases;
  PhaseClock clock;
  const auto start = PhaseClock::Clock::now();
  const Measurement m =
      evaluator->evaluate(variant, variant.default_config(batch, evaluator->target()),
                          screen_policy(), [&](EvalPhase phase) {
                            phases.push_back(phase);
                            clock.start(phase);
                          });
  const PhaseSeconds seconds = clock.stop();
  const double wall = std::chrono::duration<double>(PhaseClock::Clock::now() - start).count();
  EXPECT_EQ(m.disposition, Disposition::passed) << m.reason;
  EXPECT_EQ(phases,
            (std::vector<EvalPhase>{EvalPhase::compile, EvalPhase::verify, EvalPhase::measure}));
  EXPECT_GT(seconds.verify, 0);
  EXPECT_GT(seconds.measure, 0);
  EXPECT_LE(seconds.total(), wall);

  phases.clear();
  const Variant& sm80_simt = *registry.find("paged_decode.sm80_simt");
  evaluator->evaluate(sm80_simt, sm80_simt.default_config(batch, evaluator->target()),
                      screen_policy(), [&](EvalPhase phase) { phases.push_back(phase); });
  EXPECT_TRUE(phases.empty()) << "an unsupported case has no phase";
}

TEST(Evaluator, GpuVariantOnCpuIsUnsupportedWithAReason) {
  testing::SpecShape shape;
  const Batch batch = generate_batch(testing::make_decode_spec(shape, {7}));
  auto evaluator = Evaluator::on_cpu(batch, {});
  const Registry registry = make_registry();
  const Variant& sm80_simt = *registry.find("paged_decode.sm80_simt");
  const Measurement m =
      evaluator->evaluate(sm80_simt, sm80_simt.default_config(batch, evaluator->target()));
  EXPECT_EQ(m.disposition, Disposition::unsupported);
  EXPECT_FALSE(m.reason.empty());
  EXPECT_TRUE(m.samples_us.empty());
}

TEST(Evaluator, PrefillBatchIsUnsupportedByDecodeVariants) {
  testing::SpecShape shape;
  const Batch batch = generate_batch(testing::make_spec(shape, {{4, 3}}));
  auto evaluator = Evaluator::on_cpu(batch, {});
  const Registry registry = make_registry();
  const Variant& reference = *registry.find("paged_decode.cpu_reference");
  const Measurement m = evaluator->evaluate(reference, {});
  EXPECT_EQ(m.disposition, Disposition::unsupported);
  EXPECT_NE(m.reason.find("one query token"), std::string::npos);
}

}  // namespace
}  // namespace attn
