#include "measure/timing_policy.hpp"

#include <gtest/gtest.h>

#include "base/errors.hpp"
#include "measure/cuda_graph_timer.hpp"

namespace attn {
namespace {

TEST(TimingPolicy, NamedPoliciesAndTheirTargets) {
  EXPECT_EQ(confirm_policy().name, "confirm");
  EXPECT_DOUBLE_EQ(confirm_policy().noise, 0.005);
  EXPECT_EQ(screen_policy().name, "screen");
  EXPECT_LT(screen_policy().max_samples, confirm_policy().max_samples);
  EXPECT_TRUE(named_policy("screen").has_value());
  EXPECT_FALSE(named_policy("basic").has_value());
}

TEST(TimingPolicy, OverridesApplyAndAreWrittenIntoTheName) {
  PolicyOverrides o;
  o.noise = 0.01;
  o.max_samples = 300;
  o.timer = TimerMode::graph;
  const MeasurePolicy p = apply_overrides(confirm_policy(), o);
  EXPECT_EQ(p.name, "confirm(max_samples=300,noise=0.01,timer=graph)");
  EXPECT_DOUBLE_EQ(p.noise, 0.01);
  EXPECT_EQ(p.timer, TimerMode::graph);
  EXPECT_EQ(apply_overrides(confirm_policy(), {}).name, "confirm");
}

TEST(TimingPolicy, InconsistentOverridesAreUsageErrors) {
  PolicyOverrides o;
  o.min_samples = 50;
  o.max_samples = 10;
  EXPECT_THROW(apply_overrides(confirm_policy(), o), UsageError);
  PolicyOverrides n;
  n.noise = 0;
  EXPECT_THROW(apply_overrides(confirm_policy(), n), UsageError);
}

TEST(TimingPolicy, TimerModesRoundTrip) {
  for (TimerMode m : {TimerMode::events, TimerMode::graph, TimerMode::automatic}) {
    EXPECT_EQ(timer_mode_from_string(to_string(m)), m);
  }
  EXPECT_FALSE(timer_mode_from_string("cupti").has_value());
}

TEST(GraphTimer, LaunchesPerGraphFillTheSampleTime) {
  EXPECT_EQ(GraphTimer::launches_for(20, 2000), 100);
  EXPECT_EQ(GraphTimer::launches_for(5000, 2000), 2);      // at least two
  EXPECT_EQ(GraphTimer::launches_for(0.001, 2000), 1000);  // capped
}

}  // namespace
}  // namespace attn
