// What evaluating one config in a sweep is estimated to cost, before the sweep runs: the weights
// `attn-tune plan` balances the shards of a job array by (tuner/sweep_plan.hpp). Only the ratios
// between configs matter there, so the model is rough, but it is the same on every machine:
//
//   seconds = compile share + verification + the strategy's expected sampling time
//
// - The launch time: a median a results database recorded for the same workload, variant and
//   config (any device, any policy: the latest; --history), else the variant's minimum work on a
//   roofline of the target: CUDA at 3 TB/s and 500 TFLOP/s for 132 SMs (an H100), scaled by the
//   target's SMs, plus 5 us; the CPU references at 1 GFLOP/s plus 20 us per launch.
// - Sampling under a policy: the warm-up (warmup_min launches, at most warmup_max_seconds), then
//   twice min_samples samples (the noise rule seldom stops at the minimum), at most max_samples and
//   max_seconds. A CUDA launch shorter than the policy's graph threshold is sampled as a graph of
//   graph_sample_us, as the graph timer does.
// - The strategy (planned_trials): exhaustive and random evaluate every config under `confirm`;
//   halving screens every config and confirms the share it promotes; model evaluates the share of
//   the space it plans to, under `confirm`.
// - Verification: two launches (the config's and, amortised over a worker's cases, the
//   reference's). Compiling: 2 s per JIT program, shared among the configs that use the same
//   program (most launch parameters are not compiled in).
#pragma once

#include <cstddef>
#include <string>

#include "kernels/target.hpp"
#include "kernels/variant.hpp"
#include "measure/timing_policy.hpp"
#include "tuner/strategy.hpp"

namespace attn {

// Seconds of NVRTC time per JIT program the model assumes.
inline constexpr double kModelledCompileSeconds = 2.0;

// The model's launch time (microseconds) of a variant whose minimum work is `work`, on `target`.
double modelled_launch_us(const Work& work, const Target& target);

// Seconds one evaluation under `policy` spends warming up and sampling launches of `launch_us`.
double sampling_seconds(const MeasurePolicy& policy, double launch_us, Backend backend);

// Seconds the sweep is expected to spend on one config of a space of `space_configs` configs
// searched by `strategy` under `budget`: its launches take `launch_us`, and its share of the
// compiles is `compile_seconds` (0 for the CPU).
double config_seconds(const std::string& strategy, size_t space_configs, const Budget& budget,
                      double launch_us, Backend backend, double compile_seconds);

}  // namespace attn
