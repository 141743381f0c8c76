// The tiled GPU reference, the oracle of every large GPU test and of the Evaluator's `auto` and
// `gpu`, held to the naive GPU reference and to the CPU reference (double precision) within 1e-4
// relative per output row and in LSE: on the feature batches both GPU references are checked on
// (every family and feature), and on random small problems (every layout, dtype and fp8 scale
// granularity, every head dim the schema allows, GQA groups, page sizes from 1, contexts of 0,
// sequences over several query tiles and key tiles, block-sparse layouts and explicit masks,
// soft-cap, windows, sinks, causal or not). Then: that a 1% change of the softmax scale fails the
// comparison, that a device-generated problem gives the same bits as an uploaded one, and that
// an 8192-token causal prompt takes it seconds at most.
#include "kernels/reference/gpu_tiled_reference.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <random>

#include "kernels/reference/gpu_reference.hpp"
#include "kernels/reference/paged_attention_reference.hpp"
#include "tests/gpu_case_budget.hpp"
#include "tests/gpu_test_support.hpp"
#include "tests/kernels/random_draws.hpp"
#include "tests/kernels/reference/reference_comparison.hpp"
#include "tests/kernels/reference/reference_feature_batches.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

constexpr double kRelativeTolerance = 1e-4;

struct ThreeOracles {
  testing::OracleRows cpu{"cpu_reference"}, naive{kGpuReferenceName}, tiled{kGpuTiledReferenceName};
};

ThreeOracles run_all(const Batch& batch) {
  auto& env = testing::gpu();
  ThreeOracles o;
  const Problem host = Problem::on_host(batch);
  o.cpu.out = paged_attention_reference(host, 0, &o.cpu.lse);
  const Problem device = Problem::on_device(host, *env.context);
  Stream stream(*env.context);
  KernelLoader loader(*env.context, *env.jit);
  o.naive.out = gpu_paged_attention_reference(device, *env.context, loader, stream, &o.naive.lse);
  o.tiled.out =
      gpu_tiled_paged_attention_reference(device, *env.context, loader, stream, &o.tiled.lse);
  return o;
}

// The tiled reference against both others; a row no key is visible to is exactly zero with an LSE
// of -inf in all three.
void expect_tiled_matches(const Batch& batch, const std::string& what) {
  const ThreeOracles o = run_all(batch);
  EXPECT_EQ(testing::rows_apart(batch, o.tiled, o.cpu, kRelativeTolerance, what), 0) << what;
  EXPECT_EQ(testing::rows_apart(batch, o.tiled, o.naive, kRelativeTolerance, what), 0) << what;
}

TEST(GpuTiledReference, MatchesTheNaiveAndCpuReferencesOnEveryFeatureBatch) {
  ATTN_REQUIRE_GPU();
  for (uint64_t seed : {1u, 2u}) {
    for (const testing::FeatureBatch& b : testing::reference_feature_batches(seed)) {
      expect_tiled_matches(b.batch, b.what + " seed " + std::to_string(seed));
    }
  }
}

using testing::pick;

bool chance(std::mt19937_64& rng, double p) {
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng) < p;
}

