// Stopping rules and the sampler on synthetic timers: no GPU involved.
#include "measure/stopping_rule.hpp"

#include <gtest/gtest.h>

#include <random>

#include "measure/sampler.hpp"
#include "measure/warmup.hpp"

namespace attn {
namespace {

// A timer that returns a scripted sequence (then its last value), or normal noise.
class ScriptedTimer : public SampleTimer {
 public:
  explicit ScriptedTimer(std::vector<double> values) : values_(std::move(values)) {}
  ScriptedTimer(double mean, double stddev, uint64_t seed) : normal_(mean, stddev), rng_(seed) {}
  double sample_us() override {
    ++calls;
    if (values_.empty()) return normal_(rng_);
    const double v = values_[std::min(next_, values_.size() - 1)];
    ++next_;
    return v;
  }
  std::string name() const override { return "scripted"; }
  size_t calls = 0;

 private:
  std::vector<double> values_;
  size_t next_ = 0;
  std::normal_distribution<double> normal_{0, 1};
  std::mt19937_64 rng_{0};
};

MeasurePolicy test_policy() {
  MeasurePolicy p = confirm_policy();
  p.min_samples = 10;
  p.max_samples = 500;
  p.max_seconds = 60;
  return p;
}

TEST(StoppingRule, NoiseRuleWaitsForMinSamplesThenStopsWhenQuiet) {
  auto rule = noise_rule(0.01, 10);
  std::vector<double> kept(9, 100.0);
  EXPECT_EQ(rule->check({kept, 9, 0}), StopReason::none);  // constant, but too few
  kept.push_back(100.0);
  EXPECT_EQ(rule->check({kept, 10, 0}), StopReason::noise);
  std::vector<double> noisy = {50, 150, 60, 140, 70, 130, 80, 120, 90, 110};
  EXPECT_EQ(noise_rule(0.01, 10)->check({noisy, 10, 0}), StopReason::none);
}

TEST(StoppingRule, CapsCountTakenSamplesAndTime) {
  std::vector<double> kept(3, 1.0);
  EXPECT_EQ(sample_cap_rule(5)->check({kept, 4, 0}), StopReason::none);
  EXPECT_EQ(sample_cap_rule(5)->check({kept, 5, 0}), StopReason::samples);  // discarded count too
  EXPECT_EQ(time_cap_rule(1)->check({kept, 3, 0.5}), StopReason::none);
  EXPECT_EQ(time_cap_rule(1)->check({kept, 3, 1.0}), StopReason::time);
  std::vector<double> none;
  EXPECT_EQ(time_cap_rule(1)->check({none, 3, 1.5}), StopReason::none);  // nothing kept yet
  EXPECT_EQ(time_cap_rule(1)->check({none, 3, 2.0}), StopReason::time);
}

TEST(StoppingRule, RulesReportTheFirstThatFires) {
  MeasurePolicy p = test_policy();
  p.max_samples = 10;
  StoppingRules rules = stopping_rules_for(p);
  std::vector<double> kept(10, 7.0);
  EXPECT_EQ(rules.check({kept, 10, 0}), StopReason::noise);  // noise is asked before the cap
  EXPECT_NE(rules.describe().find("noise"), std::string::npos);
}

TEST(Sampler, QuietKernelStopsOnNoiseNoisyOneAtTheCap) {
  MeasurePolicy p = test_policy();
  p.noise = 0.005;
  ScriptedTimer quiet(100, 0.5, 1);
  const SamplingResult a = sample(quiet, p, {}, 0);
  EXPECT_EQ(a.stop_reason, StopReason::noise);
  EXPECT_LE(a.noise, 0.005);
  EXPECT_GE(a.kept.size(), 10u);
  EXPECT_LT(a.kept.size(), 100u);

  ScriptedTimer noisy(100, 40, 2);
  const SamplingResult b = sample(noisy, p, {}, 0);
  EXPECT_EQ(b.stop_reason, StopReason::samples);
  EXPECT_EQ(b.samples_us.size(), 500u);
  EXPECT_GT(b.noise, 0.005);
}

TEST(Sampler, SamplesBelowTheExpectedClockAreDiscardedAndKeptRaw) {
  MeasurePolicy p = test_policy();
  p.min_samples = p.max_samples = 40;  // never 40 kept: runs to the cap
  p.clock_threshold = 0.9;
  // Every fifth sample runs at a throttled clock and is slow.
  int i = 0;
  std::vector<double> times;
  for (int k = 0; k < 40; ++k) times.push_back(k % 5 == 4 ? 150.0 : 100.0);
  ScriptedTimer timer(times);
  const SamplingResult r = sample(
      timer, p, [&] { return (i++ % 5 == 4) ? 1200.0 : 1980.0; }, 0);
  EXPECT_EQ(r.samples_us.size(), 40u);
  EXPECT_EQ(r.discarded_count, 8u);
  EXPECT_EQ(r.kept.size(), 32u);
  EXPECT_DOUBLE_EQ(r.expected_clock_mhz, 1980.0);
  for (double k : r.kept) EXPECT_EQ(k, 100.0);
  EXPECT_TRUE(r.discarded[4]);
  EXPECT_FALSE(r.discarded[3]);
}

TEST(Warmup, EndsWhenTwoWindowsAgree) {
  MeasurePolicy p = test_policy();
  p.warmup_min = 1;
  p.warmup_window = 3;
  p.warmup_tolerance = 0.02;
  p.warmup_max_seconds = 60;
  // A cold start: slow launches settling to 100.
  ScriptedTimer timer({500, 300, 200, 150, 120, 101, 100, 100, 100, 100, 100, 100, 100});
  const WarmupResult w = warm_up(timer, p);
  EXPECT_TRUE(w.settled);
  EXPECT_LE(w.samples_us.size(), 12u);
  EXPECT_GE(w.samples_us.size(), 9u);
  EXPECT_NEAR(w.median_us(), 100, 1);
}

TEST(Warmup, StopsAtItsTimeCapWhenItNeverSettles) {
  MeasurePolicy p = test_policy();
  p.warmup_min = 4;
  p.warmup_max_seconds = 0;  // the cap is already reached after warmup_min launches
  ScriptedTimer timer({1, 1000, 1, 1000, 1, 1000});
  const WarmupResult w = warm_up(timer, p);
  EXPECT_FALSE(w.settled);
  EXPECT_EQ(w.samples_us.size(), 4u);
}

}  // namespace
}  // namespace attn
