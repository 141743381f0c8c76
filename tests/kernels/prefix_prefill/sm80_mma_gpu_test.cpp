// prefix_prefill.sm80_mma and prefix_prefill.sm80_mma_masked on the GPU: random batches, configs,
// features and fresh data, each verified against the oracle (the CPU reference, or the tiled GPU
// reference for a large batch) on a poisoned output (the Evaluator NaN-fills the output, runs once,
// and checks every row within the dtype's tolerance before it times anything). The random draws
// change with the time unless ATTN_TEST_SEED is set; a failure prints the seed. The random tests
// check as many cases as the case budget allows (tests/gpu_case_budget.hpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>
#include <sstream>

#include "kernels/registry.hpp"
#include "measure/evaluator.hpp"
#include "measure/reference_oracle.hpp"
#include "tests/gpu_case_budget.hpp"
#include "tests/gpu_test_support.hpp"
#include "tests/kernels/random_draws.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

using testing::pick;

bool chance(std::mt19937_64& rng, double p) {
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng) < p;
}

uint64_t test_seed() {
  return testing::test_seed_or_clock();
}

Measurement evaluate_once(const Batch& batch, const Variant& variant, const KernelConfig& config) {
  auto& env = testing::gpu();
  auto evaluator = Evaluator::on_cuda(batch, env.discovery.api, env.device(), *env.jit,
                                      testing::test_evaluator_options());
  return evaluator->evaluate(variant, config);
}

std::string describe(const Batch& batch, const KernelConfig& config) {
  const WorkloadSpec& spec = batch.spec;
  std::ostringstream out;
  out << "q" << spec.model.num_q_heads << "/kv" << spec.model.num_kv_heads << " d"
      << spec.model.head_dim;
  if (spec.model.v_head_dim) out << " v" << *spec.model.v_head_dim;
  out << " " << to_string(spec.model.dtype);
  if (spec.model.kv_dtype) {
    out << " kv " << to_string(*spec.model.kv_dtype) << " " << to_string(spec.model.kv_scale);
  }
  out << " page " << spec.kv_cache.page_size << " " << to_string(spec.kv_cache.layout) << " "
      << to_string(spec.kv_cache.allocation) << " seed " << spec.seed;
  if (batch.logits_soft_cap > 0) out << " soft-cap " << batch.logits_soft_cap;
  if (batch.sliding_window > 0) out << " window " << batch.sliding_window;
  if (!batch.sink_logits.empty()) out << " sinks";
  if (!batch.causal) out << " non-causal";
  if (spec.mask.explicit_mask) out << " explicit " << to_string(spec.mask.explicit_mask->kind);
  out << " (context, query) [";
  for (int s = 0; s < batch.num_seqs; ++s)
    out << "(" << batch.context_lens[size_t(s)] << "," << batch.query_lens[size_t(s)] << ") ";
  out << "] config " << config.key();
  return out.str();
}

void expect_passed(const Batch& batch, const Variant& variant, const KernelConfig& config) {
  const Support support = variant.check(batch, config, Target::cuda(testing::gpu().device()));
  ASSERT_TRUE(support.ok) << describe(batch, config) << ": " << support.reason;
  const Measurement m = evaluate_once(batch, variant, config);
  EXPECT_EQ(m.disposition, Disposition::passed) << describe(batch, config) << ": " << m.reason;
  EXPECT_EQ(m.verification.nonfinite, 0) << describe(batch, config);
}

// Compiles the programs of (batch, config) cases in parallel (testing::compile_in_parallel), so
// that the checks after it find them in the JIT cache.
void compile_first(const Variant& variant,
                   const std::vector<std::pair<const Batch*, KernelConfig>>& cases) {
  const Target target = Target::cuda(testing::gpu().device());
  std::vector<JitProgram> programs;
  for (const auto& [batch, config] : cases) {
    if (variant.check(*batch, config, target))
      programs.push_back(variant.programs(*batch, config, target).front());
  }
  testing::compile_in_parallel(programs);
}

// A random config of the variant's space that it accepts for this batch (the default when 40
// draws are all refused).
KernelConfig random_config(std::mt19937_64& rng, const Variant& variant, const Batch& batch) {
  return testing::random_accepted_config(variant, batch, Target::cuda(testing::gpu().device()), rng,
                                         40);
}

