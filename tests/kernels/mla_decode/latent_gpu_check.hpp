// The mla_decode GPU tests' common steps: one evaluation of a variant, verified against the CPU
// reference (double accumulation) on a NaN-poisoned output before anything is timed, and the loop
// of random batches with random accepted configs.
#pragma once

#include <gtest/gtest.h>

#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "kernels/variant.hpp"
#include "measure/evaluator.hpp"
#include "tests/gpu_case_budget.hpp"
#include "tests/gpu_test_support.hpp"
#include "tests/kernels/random_draws.hpp"
#include "workloads/workload_spec.hpp"

namespace attn::testing {

inline Measurement evaluate_latent_once(const Batch& batch, const Variant& variant,
                                        const KernelConfig& config) {
  auto& env = gpu();
  auto options = test_evaluator_options();
  options.reference = ReferenceOracle::cpu;
  auto evaluator = Evaluator::on_cuda(batch, env.discovery.api, env.device(), *env.jit, options);
  return evaluator->evaluate(variant, config);
}

// Random latent workloads drawn by draw_spec(rng) (workload JSON), each with a random config the
// variant accepts on `target`, each evaluated once and expected to pass; at least 12 cases (more
// within the case budget of the environment). The seed is printed and ATTN_TEST_SEED replays it.
template <class DrawSpec>
void expect_random_latent_batches_match(const Variant& variant, const Target& target,
                                        DrawSpec draw_spec) {
  const uint64_t seed = test_seed_or_clock();
  std::mt19937_64 rng(seed);
  SCOPED_TRACE("ATTN_TEST_SEED=" + std::to_string(seed));
  CaseBudget budget = CaseBudget::from_environment(12);
  while (budget.another()) {
    SCOPED_TRACE("case " + std::to_string(budget.draws()));
    const nlohmann::json spec = draw_spec(rng);
    const Batch batch = generate_batch(parse_workload(spec.dump(), "latent"));
    const KernelConfig config = random_accepted_config(variant, batch, target, rng);
    const std::string what = spec.dump() + " config " + config.key();
    ASSERT_TRUE(variant.check(batch, config, target)) << what;
    const Measurement m = evaluate_latent_once(batch, variant, config);
    EXPECT_EQ(m.disposition, Disposition::passed) << what << ": " << m.reason;
  }
  EXPECT_GE(budget.checked(), 12);
  print_case_summary(budget, seed);
}

}  // namespace attn::testing
