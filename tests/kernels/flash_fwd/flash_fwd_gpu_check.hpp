// Checks the flash_fwd GPU tests share (sm80_mma_gpu_test.cpp, sm90_wgmma_gpu_test.cpp): a
// variant prepared on a device copy of a batch, run once into a poisoned output (0xFF: NaN in
// bf16 and fp16) and a NaN-filled LSE buffer, and compared with the oracle (the CPU reference, or
// the tiled GPU reference for a large batch: testing::oracle_output): no NaN anywhere, every
// output row within the dtype's tolerance, every LSE within kLseTolerance of the oracle's. Plus
// the random batch and config draws both tests use.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <sstream>

#include "kernels/flash_fwd/flash_fwd_variants.hpp"
#include "kernels/registry.hpp"
#include "measure/evaluator.hpp"
#include "measure/verify.hpp"
#include "tests/gpu_case_budget.hpp"
#include "tests/gpu_test_support.hpp"
#include "tests/kernels/every_config_cases.hpp"
#include "tests/kernels/random_draws.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace flash_fwd_testing {

// The kernel's LSE is a float sum of exp2 terms over fp32 scores of the same 16-bit inputs the
// reference reads in double: its error is ~1e-5; a missed or doubled key of weight p moves it by
// log(1 +- p).
inline constexpr double kLseTolerance = 2e-3;

using testing::pick;

inline std::string describe(const Batch& batch, const KernelConfig& config) {
  const WorkloadSpec& spec = batch.spec;
  std::ostringstream out;
  out << "q" << spec.model.num_q_heads << "/kv" << spec.model.num_kv_heads << " d"
      << spec.model.head_dim;
  if (spec.model.effective_v_head_dim() != spec.model.head_dim)
    out << " dv" << spec.model.effective_v_head_dim();
  out << " " << to_string(spec.model.dtype);
  if (spec.model.kv_dtype == DType::fp8_e4m3)
    out << " kv fp8 "
        << (spec.model.kv_scale == KvScaleGranularity::per_head ? "per head" : "per tensor");
  out << " page " << spec.kv_cache.page_size << " " << to_string(spec.kv_cache.layout) << " seed "
      << spec.seed << (batch.causal ? " causal" : " non-causal") << " (context, query) [";
  for (int s = 0; s < batch.num_seqs; ++s) {
    out << "(" << batch.context_lens[size_t(s)] << ", " << batch.query_lens[size_t(s)] << ") ";
  }
  out << "] config " << config.key();
  return out.str();
}

// How a check runs the kernel: with an LSE output or without (prepare()'s path), and how many
// times (each launch into a freshly poisoned output and LSE; the last one is checked), so that
// state a launch leaves behind (a persistent grid's work counters) is exercised.
struct RunOptions {
  bool lse = true;
  int launches = 1;
};

