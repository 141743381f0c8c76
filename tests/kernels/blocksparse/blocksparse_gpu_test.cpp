// The blocksparse family on the GPU: blocksparse.mma on random variable-length prefill batches
// (contexts that put the first new token anywhere in a block, lengths off every tile, GQA ratios
// including non powers of two, head dims 64/128, bf16 and fp16, causal and not) over random
// layouts (Phi-3 parameters with random block sizes, sliding steps and homo heads, and random
// lower-triangular layouts with empty rows and dropped diagonals), with random configs and every
// accepted config; blocksparse.decode likewise on decode batches. Every run writes into a
// poisoned output (0xFF: NaN in bf16 and fp16) and is compared with the CPU reference (which
// applies key_visible): no NaN, every row within the dtype's tolerance. Then the Evaluator path
// and a benchmark-sized prompt.
#include <gtest/gtest.h>

#include <future>

#include "tests/kernels/blocksparse/blocksparse_gpu_check.hpp"

namespace attn {
namespace {

using namespace blocksparse_testing;

TEST(BlockSparseMmaGpu, RandomBatchesLayoutsAndConfigsMatchTheReference) {
  ATTN_REQUIRE_GPU();
  const Registry registry = make_registry();
  const Variant& variant = *registry.find("blocksparse.mma");
  const Target target = Target::cuda(testing::gpu().device());
  std::mt19937_64 rng(20261207);
  for (int trial = 0; trial < 48; ++trial) {
    const bool causal = rng() % 4 != 0;
    const Batch batch = random_batch(rng, random_prefill_sequences(rng), causal, 20);
    expect_matches_reference(variant, batch, random_config(variant, batch, target, rng));
  }
}

// Every accepted config, for each head dim, causal and not, over a Phi-3 layout of 64-token
// blocks and a random one of 32-token blocks, on lengths that are multiples of no tile.
TEST(BlockSparseMmaGpu, EveryAcceptedConfigMatchesTheReference) {
  ATTN_REQUIRE_GPU();
  auto& env = testing::gpu();
  const Registry registry = make_registry();
  const Variant& variant = *registry.find("blocksparse.mma");
  const Target target = Target::cuda(env.device());
  std::mt19937_64 rng(5);
  std::vector<std::pair<Batch, KernelConfig>> cases;
  for (int head_dim : {64, 128}) {
    for (bool causal : {true, false}) {
      for (int block : {64, 32}) {
        testing::SpecShape shape;
        shape.q_heads = 6;
        shape.kv_heads = 2;  // GQA 3
        shape.head_dim = head_dim;
        shape.dtype = causal ? DType::bf16 : DType::fp16;
        shape.seed = uint64_t(head_dim) * 4 + causal * 2 + (block == 32);
        WorkloadSpec spec =
            testing::make_spec(shape, {{0, 300}, {45, 1}, {3, 129}, {70, 217}}, "bs-every");
        spec.mask.block_sparse = phi3_layout(block, 2, 3);
        Batch batch = generate_batch(spec);
        batch.causal = causal;
        if (block == 32) randomise_layout(batch, rng, 0.4);
        for (const KernelConfig& config : [&] {
               std::vector<KernelConfig> out;
               const auto space = variant.space(batch, target);
               for (int64_t m : space[0].values)
                 for (int64_t n : space[1].values)
                   for (int64_t w : space[2].values)
                     for (int64_t s : space[3].values)
                       out.push_back(
                           KernelConfig{{"tile_m", m}, {"tile_n", n}, {"warps", w}, {"stages", s}});
               return out;
             }()) {
          if (variant.check(batch, config, target)) cases.push_back({batch, config});
        }
      }
    }
  }
  std::vector<std::future<CompiledProgram>> compiles;
  for (const auto& [batch, config] : cases) {
    compiles.push_back(env.jit->compile_async(variant.programs(batch, config, target).front()));
  }
  for (auto& compiled : compiles) {
    try {
      compiled.get();
    } catch (const CompileError& error) {
      ADD_FAILURE() << error.what() << "\n" << error.log();
    }
  }
  EXPECT_GT(cases.size(), 30u);
  for (const auto& [batch, config] : cases) expect_matches_reference(variant, batch, config);
}

// Decode: random contexts (0 to 3000, so the query's block row is anywhere), GQA up to 16,
// random layouts and configs; both variants (mma runs a decode batch too, one row per tile).
TEST(BlockSparseDecodeGpu, RandomBatchesLayoutsAndConfigsMatchTheReference) {
  ATTN_REQUIRE_GPU();
  const Registry registry = make_registry();
  const Variant& decode = *registry.find("blocksparse.decode");
  const Variant& mma = *registry.find("blocksparse.mma");
  const Target target = Target::cuda(testing::gpu().device());
  std::mt19937_64 rng(20261209);
  for (int trial = 0; trial < 48; ++trial) {
    std::vector<std::pair<int64_t, int64_t>> sequences;
    const int seqs = std::uniform_int_distribution<int>(1, 8)(rng);
    for (int s = 0; s < seqs; ++s) {
      sequences.push_back({rng() % 4 == 0 ? int64_t(rng() % 70) : int64_t(rng() % 3000), 1});
    }
    const Batch batch = random_batch(rng, sequences, rng() % 4 != 0, 16);
    expect_matches_reference(decode, batch, random_config(decode, batch, target, rng));
    if (trial % 4 == 0) expect_matches_reference(mma, batch, mma.default_config(batch, target));
  }
}

TEST(BlockSparseDecodeGpu, EveryAcceptedConfigMatchesTheReference) {
  ATTN_REQUIRE_GPU();
  const Registry registry = make_registry();
  const Variant& variant = *registry.find("blocksparse.decode");
  const Target target = Target::cuda(testing::gpu().device());
  for (int head_dim : {64, 128}) {
    testing::SpecShape shape;
    shape.q_heads = 16;
    shape.kv_heads = 2;  // GQA 8
    shape.head_dim = head_dim;
    shape.dtype = head_dim == 64 ? DType::fp16 : DType::bf16;
    shape.seed = uint64_t(head_dim);
    WorkloadSpec spec = testing::make_decode_spec(shape, {0, 63, 64, 700, 2049, 130});
    spec.mask.block_sparse = phi3_layout(128, 3, 4, 2);
    const Batch batch = generate_batch(spec);
    const auto space = variant.space(batch, target);
    int ran = 0;
    for (int64_t n : space[0].values) {
      for (int64_t w : space[1].values) {
        for (int64_t s : space[2].values) {
          const KernelConfig config{{"tile_n", n}, {"warps", w}, {"stages", s}};
          if (!variant.check(batch, config, target)) continue;
          expect_matches_reference(variant, batch, config);
          ++ran;
        }
      }
    }
    EXPECT_GT(ran, 10);
  }
}

// The path `attn-bench run` takes (Evaluator: poison, verify against the CPU reference, time) on
// the benchmark's shape scaled down: 32 q heads, 8 kv heads, head dim 128, bf16, blocks of 64,
// local 16, vertical stride 8; prefill (mma) and decode (both variants), default configs.
TEST(BlockSparseGpu, EvaluatorVerifiesAndTimesTheDefaultConfigs) {
  ATTN_REQUIRE_GPU();
  auto& env = testing::gpu();
  const Registry registry = make_registry();
  Evaluator::Options options;
  options.policy = screen_policy();
  options.policy.min_samples = options.policy.max_samples = 3;
  options.policy.warmup_min = 0;
  options.policy.warmup_max_seconds = 0;
  options.policy.timer = TimerMode::events;
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
    for (const char* name : {"blocksparse.mma", "blocksparse.decode"}) {
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
  const Variant& variant = *registry.find("blocksparse.mma");
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