// (Q/K head dim, V head dim): every head dim of the schema with V as wide, and narrower Vs
// (DeepSeek's prefill 192/128, a halved 128/64, 96/64).
const std::vector<std::pair<int, int>> kHeadDimPairs = {{64, 64},   {80, 80},   {96, 96},
                                                        {128, 128}, {192, 192}, {256, 256},
                                                        {192, 128}, {128, 64},  {96, 64}};

// Head dims the kernel was first written for (64, 128, 256, V as wide): the others are checked on
// batches made small enough for the CPU reference where their lengths allow (an explicit mask ties
// the query lengths); past kGpuOracleMinWork the tiled GPU reference verifies them, which its own
// tests check against the CPU reference at these head dims and V widths.
bool power_of_two_dims(const WorkloadSpec& spec) {
  const int d = spec.model.head_dim;
  return (d == 64 || d == 128 || d == 256) && !spec.model.v_head_dim;
}

void set_v_head_dim(WorkloadSpec& spec, int v_head_dim) {
  if (v_head_dim != spec.model.head_dim) spec.model.v_head_dim = v_head_dim;
}

// The batch of `spec`; at head dims other than 64/128/256 or with a narrower V, its fixed lengths
// halved (the contexts only when an explicit mask's shape ties the queries) until the CPU
// reference is the oracle, or 16 times.
Batch batch_for_cpu_oracle(WorkloadSpec spec) {
  Batch batch = generate_batch(spec);
  for (int halving = 0; halving < 16 && !power_of_two_dims(spec) &&
                        reference_work(batch) >= testing::kGpuOracleMinWork;
       ++halving) {
    for (SequenceSpec& seq : spec.sequences) {
      seq.context_len = LengthSpec(seq.context_len.value / 2);
      if (!spec.mask.explicit_mask)
        seq.query_len = LengthSpec(std::max<int64_t>(1, seq.query_len.value / 2));
    }
    batch = generate_batch(spec);
  }
  return batch;
}

testing::SpecShape random_shape(std::mt19937_64& rng, int* v_head_dim) {
  testing::SpecShape shape;
  shape.kv_heads = pick(rng, std::vector<int>{1, 2, 3});
  shape.q_heads =
      shape.kv_heads * pick(rng, std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 15, 16});
  const std::pair<int, int> dims = pick(rng, kHeadDimPairs);
  shape.head_dim = dims.first;
  *v_head_dim = dims.second;
  shape.dtype = pick(rng, std::vector<DType>{DType::bf16, DType::fp16});
  shape.page_size = pick(rng, std::vector<int>{1, 2, 5, 8, 16, 31, 32, 64, 128, 256});
  shape.layout = pick(rng, std::vector<KvLayout>{KvLayout::nhd, KvLayout::hnd, KvLayout::vllm});
  shape.allocation =
      pick(rng, std::vector<PageAllocation>{PageAllocation::sequential, PageAllocation::shuffled});
  shape.seed = rng();
  return shape;
}

// 1 to 5 sequences of edge-case lengths: context 0, query 1, lengths around tiles and pages.
std::vector<std::pair<int64_t, int64_t>> random_lengths(std::mt19937_64& rng) {
  std::vector<std::pair<int64_t, int64_t>> sequences;
  const int seqs = std::uniform_int_distribution<int>(1, 5)(rng);
  for (int s = 0; s < seqs; ++s) {
    sequences.push_back({pick(rng, std::vector<int64_t>{0, 1, 15, 16, 17, 100, 255, 1031, 2047}),
                         pick(rng, std::vector<int64_t>{1, 2, 7, 16, 17, 64, 65, 129, 300})});
  }
  return sequences;
}

