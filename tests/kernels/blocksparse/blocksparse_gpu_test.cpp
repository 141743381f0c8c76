// The blocksparse family on the GPU: blocksparse.sm80_mma on random variable-length prefill batches
// (contexts that put the first new token anywhere in a block, lengths off every tile, GQA ratios
// including non powers of two, head dims 64/80/96/128/192 and V narrower than Q/K, bf16 and fp16,
// causal and not) over random layouts (Phi-3 parameters with random block sizes, sliding steps and
// homo heads, and random lower-triangular layouts with empty rows and dropped diagonals), with
// random configs and every accepted config, and one config per path of the sm80 loop it shares
// with flash_fwd.sm80_mma; blocksparse.sm80_mma_decode likewise on decode batches. Every run writes
// into a poisoned output (0xFF: NaN in bf16 and fp16) and is compared with the oracle (the CPU
// reference, or the tiled GPU reference for a large batch; both apply key_visible): no NaN, every
// row within the dtype's tolerance. Then the Evaluator path and a benchmark-sized prompt. The
// random tests check as many cases as the case budget allows (tests/gpu_case_budget.hpp).
#include <gtest/gtest.h>

#include <future>

#include "kernels/common/sm80_attention_traits.hpp"
#include "tests/kernels/blocksparse/blocksparse_gpu_check.hpp"

