// paged_decode.sm80_simt on the GPU: random batches, configs and data, each verified against the
// oracle (the CPU reference, or the tiled GPU reference for a large batch) on a poisoned output
// (the Evaluator does both before it times anything).
#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <sstream>

#include "kernels/registry.hpp"
#include "measure/evaluator.hpp"
#include "tests/gpu_case_budget.hpp"
#include "tests/gpu_test_support.hpp"
#include "tests/kernels/paged_decode/random_decode_batch.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

using testing::pick;

Measurement evaluate_once(const Batch& batch, const KernelConfig& config) {
  auto& env = testing::gpu();
  auto evaluator = Evaluator::on_cuda(batch, env.discovery.api, env.device(), *env.jit,
                                      testing::test_evaluator_options());
  const Registry registry = make_registry();
  return evaluator->evaluate(*registry.find("paged_decode.sm80_simt"), config);
}

std::string describe(const WorkloadSpec& spec, const KernelConfig& config) {
  std::ostringstream out;
  out << "q" << spec.model.num_q_heads << "/kv" << spec.model.num_kv_heads << " d"
      << spec.model.head_dim << " " << to_string(spec.model.dtype) << " page "
      << spec.kv_cache.page_size << " " << to_string(spec.kv_cache.layout) << " "
      << to_string(spec.kv_cache.allocation) << " seed " << spec.seed << " contexts [";
  for (const auto& s : spec.sequences) out << s.context_len.value << " ";
  out << "]";
  if (spec.model.kv_dtype)
    out << " kv " << to_string(*spec.model.kv_dtype) << " " << to_string(spec.model.kv_scale);
  if (spec.model.logits_soft_cap) out << " softcap " << *spec.model.logits_soft_cap;
  if (spec.model.sliding_window) out << " window " << *spec.model.sliding_window;
  if (spec.model.attention_sinks) out << " sinks";
  if (!spec.mask.causal) out << " non-causal";
  out << " config " << config.key();
  return out.str();
}

// Random shapes (GQA 1..16 including non powers of two, head dims 64/80/96/128/192/256, page sizes
// 1..256
// including odd ones, both layouts and dtypes), uneven lengths with edge cases (0 and 1 keys
// included), each batch feature switched on at random (fp8 KV with per-tensor or per-head scales,
// soft-cap, sliding window, sinks, non-causal), fresh data per run (the seed varies with the time
// unless ATTN_TEST_SEED is set), and a random valid config from the variant's space; as many
// cases as the case budget allows (tests/gpu_case_budget.hpp).
TEST(Sm80SimtGpu, RandomBatchesConfigsAndDataMatchTheReference) {
  ATTN_REQUIRE_GPU();
  const Registry registry = make_registry();
  const Variant& sm80_simt = *registry.find("paged_decode.sm80_simt");
  const Target target = Target::cuda(testing::gpu().device());
  const uint64_t seed = testing::test_seed_or_clock();
  std::mt19937_64 rng(seed);
  SCOPED_TRACE("ATTN_TEST_SEED=" + std::to_string(seed));
  testing::CaseBudget budget = testing::CaseBudget::from_environment(12);
  while (budget.another()) {
    SCOPED_TRACE("case " + std::to_string(budget.draws()));
    const testing::SpecShape shape = testing::random_decode_shape(
        rng, std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8, 12, 16}, testing::every_decode_head_dim());
    const std::vector<int64_t> contexts = testing::random_decode_contexts(rng);
    WorkloadSpec spec = testing::make_decode_spec(shape, contexts);
    std::bernoulli_distribution coin(0.3);
    if (coin(rng)) {
      spec.model.kv_dtype = DType::fp8_e4m3;
      spec.model.kv_scale =
          coin(rng) ? KvScaleGranularity::per_head : KvScaleGranularity::per_tensor;
    }
    if (coin(rng)) spec.model.logits_soft_cap = pick(rng, std::vector<double>{5.0, 30.0, 50.0});
    if (coin(rng)) spec.model.sliding_window = pick(rng, std::vector<int64_t>{1, 7, 16, 100, 1000});
    if (coin(rng)) spec.model.attention_sinks = true;
    if (coin(rng)) spec.mask.causal = false;
    const Batch batch = generate_batch(spec);

    // A random config the traits accept (the default when the draw is invalid).
    const KernelConfig config = testing::random_accepted_config(sm80_simt, batch, target, rng);
    const Measurement m = evaluate_once(batch, config);
    EXPECT_EQ(m.disposition, Disposition::passed)
        << describe(batch.spec, config) << ": " << m.reason;
  }
  EXPECT_GE(budget.checked(), 12);
  testing::print_case_summary(budget, seed);
}

