// The naive GPU reference against the CPU reference on small batches with every feature and on
// random latent batches (within 1e-4 relative per output row, and in LSE), and the Evaluator's
// choice of oracle: the GPU one (the tiled GPU reference, gpu_tiled_reference_gpu_test.cpp; the
// naive one for latent batches) for a large problem in `auto` mode, where it verifies a real
// variant in seconds.
#include "kernels/reference/gpu_reference.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <random>

#include "kernels/reference/gpu_tiled_reference.hpp"
#include "kernels/reference/paged_attention_reference.hpp"
#include "kernels/registry.hpp"
#include "measure/evaluator.hpp"
#include "measure/reference_oracle.hpp"
#include "tests/gpu_test_support.hpp"
#include "tests/kernels/mla_decode/latent_batch.hpp"
#include "tests/kernels/reference/reference_comparison.hpp"
#include "tests/kernels/reference/reference_feature_batches.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

constexpr double kRelativeTolerance = 1e-4;

struct Oracles {
  testing::OracleRows cpu{"cpu_reference"}, gpu{kGpuReferenceName};
};

Oracles run_both(const Batch& batch) {
  auto& env = testing::gpu();
  Oracles o;
  const Problem host = Problem::on_host(batch);
  o.cpu.out = paged_attention_reference(host, 0, &o.cpu.lse);
  const Problem device = Problem::on_device(host, *env.context);
  Stream stream(*env.context);
  KernelLoader loader(*env.context, *env.jit);
  o.gpu.out = gpu_paged_attention_reference(device, *env.context, loader, stream, &o.gpu.lse);
  return o;
}

// Rows (one query token and head) whose relative L2 error is above the tolerance; a row the CPU
// reference leaves at exactly zero (it sees no key) must be exactly zero too.
int64_t bad_rows(const Batch& batch, const Oracles& o, const std::string& what, int report = 3) {
  return testing::rows_apart(batch, o.gpu, o.cpu, kRelativeTolerance, what, report);
}

TEST(GpuReference, MatchesTheCpuReferenceOnEveryFeatureBatch) {
  ATTN_REQUIRE_GPU();
  for (uint64_t seed : {1u, 2u}) {
    for (const testing::FeatureBatch& b : testing::reference_feature_batches(seed)) {
      const std::string what = b.what + " seed " + std::to_string(seed);
      const Oracles o = run_both(b.batch);
      EXPECT_EQ(bad_rows(b.batch, o, what), 0) << what;
    }
  }
}

// Head dims 64..256 (lanes holding 2 to 8 dims, and 80/96/192 with idle lanes), both dtypes,
// decode and prefill on random lengths.
TEST(GpuReference, MatchesTheCpuReferenceOnRandomShapes) {
  ATTN_REQUIRE_GPU();
  std::mt19937_64 rng(77);
  auto pick = [&](std::initializer_list<int64_t> values) {
    return *(values.begin() + std::uniform_int_distribution<size_t>(0, values.size() - 1)(rng));
  };
  for (int trial = 0; trial < 12; ++trial) {
    testing::SpecShape shape;
    shape.kv_heads = int(pick({1, 2, 4}));
    shape.q_heads = shape.kv_heads * int(pick({1, 3, 8}));
    shape.head_dim = int(pick({64, 80, 96, 128, 192, 256}));
    shape.dtype = pick({0, 1}) == 0 ? DType::bf16 : DType::fp16;
    shape.page_size = int(pick({1, 16, 32}));
    shape.layout = pick({0, 1}) == 0 ? KvLayout::nhd : KvLayout::hnd;
    shape.seed = rng();
    std::vector<std::pair<int64_t, int64_t>> seqs;
    for (int n = int(pick({1, 3})); n > 0; --n) {
      seqs.push_back({pick({0, 31, 200, 513}), pick({1, 1, 17, 130})});
    }
    WorkloadSpec spec = testing::make_spec(shape, seqs);
    spec.mask.causal = pick({0, 1}) == 1;
    const Batch batch = generate_batch(spec);
    const std::string what = "trial " + std::to_string(trial) + " " + canonical_json(spec);
    const Oracles o = run_both(batch);
    EXPECT_EQ(bad_rows(batch, o, what), 0) << what;
  }
}