namespace attn {
namespace {

using namespace blocksparse_testing;

TEST(BlockSparseMmaGpu, RandomBatchesLayoutsAndConfigsMatchTheReference) {
  ATTN_REQUIRE_GPU();
  const Registry registry = make_registry();
  expect_random_prefill_batches_match(
      *registry.find("blocksparse.sm80_mma"), 20261207, {16, 32, 64, 128},
      {{64, 64}, {80, 80}, {96, 96}, {128, 128}, {192, 192}, {192, 128}, {128, 64}});
}

// Every accepted config, for each (head_dim, v_head_dim) of `dims`, on lengths that are
// multiples of no tile, each config once on one of four batches in turn: causal (bf16) over a
// Phi-3 layout of 64-token blocks, not causal (fp16) over a random one of 32-token blocks, causal
// over the random one, not causal over the Phi-3 one.
void expect_every_accepted_config_matches(const std::vector<std::pair<int, int>>& dims,
                                          size_t min_cases) {
  auto& env = testing::gpu();
  const Registry registry = make_registry();
  const Variant& variant = *registry.find("blocksparse.sm80_mma");
  const Target target = Target::cuda(env.device());
  std::mt19937_64 rng(5);
  std::vector<std::pair<Batch, KernelConfig>> cases;
  for (const auto& [head_dim, v_head_dim] : dims) {
    std::vector<Batch> batches;
    for (const auto& [causal, block] :
         {std::pair{true, 64}, std::pair{false, 32}, std::pair{true, 32}, std::pair{false, 64}}) {
      testing::SpecShape shape =
          testing::gqa3_shape(head_dim, causal ? DType::bf16 : DType::fp16,
                              uint64_t(head_dim) * 4 + causal * 2 + (block == 32));
      WorkloadSpec spec =
          testing::make_spec(shape, {{0, 300}, {45, 1}, {3, 129}, {70, 217}}, "bs-every");
      if (v_head_dim != head_dim) spec.model.v_head_dim = v_head_dim;
      spec.mask.block_sparse = phi3_layout(block, 2, 3);
      Batch batch = generate_batch(spec);
      batch.causal = causal;
      if (block == 32) randomise_layout(batch, rng, 0.4);
      batches.push_back(std::move(batch));
    }
    for (auto& [b, config] : testing::rotated_config_cases(variant, batches, target, 1))
      cases.push_back({batches[b], config});
  }
  compile_cases_in_parallel(variant, cases);
  EXPECT_GT(cases.size(), min_cases);
  for (const auto& [batch, config] : cases) expect_matches_reference(variant, batch, config);
}

TEST(BlockSparseMmaGpu, EveryAcceptedConfigMatchesTheReference) {
  ATTN_REQUIRE_GPU();
  expect_every_accepted_config_matches({{64, 64}, {128, 128}}, 30);
}

// Head dims 80, 96 and 192 (padded rows, a swizzle over three 128-byte groups, idle copy slots)
// and V narrower than Q and K ((192, 128), (128, 64)).
TEST(BlockSparseMmaGpu, EveryAcceptedConfigAtHeadDims80To192AndNarrowVMatchesTheReference) {
  ATTN_REQUIRE_GPU();
  expect_every_accepted_config_matches({{80, 80}, {96, 96}, {192, 192}, {192, 128}, {128, 64}}, 50);
}

// blocksparse.sm80_mma runs the sm80 attention loop it shares with flash_fwd.sm80_mma
// (kernels/common/sm80_attention.cuh): one config per path of that loop at head dim 128 (the
// traits' q_in_registers decides Q in registers or in shared memory; the row sums stay in the
// softmax for blocksparse, kTensorRowSums, where flash's rule would move them), over blocks of
// 128 so that 32-row warps over 4 warps fit a block, causal and not, on lengths off every tile
// and a chunk after a context that ends mid-block. Each path's choice is asserted from the traits,
// so a change to the rules that leaves a path untested fails here.
TEST(BlockSparseMmaGpu, EachPathOfTheSharedLoopMatchesTheReference) {
  ATTN_REQUIRE_GPU();
  const Registry registry = make_registry();
  const Variant& variant = *registry.find("blocksparse.sm80_mma");
  const Target target = Target::cuda(testing::gpu().device());
  struct Path {
    int tile_m, tile_n, warps;
    bool q_in_registers, row_sums;
  };
  // Q in registers over 4 warps (the default over blocks of 64, where flash would take the row
  // sums on the tensor cores); Q from shared memory over 4 warps (likewise); Q from shared memory
  // over 2 warps; Q in registers over 8 warps.
  for (const Path& path : {Path{64, 64, 4, true, true}, Path{128, 32, 4, false, true},
                           Path{64, 32, 2, false, false}, Path{128, 64, 8, true, false}}) {
    EXPECT_EQ(sm80_attention::q_in_registers(128, path.tile_m, path.tile_n, path.warps),
              path.q_in_registers);
    EXPECT_EQ(sm80_attention::tensor_row_sums(128, path.warps), path.row_sums);
    for (bool causal : {true, false}) {
      testing::SpecShape shape;
      shape.q_heads = 8;
      shape.kv_heads = 2;
      shape.head_dim = 128;
      shape.dtype = causal ? DType::bf16 : DType::fp16;
      shape.seed = uint64_t(path.tile_m * 7 + path.warps) * 2 + causal;
      WorkloadSpec spec =
          testing::make_spec(shape, {{0, 389}, {200, 77}, {0, 1}, {129, 256}}, "bs-paths");
      spec.mask.block_sparse = phi3_layout(128, 2, 2);
      Batch batch = generate_batch(spec);
      batch.causal = causal;
      const KernelConfig config{
          {"tile_m", path.tile_m}, {"tile_n", path.tile_n}, {"warps", path.warps}, {"stages", 2}};
      ASSERT_TRUE(variant.check(batch, config, target)) << describe(batch, config);
      expect_matches_reference(variant, batch, config);
    }
  }
}

// Decode: random contexts (0 to 3000, so the query's block row is anywhere), GQA up to 16,
// random layouts and configs; both variants (mma runs a decode batch too, one row per tile).
TEST(BlockSparseDecodeGpu, RandomBatchesLayoutsAndConfigsMatchTheReference) {
  ATTN_REQUIRE_GPU();
  const Registry registry = make_registry();
  const Variant& decode = *registry.find("blocksparse.sm80_mma_decode");
  const Variant& mma = *registry.find("blocksparse.sm80_mma");
  const Target target = Target::cuda(testing::gpu().device());
  const uint64_t seed = testing::test_seed_or(20261209);
  SCOPED_TRACE("ATTN_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  testing::CaseBudget budget = testing::CaseBudget::from_environment(8);
  while (budget.another()) {
    SCOPED_TRACE("case " + std::to_string(budget.draws()));
    const std::vector<std::pair<int64_t, int64_t>> sequences = random_decode_sequences(rng);
    const Batch batch = random_batch(rng, sequences, rng() % 4 != 0, 16);
    expect_matches_reference(decode, batch,
                             testing::random_accepted_config(decode, batch, target, rng, 30));
    if (budget.draws() % 4 == 1) {
      expect_matches_reference(mma, batch, mma.default_config(batch, target));
    }
  }
  testing::print_case_summary(budget, seed);
}

TEST(BlockSparseDecodeGpu, EveryAcceptedConfigMatchesTheReference) {
  ATTN_REQUIRE_GPU();
  const Registry registry = make_registry();
  const Variant& variant = *registry.find("blocksparse.sm80_mma_decode");
  const Target target = Target::cuda(testing::gpu().device());
  for (int head_dim : {64, 80, 96, 128, 192}) {
    testing::SpecShape shape;
    shape.q_heads = 16;
    shape.kv_heads = 2;  // GQA 8
    shape.head_dim = head_dim;
    shape.dtype = head_dim == 64 || head_dim == 96 ? DType::fp16 : DType::bf16;
    shape.seed = uint64_t(head_dim);
    WorkloadSpec spec = testing::make_decode_spec(shape, {0, 63, 64, 700, 2049, 130});
    spec.mask.block_sparse = phi3_layout(128, 3, 4, 2);
    const Batch batch = generate_batch(spec);
    const auto space = variant.space(batch, target);
    std::vector<std::pair<Batch, KernelConfig>> cases;
    for (int64_t n : space[0].values) {
      for (int64_t w : space[1].values) {
        for (int64_t s : space[2].values) {
          const KernelConfig config{{"tile_n", n}, {"warps", w}, {"stages", s}};
          if (variant.check(batch, config, target)) cases.push_back({batch, config});
        }
      }
    }
    compile_cases_in_parallel(variant, cases);
    for (const auto& [case_batch, config] : cases) {
      expect_matches_reference(variant, case_batch, config);
    }
    EXPECT_GT(cases.size(), 10u);
  }
}

// The path `attn-bench run` takes (Evaluator: poison, verify against the oracle, time) on
// the benchmark's shape scaled down: 32 q heads, 8 kv heads, head dim 128, bf16, blocks of 64,
// local 16, vertical stride 8; prefill (mma) and decode (both variants), default configs.
TEST(BlockSparseGpu, EvaluatorVerifiesAndTimesTheDefaultConfigs) {
  ATTN_REQUIRE_GPU();
  auto& env = testing::gpu();
  const Registry registry = make_registry();
  const Evaluator::Options options = testing::test_evaluator_options(3);
  testing::SpecShape shape;
  shape.q_heads = 32;
  shape.kv_heads = 8;
  shape.head_dim = 128;
  WorkloadSpec prefill = testing::make_spec(shape, {{0, 2048}, {0, 2048}}, "bs-eval");
  prefill.mask.block_sparse = phi3_layout(64, 16, 8);
  WorkloadSpec decode = testing::make_decode_spec(shape, {4095, 1000, 333, 8191});
  decode.mask.block_sparse = phi3_layout(64, 16, 8);
  for (const WorkloadSpec& spec : {prefill, decode}) {
    const Batch batch = generate_batch(spec);
    auto evaluator = Evaluator::on_cuda(batch, env.discovery.api, env.device(), *env.jit, options);
    for (const char* name : {"blocksparse.sm80_mma", "blocksparse.sm80_mma_decode"}) {
      const Variant& variant = *registry.find(name);
      const KernelConfig config = variant.default_config(batch, evaluator->target());
      if (!variant.check(batch, config, evaluator->target())) continue;  // decode on prefill
      const Measurement m = evaluator->evaluate(variant, config);
      EXPECT_EQ(m.disposition, Disposition::passed)
          << name << " " << describe(batch, config) << ": " << m.reason;
      EXPECT_EQ(m.verification.nonfinite, 0);
      EXPECT_GT(m.flops, 0);
    }
  }
}

// Large: one 8192-token prompt with seed 003's layout (128 query tiles per head, rows with up to
// 16 local + 15 vertical blocks) and a 1000-token chunk after a 3000-token context.
TEST(BlockSparseMmaGpu, LargeBatchesMatchTheReference) {
  ATTN_REQUIRE_GPU();
  const Registry registry = make_registry();
  const Variant& variant = *registry.find("blocksparse.sm80_mma");
  const Target target = Target::cuda(testing::gpu().device());
  testing::SpecShape shape;
  shape.q_heads = 8;
  shape.kv_heads = 2;
  shape.head_dim = 128;
  WorkloadSpec spec = testing::make_spec(shape, {{0, 8192}, {3000, 1000}}, "bs-large");
  spec.mask.block_sparse = phi3_layout(64, 16, 8);
  const Batch batch = generate_batch(spec);
  expect_matches_reference(variant, batch, variant.default_config(batch, target));
}

}  // namespace
}  // namespace attn