void random_features(std::mt19937_64& rng, WorkloadSpec& spec, bool explicit_mask) {
  if (chance(rng, 0.3)) {
    spec.model.kv_dtype = DType::fp8_e4m3;
    spec.model.kv_scale =
        chance(rng, 0.5) ? KvScaleGranularity::per_head : KvScaleGranularity::per_tensor;
  }
  if (chance(rng, 0.3)) spec.model.logits_soft_cap = pick(rng, std::vector<double>{2.0, 30.0});
  if (chance(rng, 0.3)) spec.model.attention_sinks = true;
  if (explicit_mask) return;  // an explicit mask alone decides visibility
  if (chance(rng, 0.3)) spec.model.sliding_window = pick(rng, std::vector<int64_t>{1, 7, 64, 1000});
  if (chance(rng, 0.2)) spec.mask.causal = false;
}

// Random shapes (GQA 1..16 including non powers of two, head dims 64/80/96/128/192/256 with V as
// wide or narrower (192/128, 128/64, 96/64), bf16/fp16, page sizes 1..256, NHD/HND/vLLM), uneven
// (context, query) lengths with context 0 and query 1, fp8 KV per tensor or per head, soft-cap,
// window, sinks, non-causal at random, a random config.
TEST(PrefixPrefillMmaGpu, RandomBatchesConfigsAndFeaturesMatchTheReference) {
  ATTN_REQUIRE_GPU();
  const Registry registry = make_registry();
  const Variant& variant = *registry.find("prefix_prefill.sm80_mma");
  const uint64_t seed = test_seed();
  SCOPED_TRACE("ATTN_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  testing::CaseBudget budget = testing::CaseBudget::from_environment(8);
  while (budget.another()) {
    SCOPED_TRACE("case " + std::to_string(budget.draws()));
    int v_head_dim = 0;
    const testing::SpecShape shape = random_shape(rng, &v_head_dim);
    WorkloadSpec spec = testing::make_spec(shape, random_lengths(rng), "prefill-test");
    set_v_head_dim(spec, v_head_dim);
    random_features(rng, spec, false);
    const Batch batch = batch_for_cpu_oracle(spec);
    expect_passed(batch, variant, random_config(rng, variant, batch));
  }
  testing::print_case_summary(budget, seed);
}

// Each feature alone and all together, on GQA 6 (a 16-row tile holds 2 tokens and 4 padding
// rows), with a large and a small config.
TEST(PrefixPrefillMmaGpu, EachFeatureAloneAndTogetherMatchesTheReference) {
  ATTN_REQUIRE_GPU();
  const Registry registry = make_registry();
  const Variant& variant = *registry.find("prefix_prefill.sm80_mma");
  const uint64_t seed = test_seed();
  SCOPED_TRACE("ATTN_TEST_SEED=" + std::to_string(seed));
  testing::SpecShape shape;
  shape.q_heads = 12;
  shape.kv_heads = 2;
  shape.head_dim = 128;
  shape.page_size = 16;
  shape.seed = seed;
  const std::vector<std::pair<int64_t, int64_t>> lengths = {{0, 1},   {0, 77},    {3, 1},
                                                            {31, 40}, {700, 129}, {2500, 5}};
  using Edit = std::function<void(WorkloadSpec&)>;
  const std::vector<std::pair<std::string, Edit>> features = {
      {"plain", [](WorkloadSpec&) {}},
      {"soft-cap", [](WorkloadSpec& s) { s.model.logits_soft_cap = 5.0; }},
      {"window 40", [](WorkloadSpec& s) { s.model.sliding_window = 40; }},
      {"window 1", [](WorkloadSpec& s) { s.model.sliding_window = 1; }},
      {"sinks", [](WorkloadSpec& s) { s.model.attention_sinks = true; }},
      {"non-causal", [](WorkloadSpec& s) { s.mask.causal = false; }},
      {"non-causal window",
       [](WorkloadSpec& s) {
         s.mask.causal = false;
         s.model.sliding_window = 100;
       }},
      {"fp8 per tensor", [](WorkloadSpec& s) { s.model.kv_dtype = DType::fp8_e4m3; }},
      {"fp8 per head",
       [](WorkloadSpec& s) {
         s.model.kv_dtype = DType::fp8_e4m3;
         s.model.kv_scale = KvScaleGranularity::per_head;
       }},
      {"hnd", [](WorkloadSpec& s) { s.kv_cache.layout = KvLayout::hnd; }},
      {"vllm", [](WorkloadSpec& s) { s.kv_cache.layout = KvLayout::vllm; }},
      {"vllm fp8",
       [](WorkloadSpec& s) {
         s.kv_cache.layout = KvLayout::vllm;
         s.model.kv_dtype = DType::fp8_e4m3;
         s.model.kv_scale = KvScaleGranularity::per_head;
       }},
      {"all",
       [](WorkloadSpec& s) {
         s.kv_cache.layout = KvLayout::vllm;
         s.model.kv_dtype = DType::fp8_e4m3;
         s.model.logits_soft_cap = 10.0;
         s.model.sliding_window = 300;
         s.model.attention_sinks = true;
       }},
  };
  const std::vector<KernelConfig> configs = {
      KernelConfig{{"block_m", 128},
                   {"block_n", 64},
                   {"warps", 8},
                   {"stages", 2},
                   {"unroll_cache", 1},
                   {"unroll_new", 1}},
      // Small tiles, a deeper pipeline and unrolled loops (warps 2: at head dim 128 one warp of
      // 32 rows is refused by the register estimate).
      KernelConfig{{"block_m", 32},
                   {"block_n", 16},
                   {"warps", 2},
                   {"stages", 3},
                   {"unroll_cache", 2},
                   {"unroll_new", 2}},
  };
  std::vector<Batch> batches;
  for (const auto& feature : features) {
    WorkloadSpec spec = testing::make_spec(shape, lengths, "prefill-features");
    feature.second(spec);
    batches.push_back(generate_batch(spec));
  }
  std::vector<std::pair<const Batch*, KernelConfig>> cases;
  for (const Batch& batch : batches) {
    for (const KernelConfig& config : configs) cases.push_back({&batch, config});
  }
  compile_first(variant, cases);
  for (size_t f = 0; f < features.size(); ++f) {
    SCOPED_TRACE(features[f].first);
    for (const KernelConfig& config : configs) expect_passed(batches[f], variant, config);
  }
}

// Head dims 80, 96 and 192 (whose rows are not a power-of-two count of 16-byte chunks: the copy
// loops idle some threads) and Vs narrower than Q/K (own row offsets, own pool strides, a narrower
// output), in every flavour of the kernel: 16-bit NHD and HND, fp8 per head (pages of 5), vLLM's
// layout in 16 bits and fp8 (pages of 24: V's element loads), soft-cap with window and sinks;
// with the default config and a small unrolled one, and through the masked variant.
TEST(PrefixPrefillMmaGpu, OtherHeadDimsAndNarrowerVInEveryFlavourMatchTheReference) {
  ATTN_REQUIRE_GPU();
  const Registry registry = make_registry();
  const Variant& mma = *registry.find("prefix_prefill.sm80_mma");
  const Variant& masked = *registry.find("prefix_prefill.sm80_mma_masked");
  const Target target = Target::cuda(testing::gpu().device());
  const uint64_t seed = test_seed();
  SCOPED_TRACE("ATTN_TEST_SEED=" + std::to_string(seed));
  using Edit = std::function<void(WorkloadSpec&)>;
  const std::vector<std::pair<std::string, Edit>> flavours = {
      {"bf16 nhd", [](WorkloadSpec&) {}},
      {"fp16 hnd",
       [](WorkloadSpec& s) {
         s.model.dtype = DType::fp16;
         s.kv_cache.layout = KvLayout::hnd;
       }},
      {"fp8 per head, pages of 5",
       [](WorkloadSpec& s) {
         s.model.kv_dtype = DType::fp8_e4m3;
         s.model.kv_scale = KvScaleGranularity::per_head;
         s.kv_cache.page_size = 5;
       }},
      {"vllm", [](WorkloadSpec& s) { s.kv_cache.layout = KvLayout::vllm; }},
      {"vllm fp8, pages of 24",
       [](WorkloadSpec& s) {
         s.kv_cache.layout = KvLayout::vllm;
         s.model.kv_dtype = DType::fp8_e4m3;
         s.kv_cache.page_size = 24;
       }},
      {"soft-cap, window, sinks",
       [](WorkloadSpec& s) {
         s.model.logits_soft_cap = 10.0;
         s.model.sliding_window = 300;
         s.model.attention_sinks = true;
       }},
  };
  const KernelConfig small{{"block_m", 32}, {"block_n", 16},     {"warps", 2},
                           {"stages", 3},   {"unroll_cache", 2}, {"unroll_new", 2}};
  std::vector<Batch> batches, masked_batches;
  std::vector<std::string> names;
  for (const auto& [head_dim, v_head_dim] : kHeadDimPairs) {
    if (head_dim == v_head_dim && (head_dim == 64 || head_dim == 128 || head_dim == 256)) continue;
    testing::SpecShape shape;
    shape.q_heads = 12;
    shape.kv_heads = 2;
    shape.head_dim = head_dim;
    shape.seed = seed + uint64_t(head_dim * 1000 + v_head_dim);
    const std::vector<std::pair<int64_t, int64_t>> lengths = {
        {0, 1}, {0, 77}, {31, 40}, {700, 129}, {1500, 5}};
    for (const auto& [name, edit] : flavours) {
      WorkloadSpec spec = testing::make_spec(shape, lengths, "prefill-head-dims");
      set_v_head_dim(spec, v_head_dim);
      edit(spec);
      batches.push_back(batch_for_cpu_oracle(spec));
      names.push_back("d" + std::to_string(head_dim) + "/" + std::to_string(v_head_dim) + " " +
                      name);
    }
    WorkloadSpec spec = testing::make_spec(shape, lengths, "masked-head-dims");
    set_v_head_dim(spec, v_head_dim);
    ExplicitMaskSpec mask;
    mask.kind = ExplicitMaskKind::random;
    mask.density = 0.5;
    spec.mask.explicit_mask = mask;
    masked_batches.push_back(batch_for_cpu_oracle(spec));
  }
  std::vector<std::pair<const Batch*, KernelConfig>> cases, masked_cases;
  for (const Batch& batch : batches) {
    cases.push_back({&batch, mma.default_config(batch, target)});
    cases.push_back({&batch, small});
  }
  for (const Batch& batch : masked_batches) {
    masked_cases.push_back({&batch, masked.default_config(batch, target)});
    masked_cases.push_back({&batch, small});
  }
  compile_first(mma, cases);
  compile_first(masked, masked_cases);
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(names[i / 2]);
    expect_passed(*cases[i].first, mma, cases[i].second);
  }
  for (const auto& [batch, config] : masked_cases) expect_passed(*batch, masked, config);
}