// A random small problem: any layout, dtype, fp8 K/V (per tensor or per head), head dim (and a
// narrower V head dim), GQA
// group and page size; 1 to 4 sequences with contexts from 0 and queries that cross the tile's 32
// rows; then one visibility rule (causal or not, a window, a block-sparse layout, an explicit
// mask of each kind) and soft-cap and sinks at random.
WorkloadSpec random_spec(std::mt19937_64& rng) {
  testing::SpecShape shape;
  shape.kv_heads = pick(rng, std::vector<int>{1, 2, 3});
  shape.q_heads = shape.kv_heads * pick(rng, std::vector<int>{1, 2, 3, 4, 7, 8});
  shape.head_dim = pick(rng, std::vector<int>{64, 80, 96, 128, 192, 256});
  shape.dtype = pick(rng, std::vector<DType>{DType::bf16, DType::fp16});
  shape.page_size = pick(rng, std::vector<int>{1, 3, 16, 64});
  shape.layout = pick(rng, std::vector<KvLayout>{KvLayout::nhd, KvLayout::hnd, KvLayout::vllm});
  shape.allocation =
      pick(rng, std::vector<PageAllocation>{PageAllocation::sequential, PageAllocation::shuffled});
  shape.seed = rng();
  std::vector<std::pair<int64_t, int64_t>> lengths;
  for (int s = std::uniform_int_distribution<int>(1, 4)(rng); s > 0; --s) {
    lengths.push_back({pick(rng, std::vector<int64_t>{0, 0, 1, 31, 100, 300}),
                       pick(rng, std::vector<int64_t>{1, 2, 31, 32, 33, 70})});
  }
  const int rule = std::uniform_int_distribution<int>(0, 5)(rng);
  ExplicitMaskSpec mask;
  if (rule == 3) {  // a tree: one node per new token, every sequence the same
    const int nodes = pick(rng, std::vector<int>{1, 5, 21, 40});
    for (int i = 0; i < nodes; ++i)
      mask.tree_parents.push_back(std::uniform_int_distribution<int>(-1, i - 1)(rng));
    for (auto& l : lengths) l.second = nodes;
  } else if (rule == 4) {
    mask.branches = pick(rng, std::vector<int>{1, 2, 4});
    for (auto& l : lengths) l.second = mask.branches * pick(rng, std::vector<int64_t>{1, 9, 20});
  }
  WorkloadSpec spec = testing::make_spec(shape, lengths, "tiled-reference-random");
  if (chance(rng, 0.3) && shape.head_dim > 64) {  // V (and the output) narrower than Q and K
    std::vector<int> narrower;
    for (int d : {64, 80, 96, 128, 192})
      if (d < shape.head_dim) narrower.push_back(d);
    spec.model.v_head_dim = pick(rng, narrower);
  }
  if (chance(rng, 0.3)) {
    spec.model.kv_dtype = DType::fp8_e4m3;
    spec.model.kv_scale =
        chance(rng, 0.5) ? KvScaleGranularity::per_head : KvScaleGranularity::per_tensor;
  }
  if (chance(rng, 0.3)) spec.model.logits_soft_cap = pick(rng, std::vector<double>{2.0, 30.0});
  if (chance(rng, 0.3)) spec.model.attention_sinks = true;
  switch (rule) {
    case 0:  // causal, maybe a window
      if (chance(rng, 0.5)) spec.model.sliding_window = pick(rng, std::vector<int64_t>{1, 7, 50});
      break;
    case 1:  // not causal, maybe a window
      spec.mask.causal = false;
      if (chance(rng, 0.5)) spec.model.sliding_window = pick(rng, std::vector<int64_t>{9, 100});
      break;
    case 2: {
      BlockSparseSpec sparse;
      sparse.block_size = pick(rng, std::vector<int>{4, 16, 64});
      sparse.local_blocks = pick(rng, std::vector<int>{1, 2});
      sparse.vertical_stride = pick(rng, std::vector<int>{1, 3});
      sparse.head_sliding_step = pick(rng, std::vector<int>{0, 1});
      sparse.homo_head = chance(rng, 0.3);
      spec.mask.block_sparse = sparse;
      break;
    }
    case 3:
      mask.kind = ExplicitMaskKind::tree;
      spec.mask.explicit_mask = mask;
      break;
    case 4:
      mask.kind = ExplicitMaskKind::branches;
      spec.mask.explicit_mask = mask;
      break;
    default:
      mask.kind = pick(
          rng, std::vector<ExplicitMaskKind>{ExplicitMaskKind::random, ExplicitMaskKind::causal});
      mask.density = pick(rng, std::vector<double>{0.05, 0.5});
      spec.mask.explicit_mask = mask;
      break;
  }
  return spec;
}