// Every feature on its own and all together, on the Llama-3 shape with uneven lengths, with the
// default config and a fixed split count.
TEST(Sm80SimtGpu, EachFeatureMatchesTheReference) {
  ATTN_REQUIRE_GPU();
  const Registry registry = make_registry();
  const Variant& sm80_simt = *registry.find("paged_decode.sm80_simt");
  const Target target = Target::cuda(testing::gpu().device());
  testing::SpecShape shape;
  shape.q_heads = 32;
  shape.kv_heads = 8;
  shape.head_dim = 128;
  shape.seed = testing::test_seed_or_clock();
  SCOPED_TRACE("ATTN_TEST_SEED=" + std::to_string(shape.seed));
  const std::vector<int64_t> contexts = {0, 1, 2, 33, 517, 4096, 9000};
  struct Case {
    std::string name;
    std::function<void(WorkloadSpec&)> apply;
  };
  const std::vector<Case> cases = {
      {"plain", [](WorkloadSpec&) {}},
      {"fp8 per tensor", [](WorkloadSpec& s) { s.model.kv_dtype = DType::fp8_e4m3; }},
      {"fp8 per head",
       [](WorkloadSpec& s) {
         s.model.kv_dtype = DType::fp8_e4m3;
         s.model.kv_scale = KvScaleGranularity::per_head;
       }},
      {"soft-cap", [](WorkloadSpec& s) { s.model.logits_soft_cap = 30.0; }},
      {"sliding window", [](WorkloadSpec& s) { s.model.sliding_window = 300; }},
      {"sinks", [](WorkloadSpec& s) { s.model.attention_sinks = true; }},
      {"non-causal", [](WorkloadSpec& s) { s.mask.causal = false; }},
      {"fp16 hnd",
       [](WorkloadSpec& s) {
         s.model.dtype = DType::fp16;
         s.kv_cache.layout = KvLayout::hnd;
       }},
      {"all",
       [](WorkloadSpec& s) {
         s.model.kv_dtype = DType::fp8_e4m3;
         s.model.kv_scale = KvScaleGranularity::per_head;
         s.model.logits_soft_cap = 50.0;
         s.model.sliding_window = 1000;
         s.model.attention_sinks = true;
         s.kv_cache.page_size = 1;
       }},
  };
  for (const Case& c : cases) {
    WorkloadSpec spec = testing::make_decode_spec(shape, contexts);
    c.apply(spec);
    const Batch batch = generate_batch(spec);
    KernelConfig config = sm80_simt.default_config(batch, target);
    for (int splits : {0, 1, 5}) {
      config.set("num_splits", splits);
      ASSERT_TRUE(sm80_simt.check(batch, config, target)) << c.name;
      const Measurement m = evaluate_once(batch, config);
      EXPECT_EQ(m.disposition, Disposition::passed)
          << c.name << " splits " << splits << " " << describe(batch.spec, config) << ": "
          << m.reason;
    }
  }
}

