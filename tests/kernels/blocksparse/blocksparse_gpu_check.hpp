// Helpers of the blocksparse GPU tests (blocksparse_gpu_test.cpp, sm90_wgmma_gpu_test.cpp): random
// layouts (the Phi-3 parameter family, and random lower-triangular ones with empty rows and dropped
// diagonals), random batches and configs, and the check of one run against the oracle (the CPU
// reference, or the tiled GPU reference for a large batch: testing::oracle_output) on a poisoned
// output (0xFF: NaN in bf16 and fp16), or of the Evaluator's path against a chosen oracle. The
// tolerance is the output's dtype's (Q's): an fp8 cache's codes are converted exactly and the
// oracle reads the same codes times the same scales.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <sstream>

#include "kernels/blocksparse/blocksparse_variants.hpp"
#include "kernels/registry.hpp"
#include "measure/evaluator.hpp"
#include "measure/verify.hpp"
#include "tests/gpu_case_budget.hpp"
#include "tests/gpu_test_support.hpp"
#include "tests/kernels/every_config_cases.hpp"
#include "tests/kernels/random_draws.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace blocksparse_testing {

using testing::pick;

inline BlockSparseSpec phi3_layout(int block_size, int local, int stride, int sliding = 1,
                                   bool homo = false) {
  BlockSparseSpec b;
  b.block_size = block_size;
  b.local_blocks = local;
  b.vertical_stride = stride;
  b.head_sliding_step = sliding;
  b.homo_head = homo;
  return b;
}

// A random lower-triangular layout replacing the batch's (same block size and block count): each
// block kept with probability `density`, so rows may be empty and diagonals dropped.
inline void randomise_layout(Batch& batch, std::mt19937_64& rng, double density) {
  BlockSparseLayout& layout = *batch.block_sparse;
  std::bernoulli_distribution keep(density);
  std::vector<std::vector<int32_t>> cols(size_t(layout.num_heads));
  layout.crow.assign(size_t(layout.num_heads) * size_t(layout.num_blocks + 1), 0);
  layout.max_nnz = 0;
  for (int h = 0; h < layout.num_heads; ++h) {
    for (int i = 0; i < layout.num_blocks; ++i) {
      for (int j = 0; j <= i; ++j) {
        if (keep(rng)) cols[size_t(h)].push_back(j);
      }
      layout.crow[size_t(h) * size_t(layout.num_blocks + 1) + size_t(i) + 1] =
          int32_t(cols[size_t(h)].size());
    }
    layout.max_nnz = std::max(layout.max_nnz, int(cols[size_t(h)].size()));
  }
  layout.col.assign(size_t(layout.num_heads) * size_t(std::max(1, layout.max_nnz)), -1);
  for (int h = 0; h < layout.num_heads; ++h) {
    std::copy(cols[size_t(h)].begin(), cols[size_t(h)].end(),
              layout.col.begin() + ptrdiff_t(h) * layout.max_nnz);
  }
}

inline std::string describe(const Batch& batch, const KernelConfig& config) {
  const WorkloadSpec& spec = batch.spec;
  const BlockSparseLayout& layout = *batch.block_sparse;
  std::ostringstream out;
  out << "q" << spec.model.num_q_heads << "/kv" << spec.model.num_kv_heads << " d"
      << spec.model.head_dim;
  if (spec.model.effective_v_head_dim() != spec.model.head_dim)
    out << " dv" << spec.model.effective_v_head_dim();
  out << " " << to_string(spec.model.dtype);
  if (spec.model.kv_dtype == DType::fp8_e4m3)
    out << " kv fp8 "
        << (spec.model.kv_scale == KvScaleGranularity::per_head ? "per head" : "per tensor");
  out << " page " << spec.kv_cache.page_size << " seed " << spec.seed
      << (batch.causal ? " causal" : " non-causal") << " block " << layout.block_size << " density "
      << layout.density() << " (context, query) [";
  for (int s = 0; s < batch.num_seqs; ++s) {
    out << "(" << batch.context_lens[size_t(s)] << ", " << batch.query_lens[size_t(s)] << ") ";
  }
  out << "] config " << config.key();
  return out.str();
}