// Prepares `variant` on a device copy of the batch, poisons the output and the LSE, launches
// (run.launches times, poisoning before each) and checks the output, and the LSE when asked for,
// against the oracle (computed first, before the variant can touch the device inputs).
inline void expect_flash_fwd_matches_reference(const FlashFwdVariant& variant, const Batch& batch,
                                               const KernelConfig& config,
                                               const RunOptions& run = {}) {
  auto& env = testing::gpu();
  const std::string what = describe(batch, config) + (run.lse ? "" : " (no LSE)") +
                           (run.launches > 1 ? " launch " + std::to_string(run.launches) : "");
  const Target target = Target::cuda(env.device());
  const Support support = variant.check(batch, config, target);
  ASSERT_TRUE(support.ok) << what << ": " << support.reason;

  const Problem host = Problem::on_host(batch);
  Problem device = Problem::on_device(host, *env.context);
  testing::DeviceExec exec(target);
  ExecContext& context = exec.context;
  Stream& stream = exec.stream;

  const size_t rows = size_t(batch.total_q) * size_t(batch.spec.model.num_q_heads);
  const testing::OracleOutput oracle = testing::oracle_output(host, device, run.lse);
  DeviceBuffer lse(*env.context, rows * sizeof(float));
  const std::vector<float> nan_rows(rows, std::numeric_limits<float>::quiet_NaN());
  std::unique_ptr<Launcher> launcher;
  try {
    launcher = variant.prepare_with_lse(device, config, context,
                                        run.lse ? static_cast<float*>(lse.pointer()) : nullptr);
  } catch (const CompileError& error) {
    FAIL() << what << ": " << error.what() << "\n" << error.log();
  }
  for (int launch = 0; launch < run.launches; ++launch) {
    stream.synchronize();
    lse.upload(nan_rows.data(), rows * sizeof(float));
    device.poison_output(&stream);
    launcher->launch();
  }
  stream.synchronize();

  const std::vector<uint8_t> output = device.read_output();
  // The output's rows are V's width (model.v_head_dim, else head_dim).
  const Verification v = verify_output(output.data(), batch.spec.model.dtype, oracle.out,
                                       batch.spec.model.effective_v_head_dim(), oracle.name);
  EXPECT_EQ(v.nonfinite, 0) << what;
  EXPECT_TRUE(verification_passed(v)) << what << ": " << attn::describe(v);

  if (!run.lse) return;
  std::vector<float> got(rows);
  lse.download(got.data(), rows * sizeof(float));
  int64_t bad = 0;
  for (size_t r = 0; r < rows; ++r) {
    const double error = std::fabs(double(got[r]) - double(oracle.lse[r]));
    if (!std::isfinite(got[r]) || !(error <= kLseTolerance)) {
      if (bad++ < 3) {
        ADD_FAILURE() << what << ": LSE row " << r << " (token "
                      << r / size_t(batch.spec.model.num_q_heads) << ") " << got[r] << " vs "
                      << oracle.name << " " << oracle.lse[r];
      }
    }
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << rows << " LSE rows wrong";
}

inline WorkloadSpec prefill_spec(const testing::SpecShape& shape,
                                 const std::vector<std::pair<int64_t, int64_t>>& sequences,
                                 bool causal) {
  WorkloadSpec spec = testing::make_spec(shape, sequences, "flash-fwd-test");
  spec.mask.causal = causal;
  return spec;
}

// (head_dim, v_head_dim) pairs a test draws from: V as wide as Q and K at 64, 128 and 256.
inline const std::vector<std::pair<int, int>> kPowerOfTwoHeadDims = {
    {64, 64}, {128, 128}, {256, 256}};

// A random variable-length prefill batch: GQA 1..16 and 40 (non powers of two among them), head
// dims from `dims` ((head_dim, v_head_dim) pairs: a narrower V sets model.v_head_dim), both
// dtypes, both pool layouts, odd page sizes; 1 to 5 sequences whose query lengths are near and
// off every tile size (1, 15, 17, 63, 65, 127, 129, ...) with contexts from 0 to 257, so the causal
// diagonal crosses tiles at every offset; causal or not. kv_fp8: over an fp8 (e4m3) cache, with
// per-tensor or per-head scales at random.
inline Batch random_prefill_batch(
    std::mt19937_64& rng, const std::vector<std::pair<int, int>>& dims = kPowerOfTwoHeadDims,
    bool kv_fp8 = false) {
  testing::SpecShape shape;
  shape.kv_heads = pick(rng, std::vector<int>{1, 2, 3});
  shape.q_heads = shape.kv_heads * pick(rng, std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 40});
  const auto [head_dim, v_head_dim] = pick(rng, dims);
  shape.head_dim = head_dim;
  shape.dtype = pick(rng, std::vector<DType>{DType::bf16, DType::fp16});
  shape.page_size = pick(rng, std::vector<int>{1, 5, 16, 64});
  shape.layout = pick(rng, std::vector<KvLayout>{KvLayout::nhd, KvLayout::hnd});
  shape.seed = rng();
  std::vector<std::pair<int64_t, int64_t>> sequences;
  const int seqs = std::uniform_int_distribution<int>(1, 5)(rng);
  for (int s = 0; s < seqs; ++s) {
    const int64_t context = std::uniform_int_distribution<int>(0, 2)(rng) == 0
                                ? pick(rng, std::vector<int64_t>{1, 7, 31, 64, 100, 257})
                                : 0;
    const int64_t query = pick(
        rng, std::vector<int64_t>{1, 2, 15, 16, 17, 31, 63, 65, 100, 127, 129, 200, 255, 333, 513});
    sequences.push_back({context, query});
  }
  if (std::all_of(sequences.begin(), sequences.end(), [](auto& s) { return s.second == 1; }))
    sequences.front().second = 77;  // a decode batch is paged_decode's
  const bool causal = std::uniform_int_distribution<int>(0, 3)(rng) != 0;
  WorkloadSpec spec = prefill_spec(shape, sequences, causal);
  if (v_head_dim != head_dim) spec.model.v_head_dim = v_head_dim;
  if (kv_fp8) {
    spec.model.kv_dtype = DType::fp8_e4m3;
    spec.model.kv_scale = std::uniform_int_distribution<int>(0, 1)(rng) == 0
                              ? KvScaleGranularity::per_head
                              : KvScaleGranularity::per_tensor;
  }
  return generate_batch(spec);
}