// Multi-head latent attention: q heads 1 to 128, latent widths (rank 64 to 1024, rope 16 to 128),
// page sizes 1 to 256, lengths 0, 1 and thousands, 1 to 4 query tokens, causal or not, bf16 or
// fp16 Q, a latent cache of Q's dtype or fp8 e4m3 (one scale). The output starts as NaN
// (poison_outputs): an element the kernel misses fails its row.
TEST(GpuReference, MatchesTheCpuReferenceOnRandomLatentBatches) {
  ATTN_REQUIRE_GPU();
  std::mt19937_64 rng(2026);
  auto pick = [&](std::initializer_list<int64_t> values) {
    return *(values.begin() + std::uniform_int_distribution<size_t>(0, values.size() - 1)(rng));
  };
  for (int trial = 0; trial < 16; ++trial) {
    testing::LatentShape shape;
    shape.q_heads = int(pick({1, 2, 8, 16, 22, 64, 128}));
    const int64_t widths = pick({0, 0, 1, 2});
    shape.kv_lora_rank = widths == 0 ? 512 : (widths == 1 ? 64 : 1024);
    shape.qk_rope_head_dim = widths == 0 ? 64 : (widths == 1 ? 16 : 128);
    shape.page_size = int(pick({1, 16, 64, 100, 256}));
    shape.kv_dtype = pick({0, 1}) == 0 ? "" : "fp8_e4m3";
    shape.causal = pick({0, 1, 1}) == 1;
    shape.allocation = pick({0, 1}) == 0 ? "shuffled" : "fragmented";
    const int64_t max_query = pick({1, 2, 4});
    shape.sequences.clear();
    // CPU reference work under about 1e9 (q head, query, key) x width triples.
    const double width = shape.kv_lora_rank + shape.qk_rope_head_dim;
    const int64_t long_keys = std::min<int64_t>(4000, int64_t(3e8 / (width * shape.q_heads)));
    for (int64_t n = pick({1, 2, 3}); n > 0; --n) {
      shape.sequences.push_back({pick({0, 1, 2, 63, long_keys}), pick({1, max_query})});
    }
    nlohmann::json spec = testing::latent_workload_json(shape);
    spec["model"]["dtype"] = pick({0, 1}) == 0 ? "bf16" : "fp16";
    spec["seed"] = int(rng() % 100000);
    const Batch batch = generate_batch(parse_workload(spec.dump(), "latent"));
    const std::string what = "latent trial " + std::to_string(trial) + " " + spec.dump();
    const Oracles o = run_both(batch);
    for (float v : o.gpu.out) ASSERT_FALSE(std::isnan(v)) << what;
    EXPECT_EQ(bad_rows(batch, o, what), 0) << what;
  }
}

// The comparison has teeth: a 1% change of the softmax scale moves nearly every row past 1e-4.
TEST(GpuReference, DisagreesWhenTheSemanticsDiffer) {
  ATTN_REQUIRE_GPU();
  testing::SpecShape shape;
  const Batch batch = generate_batch(testing::make_spec(shape, {{40, 20}, {0, 33}}));
  Batch scaled = batch;
  scaled.softmax_scale *= 1.01f;
  auto& env = testing::gpu();
  Oracles o;
  o.cpu.out = paged_attention_reference(Problem::on_host(batch), 0, &o.cpu.lse);
  const Problem device = Problem::on_device(Problem::on_host(scaled), *env.context);
  Stream stream(*env.context);
  KernelLoader loader(*env.context, *env.jit);
  o.gpu.out = gpu_paged_attention_reference(device, *env.context, loader, stream, &o.gpu.lse);
  const int64_t rows = batch.total_q * batch.spec.model.num_q_heads;
  EXPECT_GT(bad_rows(batch, o, "scaled", 0), rows * 9 / 10);
}

// A problem generated on the device holds the bytes of the host fill: the oracle reads both alike.
TEST(GpuReference, DeviceGeneratedProblemGivesTheSameBits) {
  ATTN_REQUIRE_GPU();
  auto& env = testing::gpu();
  testing::SpecShape shape;
  shape.layout = KvLayout::vllm;
  WorkloadSpec spec = testing::make_spec(shape, {{100, 9}, {3, 1}});
  spec.model.kv_dtype = DType::fp8_e4m3;
  spec.model.kv_scale = KvScaleGranularity::per_head;
  const Batch batch = generate_batch(spec);
  Stream stream(*env.context);
  KernelLoader loader(*env.context, *env.jit);
  const Problem uploaded = Problem::on_device(Problem::on_host(batch), *env.context);
  const Problem generated = Problem::generated_on_device(batch, *env.context, loader, stream);
  EXPECT_EQ(gpu_paged_attention_reference(uploaded, *env.context, loader, stream),
            gpu_paged_attention_reference(generated, *env.context, loader, stream));
}

// The Evaluator's own threshold of `auto` (kDefaultGpuReferenceMinWork), not the tests' lower one.
Evaluator::Options quick_options(ReferenceOracle reference) {
  Evaluator::Options options = testing::test_evaluator_options(3);
  options.gpu_reference_min_work = kDefaultGpuReferenceMinWork;
  options.reference = reference;
  return options;
}

