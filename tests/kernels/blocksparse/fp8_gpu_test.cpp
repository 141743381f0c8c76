// The blocksparse sm80 variants over fp8 e4m3 caches on the GPU: blocksparse.sm80_mma on random
// prefill batches and blocksparse.sm80_mma_decode on random decode batches (per-tensor and
// per-head scales at random, bf16 and fp16 queries, page sizes 1 to 64, NHD and HND, GQA ratios
// including non powers of two, every head dim each variant takes and V narrower than Q/K, random
// layouts and configs), every accepted config of each on fixed batches, and the Evaluator's path
// on the default configs. Every run writes into a poisoned output (0xFF: NaN in bf16 and fp16) and
// is compared with the oracle, which reads the same codes times the same scales: no NaN, every row
// within the tolerance of the output's dtype (blocksparse_gpu_check.hpp).
#include <gtest/gtest.h>

#include "tests/kernels/blocksparse/blocksparse_gpu_check.hpp"

namespace attn {
namespace {

using namespace blocksparse_testing;

const std::vector<std::pair<int, int>> kFp8PrefillDims = {
    {64, 64}, {80, 80}, {96, 96}, {128, 128}, {192, 192}, {192, 128}, {128, 64}};

TEST(BlockSparseFp8Gpu, RandomPrefillBatchesMatchTheReference) {
  ATTN_REQUIRE_GPU();
  const Registry registry = make_registry();
  expect_random_prefill_batches_match(*registry.find("blocksparse.sm80_mma"), 20261130,
                                      {32, 64, 128}, kFp8PrefillDims, true);
}

// Decode: random contexts (0 to 3000), GQA up to 16; blocksparse.sm80_mma_decode with a random
// accepted config, and now and then blocksparse.sm80_mma's default on the same batch.
TEST(BlockSparseFp8Gpu, RandomDecodeBatchesMatchTheReference) {
  ATTN_REQUIRE_GPU();
  const Registry registry = make_registry();
  const Variant& decode = *registry.find("blocksparse.sm80_mma_decode");
  const Variant& mma = *registry.find("blocksparse.sm80_mma");
  const Target target = Target::cuda(testing::gpu().device());
  const uint64_t seed = testing::test_seed_or(20261131);
  SCOPED_TRACE("ATTN_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  testing::CaseBudget budget = testing::CaseBudget::from_environment(8);
  while (budget.another()) {
    SCOPED_TRACE("case " + std::to_string(budget.draws()));
    const std::vector<std::pair<int64_t, int64_t>> sequences = random_decode_sequences(rng);
    const Batch batch = random_batch(rng, sequences, rng() % 4 != 0, 16, {16, 32, 64, 128},
                                     {{64, 64}, {80, 80}, {96, 96}, {128, 128}, {192, 192}}, true);
    ASSERT_EQ(batch.kv_dtype, DType::fp8_e4m3);
    expect_matches_reference(decode, batch,
                             testing::random_accepted_config(decode, batch, target, rng, 30));
    const KernelConfig mma_default = mma.default_config(batch, target);
    if (budget.draws() % 4 == 1 && mma.check(batch, mma_default, target)) {
      expect_matches_reference(mma, batch, mma_default);
    }
  }
  testing::print_case_summary(budget, seed);
}

// Every config blocksparse.sm80_mma accepts over an fp8 cache at head dims 64, 128, 96 (padded
// rows) and Q/K 192 with V 128 (V's own rows), each once on one of four batches in turn: causal
// with per-head scales (bf16 queries) and not causal with one per-tensor scale (fp16), over a
// Phi-3 layout of 64-token blocks and a random one of 32-token blocks; GQA 3, lengths off every
// tile, a chunk after a context.
TEST(BlockSparseFp8Gpu, EveryAcceptedPrefillConfigMatchesTheReference) {
  ATTN_REQUIRE_GPU();
  const Registry registry = make_registry();
  const Variant& variant = *registry.find("blocksparse.sm80_mma");
  const Target target = Target::cuda(testing::gpu().device());
  std::mt19937_64 rng(11);
  std::vector<std::pair<Batch, KernelConfig>> cases;
  for (const auto& [head_dim, v_head_dim] :
       std::vector<std::pair<int, int>>{{64, 64}, {128, 128}, {96, 96}, {192, 128}}) {
    std::vector<Batch> batches;
    for (const auto& [causal, block] :
         {std::pair{true, 64}, std::pair{false, 32}, std::pair{true, 32}, std::pair{false, 64}}) {
      testing::SpecShape shape;
      shape.q_heads = 6;
      shape.kv_heads = 2;
      shape.head_dim = head_dim;
      shape.dtype = causal ? DType::bf16 : DType::fp16;
      shape.page_size = block == 32 ? 5 : 16;
      shape.seed = uint64_t(head_dim) * 4 + causal * 2 + (block == 32);
      WorkloadSpec spec =
          testing::make_spec(shape, {{0, 300}, {45, 1}, {3, 129}, {70, 217}}, "bs-fp8-every");
      if (v_head_dim != head_dim) spec.model.v_head_dim = v_head_dim;
      spec.model.kv_dtype = DType::fp8_e4m3;
      spec.model.kv_scale = causal ? KvScaleGranularity::per_head : KvScaleGranularity::per_tensor;
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
  EXPECT_GT(cases.size(), 30u);
  for (const auto& [batch, config] : cases) expect_matches_reference(variant, batch, config);
}

// Every config blocksparse.sm80_mma_decode accepts over an fp8 cache at head dims 64, 96, 128 and
// 192, GQA 8, per-head scales with bf16 queries and a per-tensor scale with fp16 in turn.
TEST(BlockSparseFp8Gpu, EveryAcceptedDecodeConfigMatchesTheReference) {
  ATTN_REQUIRE_GPU();
  const Registry registry = make_registry();
  const Variant& variant = *registry.find("blocksparse.sm80_mma_decode");
  const Target target = Target::cuda(testing::gpu().device());
  for (int head_dim : {64, 96, 128, 192}) {
    const bool per_head = head_dim == 64 || head_dim == 128;
    testing::SpecShape shape;
    shape.q_heads = 16;
    shape.kv_heads = 2;  // GQA 8
    shape.head_dim = head_dim;
    shape.dtype = per_head ? DType::bf16 : DType::fp16;
    shape.page_size = per_head ? 1 : 16;
    shape.layout = per_head ? KvLayout::hnd : KvLayout::nhd;
    shape.seed = uint64_t(head_dim) + 1000;
    WorkloadSpec spec = testing::make_decode_spec(shape, {0, 63, 64, 700, 2049, 130});
    spec.model.kv_dtype = DType::fp8_e4m3;
    spec.model.kv_scale = per_head ? KvScaleGranularity::per_head : KvScaleGranularity::per_tensor;
    spec.mask.block_sparse = phi3_layout(128, 3, 4, 2);
    const Batch batch = generate_batch(spec);
    std::vector<std::pair<Batch, KernelConfig>> cases;
    for (auto& [b, config] : testing::rotated_config_cases(variant, {batch}, target, 1))
      cases.push_back({batch, config});
    compile_cases_in_parallel(variant, cases);
    for (const auto& [case_batch, config] : cases) {
      expect_matches_reference(variant, case_batch, config);
    }
    // 30, 27, 27 and 10 configs on an H200 (head dim 192: 16 keys per warp under the fp8 limit).
    EXPECT_GE(cases.size(), 10u) << head_dim;
  }
}

// The path `attn-bench run` takes (Evaluator: poison, verify against the oracle, time) on the
// Phi-3 block-sparse shape scaled down over an fp8 cache with per-head scales: prefill (mma) and
// decode (both variants), default configs; the reported bytes are the fp8 rows plus the scales.
TEST(BlockSparseFp8Gpu, EvaluatorVerifiesAndTimesTheDefaultConfigs) {
  ATTN_REQUIRE_GPU();
  auto& env = testing::gpu();
  const Registry registry = make_registry();
  const Evaluator::Options options = testing::test_evaluator_options(3);
  testing::SpecShape shape;
  shape.q_heads = 32;
  shape.kv_heads = 8;
  shape.head_dim = 128;
  WorkloadSpec prefill = testing::make_spec(shape, {{0, 2048}, {0, 2048}}, "bs-fp8-eval");
  prefill.mask.block_sparse = phi3_layout(64, 16, 8);
  WorkloadSpec decode = testing::make_decode_spec(shape, {4095, 1000, 333, 8191});
  decode.mask.block_sparse = phi3_layout(64, 16, 8);
  for (WorkloadSpec spec : {prefill, decode}) {
    spec.model.kv_dtype = DType::fp8_e4m3;
    spec.model.kv_scale = KvScaleGranularity::per_head;
    const Batch batch = generate_batch(spec);
    auto evaluator = Evaluator::on_cuda(batch, env.discovery.api, env.device(), *env.jit, options);
    int evaluated = 0;
    for (const char* name : {"blocksparse.sm80_mma", "blocksparse.sm80_mma_decode"}) {
      const Variant& variant = *registry.find(name);
      const KernelConfig config = variant.default_config(batch, evaluator->target());
      if (!variant.check(batch, config, evaluator->target())) continue;  // decode on prefill
      const Measurement m = evaluator->evaluate(variant, config);
      EXPECT_EQ(m.disposition, Disposition::passed)
          << name << " " << describe(batch, config) << ": " << m.reason;
      EXPECT_EQ(m.verification.nonfinite, 0);
      EXPECT_GT(m.flops, 0);
      EXPECT_DOUBLE_EQ(m.bytes, variant.work(batch).bytes) << name;
      ++evaluated;
    }
    EXPECT_GE(evaluated, 1);
  }
}

}  // namespace
}  // namespace attn