// `launches` > 1 runs the kernel that many times, poisoning the output before each, and checks the
// last (a persistent kernel's work counter must be ready for the next launch).
inline void expect_matches_reference(const Variant& variant, const Batch& batch,
                                     const KernelConfig& config, int launches = 1) {
  auto& env = testing::gpu();
  const std::string what = variant.name() + " " + describe(batch, config);
  const Target target = Target::cuda(env.device());
  const Support support = variant.check(batch, config, target);
  ASSERT_TRUE(support.ok) << what << ": " << support.reason;

  const Problem host = Problem::on_host(batch);
  Problem device = Problem::on_device(host, *env.context);
  testing::DeviceExec exec(target);
  ExecContext& context = exec.context;
  Stream& stream = exec.stream;

  const testing::OracleOutput oracle = testing::oracle_output(host, device, false);
  std::unique_ptr<Launcher> launcher;
  try {
    launcher = variant.prepare(device, config, context);
  } catch (const CompileError& error) {
    FAIL() << what << ": " << error.what() << "\n" << error.log();
  }
  for (int i = 0; i < launches; ++i) {
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
}

// Compiles the programs of `cases` in parallel (testing::compile_in_parallel).
inline void compile_cases_in_parallel(const Variant& variant,
                                      const std::vector<std::pair<Batch, KernelConfig>>& cases) {
  const Target target = Target::cuda(testing::gpu().device());
  std::vector<JitProgram> programs;
  for (const auto& [batch, config] : cases) {
    for (JitProgram& program : variant.programs(batch, config, target))
      programs.push_back(std::move(program));
  }
  testing::compile_in_parallel(programs);
}

// A random shape, layout (block size from block_sizes), (head_dim, v_head_dim) from `dims` (a
// narrower V sets model.v_head_dim) and data seed; sequences as given. kv_fp8: over an fp8 (e4m3)
// cache, with per-tensor or per-head scales at random.
inline Batch random_batch(std::mt19937_64& rng,
                          const std::vector<std::pair<int64_t, int64_t>>& sequences, bool causal,
                          int max_group, const std::vector<int>& block_sizes = {16, 32, 64, 128},
                          const std::vector<std::pair<int, int>>& dims = {{64, 64}, {128, 128}},
                          bool kv_fp8 = false) {
  testing::SpecShape shape;
  shape.kv_heads = pick(rng, std::vector<int>{1, 2, 3});
  std::vector<int> groups;
  for (int g : {1, 2, 3, 4, 5, 7, 8, 16, 20}) {
    if (g <= max_group) groups.push_back(g);
  }
  shape.q_heads = shape.kv_heads * pick(rng, groups);
  const auto [head_dim, v_head_dim] = pick(rng, dims);
  shape.head_dim = head_dim;
  shape.dtype = pick(rng, std::vector<DType>{DType::bf16, DType::fp16});
  shape.page_size = pick(rng, std::vector<int>{1, 5, 16, 64});
  shape.layout = pick(rng, std::vector<KvLayout>{KvLayout::nhd, KvLayout::hnd});
  shape.seed = rng();
  WorkloadSpec spec = testing::make_spec(shape, sequences, "blocksparse-gpu-test");
  if (v_head_dim != head_dim) spec.model.v_head_dim = v_head_dim;
  if (kv_fp8) {
    spec.model.kv_dtype = DType::fp8_e4m3;
    spec.model.kv_scale =
        rng() % 2 == 0 ? KvScaleGranularity::per_head : KvScaleGranularity::per_tensor;
  }
  spec.mask.block_sparse =
      phi3_layout(pick(rng, block_sizes), std::uniform_int_distribution<int>(1, 4)(rng),
                  std::uniform_int_distribution<int>(1, 8)(rng),
                  std::uniform_int_distribution<int>(0, 3)(rng), rng() % 5 == 0);
  Batch batch = generate_batch(spec);
  // Workloads with a layout are causal (validation); the kernels also run non-causal batches.
  batch.causal = causal;
  if (rng() % 3 == 0) randomise_layout(batch, rng, pick(rng, std::vector<double>{0.05, 0.3, 0.7}));
  return batch;
}

inline std::vector<std::pair<int64_t, int64_t>> random_prefill_sequences(std::mt19937_64& rng) {
  std::vector<std::pair<int64_t, int64_t>> sequences;
  const int seqs = std::uniform_int_distribution<int>(1, 5)(rng);
  for (int s = 0; s < seqs; ++s) {
    const int64_t context =
        rng() % 2 == 0 ? pick(rng, std::vector<int64_t>{1, 7, 31, 64, 100, 257, 1000}) : 0;
    const int64_t query = pick(
        rng, std::vector<int64_t>{1, 2, 15, 16, 17, 63, 65, 100, 127, 129, 255, 333, 513, 1100});
    sequences.push_back({context, query});
  }
  if (std::all_of(sequences.begin(), sequences.end(), [](auto& s) { return s.second == 1; }))
    sequences.front().second = 77;
  return sequences;
}

// Decode sequences: 1 to 8 of one new token each, contexts 0 to 3000 (a quarter of them under 70,
// so the query's block row is anywhere).
inline std::vector<std::pair<int64_t, int64_t>> random_decode_sequences(std::mt19937_64& rng) {
  std::vector<std::pair<int64_t, int64_t>> sequences;
  const int seqs = std::uniform_int_distribution<int>(1, 8)(rng);
  for (int s = 0; s < seqs; ++s) {
    sequences.push_back({rng() % 4 == 0 ? int64_t(rng() % 70) : int64_t(rng() % 3000), 1});
  }
  return sequences;
}

// Random prefill batches (random_prefill_sequences, causal three times in four, GQA up to 20,
// layouts of `block_sizes`, head dims from `dims`, an fp8 cache with kv_fp8), each with a random
// accepted config of `variant`, as many as the case budget allows; `seed` unless ATTN_TEST_SEED.
inline void expect_random_prefill_batches_match(const Variant& variant, uint64_t seed,
                                                const std::vector<int>& block_sizes,
                                                const std::vector<std::pair<int, int>>& dims,
                                                bool kv_fp8 = false) {
  const Target target = Target::cuda(testing::gpu().device());
  seed = testing::test_seed_or(seed);
  SCOPED_TRACE("ATTN_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  testing::CaseBudget budget = testing::CaseBudget::from_environment(8);
  while (budget.another()) {
    SCOPED_TRACE("case " + std::to_string(budget.draws()));
    const bool causal = rng() % 4 != 0;
    const Batch batch =
        random_batch(rng, random_prefill_sequences(rng), causal, 20, block_sizes, dims, kv_fp8);
    ASSERT_EQ(batch.kv_fp8(), kv_fp8);
    expect_matches_reference(variant, batch,
                             testing::random_accepted_config(variant, batch, target, rng, 30));
  }
  testing::print_case_summary(budget, seed);
}

// The path `attn-bench run` takes (Evaluator: poison, verify against `oracle`, time once) for each
// of `configs` on one evaluator (the oracle runs once).
inline void expect_evaluator_passes(const Variant& variant, const Batch& batch,
                                    const std::vector<KernelConfig>& configs,
                                    ReferenceOracle oracle) {
  auto& env = testing::gpu();
  Evaluator::Options options = testing::test_evaluator_options(1);
  options.reference = oracle;
  auto evaluator = Evaluator::on_cuda(batch, env.discovery.api, env.device(), *env.jit, options);
  for (const KernelConfig& config : configs) {
    const Measurement m = evaluator->evaluate(variant, config);
    EXPECT_EQ(m.disposition, Disposition::passed)
        << variant.name() << " " << describe(batch, config) << ": " << m.reason;
    EXPECT_EQ(m.verification.nonfinite, 0) << describe(batch, config);
  }
}

}  // namespace blocksparse_testing
}  // namespace attn