// vLLM's layout at every kind of page size: V chunks of 8 (16-bit) or 16 (fp8) keys are one copy
// when the page size is a multiple of them, element loads otherwise, and at a context's end.
TEST(PrefixPrefillMmaGpu, VllmLayoutAtEveryPageSizeMatchesTheReference) {
  ATTN_REQUIRE_GPU();
  const Registry registry = make_registry();
  const Variant& variant = *registry.find("prefix_prefill.sm80_mma");
  const uint64_t seed = test_seed();
  SCOPED_TRACE("ATTN_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::vector<Batch> batches;
  std::vector<KernelConfig> configs;
  for (int page_size : {1, 2, 3, 5, 8, 16, 17, 24, 32, 64, 256}) {
    for (bool fp8 : {false, true}) {
      testing::SpecShape shape;
      shape.q_heads = 8;
      shape.kv_heads = 2;
      shape.head_dim = pick(rng, std::vector<int>{64, 128});
      shape.dtype = fp8 ? DType::fp16 : DType::bf16;
      shape.page_size = page_size;
      shape.layout = KvLayout::vllm;
      shape.seed = rng();
      WorkloadSpec spec =
          testing::make_spec(shape, {{0, 33}, {13, 1}, {250, 70}, {1000, 17}}, "vllm-pages");
      if (fp8) spec.model.kv_dtype = DType::fp8_e4m3;
      batches.push_back(generate_batch(spec));
      configs.push_back(random_config(rng, variant, batches.back()));
    }
  }
  std::vector<std::pair<const Batch*, KernelConfig>> cases;
  for (size_t i = 0; i < batches.size(); ++i) cases.push_back({&batches[i], configs[i]});
  compile_first(variant, cases);
  for (const auto& [batch, config] : cases) expect_passed(*batch, variant, config);
}

// Every (block_m, block_n, warps) the variant accepts on this device per head dim (each of the
// schema's, and narrower Vs), once, with a random draw of stages and unroll factors (stages 2 and
// no unroll when the draw is refused), on a batch mixing decode rows, a short prefill and a chunk
// after a long context. (Each tile shape twice, plain and drawn, was twice the compiles for little
// more: stages and unroll factors are drawn over the shapes.)
TEST(PrefixPrefillMmaGpu, EveryAcceptedTileShapeMatchesTheReference) {
  ATTN_REQUIRE_GPU();
  const Registry registry = make_registry();
  const Variant& variant = *registry.find("prefix_prefill.sm80_mma");
  const Target target = Target::cuda(testing::gpu().device());
  const uint64_t seed = test_seed();
  SCOPED_TRACE("ATTN_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::vector<Batch> batches;
  std::vector<std::pair<const Batch*, KernelConfig>> cases;
  for (const auto& [head_dim, v_head_dim] : kHeadDimPairs) {
    testing::SpecShape shape;
    shape.q_heads = 8;
    shape.kv_heads = 2;
    shape.head_dim = head_dim;
    shape.page_size = 16;
    shape.dtype = head_dim == 128 || head_dim == 96 ? DType::fp16 : DType::bf16;
    shape.seed = rng();
    WorkloadSpec spec =
        testing::make_spec(shape, {{100, 1}, {0, 50}, {1100, 200}}, "prefill-tiles");
    set_v_head_dim(spec, v_head_dim);
    batches.push_back(batch_for_cpu_oracle(spec));
  }
  for (const Batch& batch : batches) {
    int accepted = 0;
    const auto space = variant.space(batch, target);
    for (int64_t m : space[0].values) {
      for (int64_t n : space[1].values) {
        for (int64_t w : space[2].values) {
          const KernelConfig plain{{"block_m", m}, {"block_n", n},      {"warps", w},
                                   {"stages", 2},  {"unroll_cache", 1}, {"unroll_new", 1}};
          if (!variant.check(batch, plain, target)) continue;
          ++accepted;
          KernelConfig drawn = plain;
          drawn.set("stages", pick(rng, space[3].values))
              .set("unroll_cache", pick(rng, space[4].values))
              .set("unroll_new", pick(rng, space[5].values));
          cases.push_back({&batch, variant.check(batch, drawn, target) ? drawn : plain});
        }
      }
    }
    EXPECT_GT(accepted, 0) << batch.spec.model.head_dim;
  }
  compile_first(variant, cases);
  for (const auto& [batch, config] : cases) {
    SCOPED_TRACE(config.key());
    expect_passed(*batch, variant, config);
  }
}

// Tiles that are mostly padding: query_len 1 everywhere (a decode batch), context 0 with one new
// token (a single key), GQA 16 in a 16-row tile (one token per CTA), GQA 1.
TEST(PrefixPrefillMmaGpu, SingleTokenAndEmptyContextSequencesMatchTheReference) {
  ATTN_REQUIRE_GPU();
  const Registry registry = make_registry();
  const Variant& variant = *registry.find("prefix_prefill.sm80_mma");
  const uint64_t seed = test_seed();
  SCOPED_TRACE("ATTN_TEST_SEED=" + std::to_string(seed));
  for (int group : {1, 16}) {
    for (int page_size : {1, 16, 256}) {
      testing::SpecShape shape;
      shape.q_heads = group * 2;
      shape.kv_heads = 2;
      shape.head_dim = 128;
      shape.page_size = page_size;
      shape.seed = seed + uint64_t(page_size);
      for (const auto& lengths : std::vector<std::vector<std::pair<int64_t, int64_t>>>{
               {{0, 1}}, {{0, 1}, {1, 1}, {0, 2}}, {{0, 1}, {3000, 1}, {0, 300}}}) {
        WorkloadSpec spec = testing::make_spec(shape, lengths, "prefill-edges");
        spec.model.attention_sinks = page_size == 16;
        const Batch batch = generate_batch(spec);
        for (const KernelConfig& config : {KernelConfig{{"block_m", 16},
                                                        {"block_n", 16},
                                                        {"warps", 1},
                                                        {"stages", 2},
                                                        {"unroll_cache", 1},
                                                        {"unroll_new", 1}},
                                           KernelConfig{{"block_m", 128},
                                                        {"block_n", 128},
                                                        {"warps", 8},
                                                        {"stages", 2},
                                                        {"unroll_cache", 1},
                                                        {"unroll_new", 1}}}) {
          expect_passed(batch, variant, config);
        }
      }
    }
  }
}

// The performance case (8 x (2048 cached + 512 new), 32/8 heads, d128, bf16, page 16)
// and the mixed chunked-prefill preset's shape, with the default config.
TEST(PrefixPrefillMmaGpu, AcceptanceShapesMatchTheReference) {
  ATTN_REQUIRE_GPU();
  const Registry registry = make_registry();
  const Variant& variant = *registry.find("prefix_prefill.sm80_mma");
  const Target target = Target::cuda(testing::gpu().device());
  testing::SpecShape shape;
  shape.q_heads = 32;
  shape.kv_heads = 8;
  shape.head_dim = 128;
  shape.page_size = 16;
  shape.seed = test_seed();
  SCOPED_TRACE("ATTN_TEST_SEED=" + std::to_string(shape.seed));
  std::vector<std::pair<int64_t, int64_t>> mixed(40, {1500, 1});
  mixed.push_back({2048, 512});
  mixed.push_back({0, 512});
  for (const auto& lengths : {std::vector<std::pair<int64_t, int64_t>>(8, {2048, 512}), mixed}) {
    const Batch batch = generate_batch(testing::make_spec(shape, lengths, "prefill-acceptance"));
    expect_passed(batch, variant, variant.default_config(batch, target));
  }
}

// The masked variant: every generated mask kind (causal written out, speculative trees,
// branches, random grids that show keys after the query) with random shapes, features, configs.
TEST(PrefixPrefillMaskedGpu, EveryMaskKindWithRandomFeaturesMatchesTheReference) {
  ATTN_REQUIRE_GPU();
  const Registry registry = make_registry();
  const Variant& variant = *registry.find("prefix_prefill.sm80_mma_masked");
  const uint64_t seed = test_seed();
  SCOPED_TRACE("ATTN_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  testing::CaseBudget budget = testing::CaseBudget::from_environment(8);
  while (budget.another()) {
    SCOPED_TRACE("case " + std::to_string(budget.draws()));
    const ExplicitMaskKind kind = pick(
        rng, std::vector<ExplicitMaskKind>{ExplicitMaskKind::causal, ExplicitMaskKind::tree,
                                           ExplicitMaskKind::branches, ExplicitMaskKind::random});
    ExplicitMaskSpec mask;
    mask.kind = kind;
    std::vector<std::pair<int64_t, int64_t>> lengths = random_lengths(rng);
    if (kind == ExplicitMaskKind::tree) {  // one node per new token: every sequence the same
      const int nodes = pick(rng, std::vector<int>{1, 5, 8, 21});
      for (int i = 0; i < nodes; ++i)
        mask.tree_parents.push_back(std::uniform_int_distribution<int>(-1, i - 1)(rng));
      for (auto& l : lengths) l.second = nodes;
    } else if (kind == ExplicitMaskKind::branches) {
      mask.branches = pick(rng, std::vector<int>{1, 2, 4});
      for (auto& l : lengths) l.second = mask.branches * pick(rng, std::vector<int64_t>{1, 3, 40});
    } else if (kind == ExplicitMaskKind::random) {
      mask.density = pick(rng, std::vector<double>{0.05, 0.5, 0.95});
    }
    int v_head_dim = 0;
    WorkloadSpec spec = testing::make_spec(random_shape(rng, &v_head_dim), lengths, "masked-test");
    set_v_head_dim(spec, v_head_dim);
    spec.mask.explicit_mask = mask;
    random_features(rng, spec, true);
    const Batch batch = batch_for_cpu_oracle(spec);
    expect_passed(batch, variant, random_config(rng, variant, batch));
  }
  testing::print_case_summary(budget, seed);
}

}  // namespace
}  // namespace attn