TEST(GpuTiledReference, MatchesTheNaiveAndCpuReferencesOnRandomProblems) {
  ATTN_REQUIRE_GPU();
  const uint64_t seed = testing::test_seed_or(20261130);
  SCOPED_TRACE("ATTN_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  testing::CaseBudget budget = testing::CaseBudget::from_environment(24);
  while (budget.another()) {
    const WorkloadSpec spec = random_spec(rng);
    const std::string what = "case " + std::to_string(budget.draws()) + " " + canonical_json(spec);
    expect_tiled_matches(generate_batch(spec), what);
  }
  testing::print_case_summary(budget, seed);
}

// Long sequences: many query tiles and key tiles, causal (tiles above the diagonal skipped) and
// with a window (tiles left of it skipped), every head dim's tile width.
TEST(GpuTiledReference, MatchesTheCpuReferenceOverManyTiles) {
  ATTN_REQUIRE_GPU();
  for (int head_dim : {64, 128, 256}) {
    testing::SpecShape shape;
    shape.q_heads = 4;
    shape.kv_heads = 2;
    shape.head_dim = head_dim;
    shape.seed = uint64_t(head_dim);
    for (int64_t window : {int64_t(0), int64_t(100)}) {
      WorkloadSpec spec = testing::make_spec(shape, {{0, 700}, {1000, 129}, {37, 1}});
      if (window > 0) spec.model.sliding_window = window;
      const Batch batch = generate_batch(spec);
      const ThreeOracles o = run_all(batch);
      const std::string what = "d" + std::to_string(head_dim) + " window " + std::to_string(window);
      EXPECT_EQ(testing::rows_apart(batch, o.tiled, o.cpu, kRelativeTolerance, what), 0) << what;
    }
  }
}

// The comparison has teeth: a 1% change of the softmax scale moves nearly every row past 1e-4.
TEST(GpuTiledReference, DisagreesWhenTheSemanticsDiffer) {
  ATTN_REQUIRE_GPU();
  testing::SpecShape shape;
  const Batch batch = generate_batch(testing::make_spec(shape, {{40, 20}, {0, 33}}));
  Batch scaled = batch;
  scaled.softmax_scale *= 1.01f;
  auto& env = testing::gpu();
  testing::OracleRows cpu{"cpu_reference"}, tiled{kGpuTiledReferenceName};
  cpu.out = paged_attention_reference(Problem::on_host(batch), 0, &cpu.lse);
  const Problem device = Problem::on_device(Problem::on_host(scaled), *env.context);
  Stream stream(*env.context);
  KernelLoader loader(*env.context, *env.jit);
  tiled.out = gpu_tiled_paged_attention_reference(device, *env.context, loader, stream, &tiled.lse);
  const int64_t rows = batch.total_q * batch.spec.model.num_q_heads;
  EXPECT_GT(testing::rows_apart(batch, tiled, cpu, kRelativeTolerance, "scaled", 0), rows * 9 / 10);
}

// A problem generated on the device holds the bytes of the host fill: the oracle reads both alike.
TEST(GpuTiledReference, DeviceGeneratedProblemGivesTheSameBits) {
  ATTN_REQUIRE_GPU();
  auto& env = testing::gpu();
  testing::SpecShape shape;
  shape.layout = KvLayout::vllm;
  WorkloadSpec spec = testing::make_spec(shape, {{100, 90}, {3, 1}});
  spec.model.kv_dtype = DType::fp8_e4m3;
  spec.model.kv_scale = KvScaleGranularity::per_head;
  const Batch batch = generate_batch(spec);
  Stream stream(*env.context);
  KernelLoader loader(*env.context, *env.jit);
  const Problem uploaded = Problem::on_device(Problem::on_host(batch), *env.context);
  const Problem generated = Problem::generated_on_device(batch, *env.context, loader, stream);
  EXPECT_EQ(gpu_tiled_paged_attention_reference(uploaded, *env.context, loader, stream),
            gpu_tiled_paged_attention_reference(generated, *env.context, loader, stream));
}

// What it is for: an 8192-token causal prompt with 16 heads of 128 dims (6.9e10 units of
// reference_work, minutes of the CPU reference on 16 cores) in well under a second once compiled
// on an idle H200 (the bound leaves room for the kernels of tests running beside it). Every row
// finite, every LSE finite (each row sees its own key at least).
TEST(GpuTiledReference, VerifiesAnEightThousandTokenPromptInSeconds) {
  ATTN_REQUIRE_GPU();
  auto& env = testing::gpu();
  testing::SpecShape shape;
  shape.q_heads = 16;
  shape.kv_heads = 16;
  shape.head_dim = 128;
  const Batch batch = generate_batch(testing::make_spec(shape, {{0, 8192}}, "tiled-8k"));
  Stream stream(*env.context);
  KernelLoader loader(*env.context, *env.jit);
  loader.load(gpu_tiled_reference_program(batch, env.device().arch()));  // compile first
  const Problem device = Problem::generated_on_device(batch, *env.context, loader, stream);
  stream.synchronize();
  const auto start = std::chrono::steady_clock::now();
  std::vector<float> lse;
  const std::vector<float> out =
      gpu_tiled_paged_attention_reference(device, *env.context, loader, stream, &lse);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "[ info ] tiled GPU reference, 8192-token causal prompt, 16 heads, d128: " << seconds
            << " s (tables, kernel and download)\n";
  EXPECT_LT(seconds, 5.0);
  ASSERT_EQ(out.size(), size_t(8192) * 16 * 128);
  EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](float v) { return std::isfinite(v); }));
  EXPECT_TRUE(std::all_of(lse.begin(), lse.end(), [](float v) { return std::isfinite(v); }));
}

}  // namespace
}  // namespace attn