// Random batches (random_prefill_batch over `dims`, an fp8 cache with kv_fp8), each with a random
// config `variant` accepts (30 draws), checked against the reference, as many as the case budget
// allows (tests/gpu_case_budget.hpp); the seed is ATTN_TEST_SEED's or `seed`.
inline void expect_random_batches_match_reference(const FlashFwdVariant& variant, uint64_t seed,
                                                  const std::vector<std::pair<int, int>>& dims,
                                                  bool kv_fp8 = false) {
  const Target target = Target::cuda(testing::gpu().device());
  seed = testing::test_seed_or(seed);
  SCOPED_TRACE("ATTN_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  testing::CaseBudget budget = testing::CaseBudget::from_environment(8);
  while (budget.another()) {
    SCOPED_TRACE("case " + std::to_string(budget.draws()));
    const Batch batch = random_prefill_batch(rng, dims, kv_fp8);
    expect_flash_fwd_matches_reference(
        variant, batch, testing::random_accepted_config(variant, batch, target, rng, 30));
  }
  testing::print_case_summary(budget, seed);
}

// The cases of an every-config test over `batches` (of one head dim): every config one of them
// accepts, on `per_config` of them (tests/kernels/every_config_cases.hpp).
inline void add_rotated_cases(const Variant& variant, const std::vector<Batch>& batches,
                              const Target& target, size_t per_config,
                              std::vector<std::pair<Batch, KernelConfig>>& cases) {
  for (auto& [b, config] : testing::rotated_config_cases(variant, batches, target, per_config))
    cases.push_back({batches[b], config});
}

// Compiles the programs of `cases` in parallel (testing::compile_in_parallel).
inline void compile_all(const FlashFwdVariant& variant,
                        const std::vector<std::pair<Batch, KernelConfig>>& cases) {
  const Target target = Target::cuda(testing::gpu().device());
  std::vector<JitProgram> programs;
  for (const auto& [batch, config] : cases) {
    for (JitProgram& program : variant.programs(batch, config, target))
      programs.push_back(std::move(program));
  }
  testing::compile_in_parallel(programs);
}

// Compiles the programs of `cases` in parallel, then checks each.
inline void expect_all_match_reference(const FlashFwdVariant& variant,
                                       const std::vector<std::pair<Batch, KernelConfig>>& cases) {
  compile_all(variant, cases);
  for (const auto& [batch, config] : cases) {
    expect_flash_fwd_matches_reference(variant, batch, config);
  }
}

// The path `attn-bench run` takes: the Evaluator prepares without an LSE, poisons the output,
// verifies against the oracle and times it; on benchmark-like shapes (16 heads, head dim
// 128, bf16, two 1024-token prompts) with the default config, causal and not.
inline void expect_evaluator_passes_default_config(const Variant& variant) {
  auto& env = testing::gpu();
  const Evaluator::Options options = testing::test_evaluator_options(3);
  testing::SpecShape shape;
  shape.q_heads = 16;
  shape.kv_heads = 16;
  shape.head_dim = 128;
  for (bool causal : {true, false}) {
    const Batch batch = generate_batch(prefill_spec(shape, {{0, 1024}, {0, 1024}}, causal));
    auto evaluator = Evaluator::on_cuda(batch, env.discovery.api, env.device(), *env.jit, options);
    const KernelConfig config = variant.default_config(batch, evaluator->target());
    const Measurement m = evaluator->evaluate(variant, config);
    EXPECT_EQ(m.disposition, Disposition::passed) << describe(batch, config) << ": " << m.reason;
    EXPECT_EQ(m.verification.nonfinite, 0);
    EXPECT_GT(m.flops, 0);
  }
}

}  // namespace flash_fwd_testing
}  // namespace attn