// Head dims 80, 96 and 192 (rows read by 10, 12 and 24 lanes of groups of 16, 16 and 32) in every
// KV dtype (bf16, fp16, fp8 with per-tensor and per-head scales), both layouts and page sizes 1,
// 16 and 12, with GQA 4 in head chunks of 2 and 4: the default config and a fixed split count
// (the merge kernel at these widths). Small batches, so the CPU reference is the oracle.
TEST(Sm80SimtGpu, HeadDims80_96And192InEveryKvDtypeLayoutAndPageMatchTheReference) {
  ATTN_REQUIRE_GPU();
  const Registry registry = make_registry();
  const Variant& sm80_simt = *registry.find("paged_decode.sm80_simt");
  const Target target = Target::cuda(testing::gpu().device());
  int runs = 0;
  for (const testing::OtherHeadDimCase& c : testing::other_head_dim_cases(8, 2)) {
    WorkloadSpec spec = testing::make_decode_spec(c.shape, {0, 17, 300});
    if (c.fp8 > 0) {
      spec.model.kv_dtype = DType::fp8_e4m3;
      spec.model.kv_scale =
          c.fp8 == 2 ? KvScaleGranularity::per_head : KvScaleGranularity::per_tensor;
    }
    if (c.shape.page_size == 12) spec.model.attention_sinks = true;
    const Batch batch = generate_batch(spec);
    KernelConfig fixed = sm80_simt.default_config(batch, target);
    fixed.set("heads_per_cta", 2);
    fixed.set("num_splits", 3);
    for (const KernelConfig& config : {sm80_simt.default_config(batch, target), fixed}) {
      ASSERT_TRUE(sm80_simt.check(batch, config, target))
          << describe(batch.spec, config) << ": " << sm80_simt.check(batch, config, target).reason;
      const Measurement m = evaluate_once(batch, config);
      EXPECT_EQ(m.disposition, Disposition::passed)
          << describe(batch.spec, config) << ": " << m.reason;
      EXPECT_EQ(m.verification.nonfinite, 0) << describe(batch.spec, config);
      EXPECT_EQ(m.verification.reference, "cpu_reference") << describe(batch.spec, config);
      ++runs;
    }
  }
  EXPECT_EQ(runs, 3 * 4 * 2 * 3 * 2);
}

// One long sequence: the auto split count cuts it across the GPU.
TEST(Sm80SimtGpu, OneLongSequenceMatchesTheReference) {
  ATTN_REQUIRE_GPU();
  testing::SpecShape shape;
  shape.q_heads = 32;
  shape.kv_heads = 8;
  shape.head_dim = 128;
  const Batch batch = generate_batch(testing::make_decode_spec(shape, {32768}));
  const Registry registry = make_registry();
  const Variant& sm80_simt = *registry.find("paged_decode.sm80_simt");
  const Measurement m =
      evaluate_once(batch, sm80_simt.default_config(batch, Target::cuda(testing::gpu().device())));
  EXPECT_EQ(m.disposition, Disposition::passed) << m.reason;
}

// Every fixed split count, including more splits than tiles, on very uneven lengths.
TEST(Sm80SimtGpu, EverySplitCountMatchesTheReference) {
  ATTN_REQUIRE_GPU();
  testing::SpecShape shape;
  shape.q_heads = 12;
  shape.kv_heads = 2;  // GQA 6: two head chunks of 4, the second half empty
  shape.head_dim = 128;
  const Batch batch = generate_batch(testing::make_decode_spec(shape, {0, 3, 700, 5000}));
  for (int splits : {1, 2, 3, 7, 16, 64}) {
    KernelConfig config{{"tile_tokens", 64},
                        {"stages", 3},
                        {"warps", 4},
                        {"heads_per_cta", 4},
                        {"num_splits", splits}};
    const Measurement m = evaluate_once(batch, config);
    EXPECT_EQ(m.disposition, Disposition::passed) << "num_splits " << splits << ": " << m.reason;
  }
}

// The acceptance shape: Llama-3-8B heads, 64 sequences of 4096 tokens, bf16, page 16.
TEST(Sm80SimtGpu, LargeDecodeBatchMatchesTheReference) {
  ATTN_REQUIRE_GPU();
  testing::SpecShape shape;
  shape.q_heads = 32;
  shape.kv_heads = 8;
  shape.head_dim = 128;
  std::vector<int64_t> contexts(64, 4096);
  const Batch batch = generate_batch(testing::make_decode_spec(shape, contexts));
  const Registry registry = make_registry();
  const Variant& sm80_simt = *registry.find("paged_decode.sm80_simt");
  const Measurement m =
      evaluate_once(batch, sm80_simt.default_config(batch, Target::cuda(testing::gpu().device())));
  EXPECT_EQ(m.disposition, Disposition::passed) << m.reason;
  EXPECT_EQ(m.verification.nonfinite, 0);
}

}  // namespace
}  // namespace attn
