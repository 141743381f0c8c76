// The cost model a planned sweep balances its shards by: launch times on the model's roofline,
// sampling under each policy (graphs for short CUDA launches, the policy's time cap), and what each
// strategy spends per config.
#include <gtest/gtest.h>

#include "tuner/sweep_cost.hpp"

namespace attn {
namespace {

Target cuda_target_of_sms(int sms) {
  Target t;
  t.backend = Backend::cuda;
  t.arch = "sm_90a";
  t.sm_count = sms;
  return t;
}

TEST(SweepCost, LaunchTimesFollowTheRooflineOfTheTarget) {
  // CPU: 20 us of overhead plus the FLOPs at 1 GFLOP/s.
  EXPECT_NEAR(modelled_launch_us({0, 0, 1e6}, Target::cpu()), 20 + 1000, 1e-6);
  // CUDA, bound by bytes (3 TB/s on 132 SMs), then by FLOPs (500 TFLOP/s).
  EXPECT_NEAR(modelled_launch_us({3e9, 3e9, 1e9}, cuda_target_of_sms(132)), 5 + 1000, 1e-6);
  EXPECT_NEAR(modelled_launch_us({3e3, 3e3, 5e11}, cuda_target_of_sms(132)), 5 + 1000, 1e-6);
  // Half the SMs: twice the time.
  EXPECT_NEAR(modelled_launch_us({3e9, 3e9, 0}, cuda_target_of_sms(66)), 5 + 2000, 1e-6);
  // A target without an SM count is taken as the reference GPU.
  EXPECT_NEAR(modelled_launch_us({3e9, 3e9, 0}, cuda_target_of_sms(0)), 5 + 1000, 1e-6);
}

TEST(SweepCost, SamplingTakesTwiceTheMinimumSamplesUnderTheTimeCap) {
  const MeasurePolicy confirm = confirm_policy();
  // A 1 ms CPU launch: warm-up of warmup_min launches, then 2 x min_samples.
  EXPECT_NEAR(sampling_seconds(confirm, 1000, Backend::cpu),
              confirm.warmup_min * 1e-3 + 2 * confirm.min_samples * 1e-3, 1e-9);
  // A short CUDA launch is sampled as graphs lasting graph_sample_us each; on the CPU it is not.
  const double short_us = confirm.graph_below_us / 2;
  EXPECT_NEAR(sampling_seconds(confirm, short_us, Backend::cuda),
              confirm.warmup_min * short_us * 1e-6 +
                  2 * confirm.min_samples * confirm.graph_sample_us * 1e-6,
              1e-9);
  EXPECT_LT(sampling_seconds(confirm, short_us, Backend::cpu),
            sampling_seconds(confirm, short_us, Backend::cuda));
  // A very long launch: the warm-up and the sampling each stop at their cap.
  EXPECT_NEAR(sampling_seconds(confirm, 1e8, Backend::cpu),
              confirm.warmup_max_seconds + confirm.max_seconds, 1e-9);
  // The screen policy is cheaper than confirm for the same launch.
  EXPECT_LT(sampling_seconds(screen_policy(), 1000, Backend::cuda),
            sampling_seconds(confirm, 1000, Backend::cuda));
}

TEST(SweepCost, EachStrategySpendsWhatItPlans) {
  const Budget none;
  const double confirm = sampling_seconds(confirm_policy(), 500, Backend::cuda);
  const double screen = sampling_seconds(screen_policy(), 500, Backend::cuda);
  const double verify = 2 * 500e-6;
  // Exhaustive and random: one confirm per config, plus the compile share and a verification.
  EXPECT_NEAR(config_seconds("exhaustive", 100, none, 500, Backend::cuda, 0.5),
              0.5 + verify + confirm, 1e-9);
  EXPECT_NEAR(config_seconds("random", 100, none, 500, Backend::cuda, 0),
              config_seconds("exhaustive", 100, none, 500, Backend::cuda, 0), 1e-12);
  // Halving over 800 configs: a screen each, then 2 x 100 confirms shared among the 800.
  EXPECT_NEAR(config_seconds("halving", 800, none, 500, Backend::cuda, 0),
              screen + 200.0 / 800 * confirm + 1000.0 / 800 * verify, 1e-9);
  EXPECT_LT(config_seconds("halving", 800, none, 500, Backend::cuda, 0),
            config_seconds("exhaustive", 800, none, 500, Backend::cuda, 0));
  // Model over 1000 configs plans 70 evaluations: 7% of a confirm per config.
  EXPECT_NEAR(config_seconds("model", 1000, none, 500, Backend::cuda, 0),
              70.0 / 1000 * (confirm + verify), 1e-9);
  // A trial budget caps the share: 10 of 100 configs.
  Budget ten;
  ten.trials = 10;
  EXPECT_NEAR(config_seconds("exhaustive", 100, ten, 500, Backend::cuda, 0),
              0.1 * (confirm + verify), 1e-9);
  // A slower launch costs more.
  EXPECT_LT(config_seconds("exhaustive", 10, none, 100, Backend::cpu, 0),
            config_seconds("exhaustive", 10, none, 10000, Backend::cpu, 0));
}

}  // namespace
}  // namespace attn
