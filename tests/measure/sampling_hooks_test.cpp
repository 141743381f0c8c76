// What a caller hears of a sampling loop and how it stops one: every sample is reported (the
// progress within a long case), and a stop request ends warm-up or sampling after the sample in
// hand (Ctrl-C within one sample, not after the case), with the samples taken so far kept.
#include <gtest/gtest.h>

#include <vector>

#include "measure/sampler.hpp"

namespace attn {
namespace {

// A timer whose samples are 10, 10.1, 9.9, ... microseconds: noisy enough that the 0.5% noise
// rule of `confirm` does not stop it early.
class SawtoothTimer : public SampleTimer {
 public:
  double sample_us() override {
    ++calls;
    return 10.0 + 0.5 * double(calls % 5) - 1.0;
  }
  std::string name() const override { return "sawtooth"; }
  size_t calls = 0;
};

MeasurePolicy long_policy() {
  MeasurePolicy p = confirm_policy();
  p.min_samples = 1000;
  p.max_samples = 100000;
  p.max_seconds = 60;
  p.noise = 1e-9;
  return p;
}

TEST(SamplingHooks, EverySampleIsHeardWithItsCountAndThePolicy) {
  SawtoothTimer timer;
  MeasurePolicy policy = screen_policy();
  policy.min_samples = 5;
  policy.max_samples = 12;
  policy.noise = 1e-9;
  std::vector<size_t> heard;
  SamplingHooks hooks;
  hooks.on_sample = [&](const SamplingProgress& p) {
    EXPECT_FALSE(p.warming_up);
    EXPECT_EQ(p.policy->max_samples, 12u);
    EXPECT_EQ(p.kept->size(), p.taken);
    heard.push_back(p.taken);
  };
  const SamplingResult r = sample(timer, policy, {}, 0, hooks);
  EXPECT_EQ(r.stop_reason, StopReason::samples);
  ASSERT_EQ(heard.size(), 12u);
  for (size_t i = 0; i < heard.size(); ++i) EXPECT_EQ(heard[i], i + 1);
}

TEST(SamplingHooks, AStopRequestEndsSamplingAfterTheSampleInHand) {
  SawtoothTimer timer;
  SamplingHooks hooks;
  size_t asked = 0;
  hooks.stop_requested = [&] { return ++asked >= 7; };
  const SamplingResult r = sample(timer, long_policy(), {}, 0, hooks);
  EXPECT_EQ(r.stop_reason, StopReason::interrupted);
  EXPECT_EQ(to_string(r.stop_reason), "interrupted");
  EXPECT_EQ(r.samples_us.size(), 7u);  // not the 1000 the policy asks for at least
  EXPECT_EQ(r.kept.size(), 7u);
  EXPECT_EQ(timer.calls, 7u);
}

TEST(SamplingHooks, AStopRequestEndsWarmUpUnsettled) {
  SawtoothTimer timer;
  MeasurePolicy policy = long_policy();
  policy.warmup_min = 1000;
  policy.warmup_max_seconds = 60;
  SamplingHooks hooks;
  bool warming_heard = false;
  hooks.on_sample = [&](const SamplingProgress& p) {
    warming_heard = warming_heard || p.warming_up;
  };
  hooks.stop_requested = [&] { return timer.calls >= 3; };
  const WarmupResult w = warm_up(timer, policy, hooks);
  EXPECT_FALSE(w.settled);
  EXPECT_LE(timer.calls, 4u);
  EXPECT_TRUE(warming_heard);
}

TEST(SamplingHooks, WithoutHooksNothingChanges) {
  SawtoothTimer a, b;
  MeasurePolicy policy = screen_policy();
  policy.max_samples = 20;
  policy.noise = 1e-9;
  const SamplingResult plain = sample(a, policy, {}, 0);
  SamplingHooks listening;
  listening.on_sample = [](const SamplingProgress&) {};
  listening.stop_requested = [] { return false; };
  const SamplingResult heard = sample(b, policy, {}, 0, listening);
  EXPECT_EQ(plain.samples_us, heard.samples_us);
  EXPECT_EQ(plain.stop_reason, heard.stop_reason);
}

}  // namespace
}  // namespace attn