// `auto` on a 2 x 4096-token causal prefill (32 q heads, 8 kv heads, head dim 128: work 6.9e10,
// twenty times the default threshold; the CPU reference would need about 40 s of 16 cores): the
// tiled GPU oracle verifies flash_fwd.sm80_mma, and the whole evaluation takes seconds.
TEST(GpuReferenceEvaluator, AutoVerifiesALargePrefillWithTheGpuOracle) {
  ATTN_REQUIRE_GPU();
  auto& env = testing::gpu();
  testing::SpecShape shape;
  shape.q_heads = 32;
  shape.kv_heads = 8;
  shape.head_dim = 128;
  WorkloadSpec spec = testing::make_spec(shape, {{0, 4096}, {0, 4096}}, "large-causal-prefill");
  const Batch batch = generate_batch(spec);
  ASSERT_GE(reference_work(batch), kDefaultGpuReferenceMinWork);

  const auto start = std::chrono::steady_clock::now();
  auto evaluator = Evaluator::on_cuda(batch, env.discovery.api, env.device(), *env.jit,
                                      quick_options(ReferenceOracle::automatic));
  EXPECT_EQ(evaluator->reference_name(), kGpuTiledReferenceName);
  EXPECT_NE(evaluator->reference_choice().find("auto: "), std::string::npos);
  const Registry registry = make_registry();
  const Variant& variant = *registry.find("flash_fwd.sm80_mma");
  const Measurement m =
      evaluator->evaluate(variant, variant.default_config(batch, evaluator->target()));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(m.disposition, Disposition::passed) << m.reason;
  EXPECT_TRUE(m.verification.checked);
  EXPECT_EQ(m.verification.reference, kGpuTiledReferenceName);
  EXPECT_EQ(m.verification.nonfinite, 0);
  EXPECT_LT(seconds, 60.0) << "the GPU oracle should take seconds, not minutes";
  std::cout << "[ info ] 2 x 4096 causal prefill verified against " << m.verification.reference
            << " (rel_l2 " << m.verification.rel_l2_error << ") in " << seconds
            << " s, compile and host fill included\n";
}

// `auto` on DeepSeek-V3's 128 heads over 16 sequences of 4096 keys (work 4.6e9, above the
// default threshold; the CPU reference would take about 15 s): the naive GPU oracle verifies
// mla_decode.sm80_mma on a 16-bit and on an fp8 latent cache.
TEST(GpuReferenceEvaluator, AutoVerifiesALargeLatentBatchWithTheNaiveGpuOracle) {
  ATTN_REQUIRE_GPU();
  auto& env = testing::gpu();
  const Registry registry = make_registry();
  const Variant& variant = *registry.find("mla_decode.sm80_mma");
  for (const std::string kv_dtype : {"", "fp8_e4m3"}) {
    testing::LatentShape shape;
    shape.q_heads = 128;
    shape.kv_lora_rank = 512;
    shape.qk_rope_head_dim = 64;
    shape.page_size = 64;
    shape.kv_dtype = kv_dtype;
    shape.sequences.assign(16, {4095, 1});
    const Batch batch = testing::latent_batch(shape);
    ASSERT_GE(reference_work(batch), kDefaultGpuReferenceMinWork);
    const auto start = std::chrono::steady_clock::now();
    auto evaluator = Evaluator::on_cuda(batch, env.discovery.api, env.device(), *env.jit,
                                        quick_options(ReferenceOracle::automatic));
    EXPECT_EQ(evaluator->reference_name(), kGpuReferenceName);
    const Measurement m =
        evaluator->evaluate(variant, variant.default_config(batch, evaluator->target()));
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(m.disposition, Disposition::passed) << kv_dtype << ": " << m.reason;
    EXPECT_EQ(m.verification.reference, kGpuReferenceName);
    EXPECT_LT(seconds, 60.0);
    std::cout << "[ info ] 128-head latent decode (" << (kv_dtype.empty() ? "bf16" : kv_dtype)
              << " cache) verified against " << m.verification.reference << " (rel_l2 "
              << m.verification.rel_l2_error << ") in " << seconds << " s\n";
  }
}

// Below the threshold `auto` keeps the CPU reference; `gpu` forces the GPU one, and both pass
// the same variant on the same batch.
TEST(GpuReferenceEvaluator, AutoKeepsTheCpuOracleForSmallProblemsAndGpuForcesIt) {
  ATTN_REQUIRE_GPU();
  auto& env = testing::gpu();
  testing::SpecShape shape;
  const Batch batch = generate_batch(testing::make_decode_spec(shape, {0, 5, 40, 129, 1000}));
  const Registry registry = make_registry();
  const Variant& variant = *registry.find("paged_decode.sm80_simt");
  for (ReferenceOracle oracle :
       {ReferenceOracle::automatic, ReferenceOracle::cpu, ReferenceOracle::gpu}) {
    auto evaluator =
        Evaluator::on_cuda(batch, env.discovery.api, env.device(), *env.jit, quick_options(oracle));
    const Measurement m =
        evaluator->evaluate(variant, variant.default_config(batch, evaluator->target()));
    EXPECT_EQ(m.disposition, Disposition::passed) << to_string(oracle) << ": " << m.reason;
    EXPECT_EQ(m.verification.reference,
              oracle == ReferenceOracle::gpu ? kGpuTiledReferenceName : "cpu_reference")
        << to_string(oracle);
  }
}

}  // namespace
}  // namespace attn
