// The tensor-core decode variants on the GPU, paged_decode.sm80_mma (cp.async) and
// paged_decode.sm90_tma (TMA, Hopper), which share their compute and merge code: random batches,
// configs, features and data, each verified against the oracle (the CPU reference, or the tiled
// GPU reference for a large batch) on a poisoned output (the Evaluator NaN-fills the output, runs
// once, and checks every row within the dtype's tolerance before it times anything). sm90_tma
// declines fp8 K/V and page sizes its TMA boxes cannot tile (sm90_tma_traits.hpp); those cases are
// counted as declined, never as passed, and only for it.
#include <gtest/gtest.h>

#include <random>
#include <sstream>

#include "kernels/paged_decode/sm80_mma_traits.hpp"
#include "kernels/registry.hpp"
#include "measure/evaluator.hpp"
#include "tests/gpu_case_budget.hpp"
#include "tests/gpu_test_support.hpp"
#include "tests/kernels/every_config_cases.hpp"
#include "tests/kernels/paged_decode/random_decode_batch.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

using testing::pick;

bool chance(std::mt19937_64& rng, double p) {
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng) < p;
}

constexpr const char* kTma = "paged_decode.sm90_tma";

class Sm80MmaGpu : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    ATTN_REQUIRE_GPU();
    if (GetParam() == kTma && testing::gpu().device().cc_major < 9) {
      GTEST_SKIP() << kTma << " needs a Hopper GPU";
    }
  }
  const Variant& variant(const Registry& registry) const { return *registry.find(GetParam()); }
  // The head dims the variant runs: all of them (sm90_tma's last TMA box of a row is zero-filled
  // past it at 80, 96 and 192).
  std::vector<int> head_dims() const { return testing::every_decode_head_dim(); }
  // A page size the variant reads: sm90_tma's boxes need multiples of 8 keys.
  int page(int wanted) const { return GetParam() == kTma && wanted % 16 != 0 ? 16 : wanted; }
  // Verifies one run (true: nothing is declined; sm90_tma runs what TMA cannot load on cp.async).
  bool expect_passed(const Batch& batch, const KernelConfig& config) const;
  // Compiles the programs of the cases the variant accepts, in parallel.
  void compile_first(const std::vector<std::pair<const Batch*, KernelConfig>>& cases) const;
};

Measurement evaluate_once(const std::string& name, const Batch& batch, const KernelConfig& config) {
  auto& env = testing::gpu();
  auto evaluator = Evaluator::on_cuda(batch, env.discovery.api, env.device(), *env.jit,
                                      testing::test_evaluator_options());
  const Registry registry = make_registry();
  return evaluator->evaluate(*registry.find(name), config);
}

// Optional features of one spec.
struct Features {
  double soft_cap = 0;  // 0: none
  int64_t window = 0;   // 0: none
  bool sinks = false;
  bool causal = true;
  int fp8 = 0;  // 0: K/V of Q's dtype; 1: fp8 e4m3 K/V, per-tensor scales; 2: per-head scales
};

WorkloadSpec make_spec(const testing::SpecShape& shape, const std::vector<int64_t>& contexts,
                       const Features& f) {
  WorkloadSpec spec = testing::make_decode_spec(shape, contexts);
  if (f.soft_cap > 0) spec.model.logits_soft_cap = f.soft_cap;
  if (f.window > 0) spec.model.sliding_window = f.window;
  spec.model.attention_sinks = f.sinks;
  spec.mask.causal = f.causal;
  if (f.fp8 > 0) {
    spec.model.kv_dtype = DType::fp8_e4m3;
    spec.model.kv_scale =
        f.fp8 == 2 ? KvScaleGranularity::per_head : KvScaleGranularity::per_tensor;
  }
  return spec;
}

std::string describe(const Batch& batch, const KernelConfig& config) {
  const WorkloadSpec& spec = batch.spec;
  std::ostringstream out;
  out << "q" << spec.model.num_q_heads << "/kv" << spec.model.num_kv_heads << " d"
      << spec.model.head_dim << " " << to_string(spec.model.dtype) << " page "
      << spec.kv_cache.page_size << " " << to_string(spec.kv_cache.layout) << " "
      << to_string(spec.kv_cache.allocation) << " seed " << spec.seed;
  if (batch.logits_soft_cap > 0) out << " soft-cap " << batch.logits_soft_cap;
  if (batch.sliding_window > 0) out << " window " << batch.sliding_window;
  if (!batch.sink_logits.empty()) out << " sinks";
  if (!batch.causal) out << " non-causal";
  if (batch.kv_dtype != batch.dtype) out << " kv " << to_string(batch.kv_dtype);
  out << " contexts [";
  for (const auto& s : spec.sequences) out << s.context_len.value << " ";
  out << "] config " << config.key();
  return out.str();
}

bool Sm80MmaGpu::expect_passed(const Batch& batch, const KernelConfig& config) const {
  const Registry registry = make_registry();
  const Target target = Target::cuda(testing::gpu().device());
  const Support support = variant(registry).check(batch, config, target);
  EXPECT_TRUE(support.ok) << describe(batch, config) << ": " << support.reason;
  const Measurement m = evaluate_once(GetParam(), batch, config);
  EXPECT_EQ(m.disposition, Disposition::passed) << describe(batch, config) << ": " << m.reason;
  EXPECT_EQ(m.verification.nonfinite, 0) << describe(batch, config);
  return true;
}

void Sm80MmaGpu::compile_first(
    const std::vector<std::pair<const Batch*, KernelConfig>>& cases) const {
  const Registry registry = make_registry();
  const Target target = Target::cuda(testing::gpu().device());
  std::vector<JitProgram> programs;
  for (const auto& [batch, config] : cases) {
    if (variant(registry).check(*batch, config, target))
      programs.push_back(variant(registry).programs(*batch, config, target).front());
  }
  testing::compile_in_parallel(programs);
}

// Random shapes (GQA 1..16 including non powers of two, head dims 64/80/96/128/192/256, page
// sizes 1..256 including odd ones, both layouts and dtypes), uneven lengths with edge cases
// (context 0: a single key), every optional feature on at random (soft-cap, sliding window, sinks,
// non-causal), fp8 e4m3 K/V with per-tensor or per-head scales, and a random config from the
// variant's space that check() accepts; as many cases as the case budget allows
// (tests/gpu_case_budget.hpp), draws sm90_tma declines not counted.
TEST_P(Sm80MmaGpu, RandomBatchesConfigsAndFeaturesMatchTheReference) {
  const Registry registry = make_registry();
  const Variant& variant = this->variant(registry);
  const Target target = Target::cuda(testing::gpu().device());
  const uint64_t seed = testing::test_seed_or(20261205);
  SCOPED_TRACE("ATTN_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  testing::CaseBudget budget = testing::CaseBudget::from_environment(8);
  while (budget.another()) {
    SCOPED_TRACE("case " + std::to_string(budget.draws()));
    const testing::SpecShape shape = testing::random_decode_shape(
        rng, std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 15, 16}, head_dims());
    const std::vector<int64_t> contexts = testing::random_decode_contexts(rng);
    Features features;
    if (chance(rng, 0.35)) features.soft_cap = pick(rng, std::vector<double>{2.0, 10.0, 30.0});
    if (chance(rng, 0.35)) features.window = pick(rng, std::vector<int64_t>{1, 7, 64, 300, 5000});
    features.sinks = chance(rng, 0.35);
    features.causal = !chance(rng, 0.2);
    if (chance(rng, 0.35)) features.fp8 = chance(rng, 0.5) ? 2 : 1;
    const Batch batch = generate_batch(make_spec(shape, contexts, features));

    // A random config the variant accepts (the default when the draws are all invalid).
    const KernelConfig config = testing::random_accepted_config(variant, batch, target, rng);
    if (!expect_passed(batch, config)) budget.declined();
  }
  // sm90_tma runs fp8 pools and pages its TMA boxes cannot tile (1, 2, 5, 31 keys) on the
  // cp.async kernel: nothing is declined.
  EXPECT_GE(budget.checked(), 8);
  EXPECT_EQ(budget.declined_draws(), 0);
  testing::print_case_summary(budget, seed);
}

// The planner's default on random shapes and skewed lengths: many short sequences with a few
// long ones (so the planner lays several sequences into one CTA or cuts the long ones across
// CTAs), empty and one-key sequences among them, every optional feature at random, fp8
// where the variant takes it; NaN-poisoned output, the dtype's tolerance (expect_passed).
TEST_P(Sm80MmaGpu, ThePlannersDefaultOnRandomShapesAndSkewedLengthsMatchesTheReference) {
  const Registry registry = make_registry();
  const Variant& variant = this->variant(registry);
  const Target target = Target::cuda(testing::gpu().device());
  const uint64_t seed = testing::test_seed_or(20261129);
  SCOPED_TRACE("ATTN_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  testing::CaseBudget budget = testing::CaseBudget::from_environment(8);
  while (budget.another()) {
    SCOPED_TRACE("case " + std::to_string(budget.draws()));
    const testing::SpecShape shape =
        testing::random_decode_shape(rng, std::vector<int>{1, 2, 4, 7, 8, 16}, head_dims());
    std::vector<int64_t> contexts(size_t(1 + rng() % 40));
    for (int64_t& c : contexts) c = chance(rng, 0.1) ? int64_t(rng() % 2) : int64_t(rng() % 700);
    for (int i = 0, longs = int(1 + rng() % 3); i < longs; ++i) {
      contexts[size_t(rng() % contexts.size())] = 4000 + int64_t(rng() % 20000);
    }
    Features features;
    if (chance(rng, 0.25)) features.soft_cap = 30.0;
    if (chance(rng, 0.25)) features.window = pick(rng, std::vector<int64_t>{7, 300, 5000});
    features.sinks = chance(rng, 0.25);
    if (chance(rng, 0.35)) features.fp8 = chance(rng, 0.5) ? 2 : 1;
    const Batch batch = generate_batch(make_spec(shape, contexts, features));
    if (!expect_passed(batch, variant.default_config(batch, target))) budget.declined();
  }
  EXPECT_GE(budget.checked(), 6);
  EXPECT_EQ(budget.declined_draws(), 0);
  testing::print_case_summary(budget, seed);
}

// Each feature alone and all together, one split (the CTA writes out, with the sink) and several
// (the merging CTA adds the sink), on GQA 6 (rows 6..15 of the mma tile are padding).
TEST_P(Sm80MmaGpu, EachFeatureWithOneAndManySplitsMatchesTheReference) {
  testing::SpecShape shape;
  shape.q_heads = 12;
  shape.kv_heads = 2;
  shape.head_dim = 128;
  shape.page_size = 16;
  const std::vector<int64_t> contexts = {0, 3, 31, 700, 2500};
  std::vector<Features> cases(9);
  cases[1].soft_cap = 5.0;
  cases[2].window = 40;
  cases[3].sinks = true;
  cases[4].causal = false;
  cases[5] = {10.0, 300, true, true, 0};
  cases[6].fp8 = 1;
  cases[7].fp8 = 2;
  cases[8] = {10.0, 300, true, true, 2};
  std::vector<Batch> batches;
  std::vector<std::pair<const Batch*, KernelConfig>> runs;
  for (const Features& features : cases) {
    for (int head_dim : head_dims()) {
      shape.head_dim = head_dim;
      batches.push_back(generate_batch(make_spec(shape, contexts, features)));
    }
  }
  for (const Batch& batch : batches) {
    for (int splits : {1, 4}) {
      runs.push_back({&batch, KernelConfig{{"tile_tokens", 64},
                                           {"warps", 4},
                                           {"stages", batch.spec.model.head_dim >= 192 ? 2 : 3},
                                           {"num_splits", splits}}});
    }
  }
  compile_first(runs);
  for (const auto& [batch, config] : runs) expect_passed(*batch, config);
}

// Every fixed split count, including more splits than blocks (empty splits must merge as
// nothing), on very uneven lengths, with sinks and a window so the merge sees both.
TEST_P(Sm80MmaGpu, EverySplitCountMatchesTheReference) {
  testing::SpecShape shape;
  shape.q_heads = 16;
  shape.kv_heads = 1;  // GQA 16: the mma tile is full
  shape.head_dim = 64;
  shape.page_size = page(5);
  Features features;
  features.sinks = true;
  features.window = 1500;
  const Batch batch = generate_batch(make_spec(shape, {0, 3, 700, 5000}, features));
  for (int splits : {0, 1, 2, 3, 7, 16, 64, 128}) {
    const KernelConfig config{
        {"tile_tokens", 32}, {"warps", 2}, {"stages", 2}, {"num_splits", splits}};
    EXPECT_TRUE(expect_passed(batch, config));
  }
}

// Every (tile_tokens, warps, stages) the variant accepts on this device, for one shape per head
// dim: the whole compiled space runs, not just a sample; each config once, with 16-bit K/V and
// fp8 K/V (per-head scales) in turn (sm90_tma declines fp8: it runs them all on 16-bit K/V).
TEST_P(Sm80MmaGpu, EveryAcceptedTileConfigMatchesTheReference) {
  const Registry registry = make_registry();
  const Variant& variant = this->variant(registry);
  const Target target = Target::cuda(testing::gpu().device());
  for (int head_dim : head_dims()) {
    std::vector<Batch> batches;
    for (bool fp8 : {false, true}) {
      testing::SpecShape shape;
      shape.q_heads = 8;
      shape.kv_heads = 2;
      shape.head_dim = head_dim;
      shape.page_size = 16;
      shape.dtype = head_dim == 128 || head_dim == 96 ? DType::fp16 : DType::bf16;
      WorkloadSpec spec = testing::make_decode_spec(shape, {1, 100, 1100});
      if (fp8) {
        spec.model.kv_dtype = DType::fp8_e4m3;
        spec.model.kv_scale = KvScaleGranularity::per_head;
      }
      batches.push_back(generate_batch(spec));
    }
    const auto cases = testing::rotated_config_cases(
        variant, batches, target, 1,
        [](const KernelConfig& c) { return c.get("num_splits") == 0; });
    std::vector<std::pair<const Batch*, KernelConfig>> runs;
    for (const auto& [b, config] : cases) runs.push_back({&batches[b], config});
    compile_first(runs);
    size_t with_fp8 = 0;
    for (const auto& [b, config] : cases) {
      with_fp8 += b;
      EXPECT_TRUE(expect_passed(batches[b], config)) << head_dim << " " << config.key();
    }
    EXPECT_GT(cases.size(), 0u) << head_dim;
    EXPECT_GT(with_fp8, 0u) << head_dim;
  }
}

// Head dims 80, 96 and 192 (copy lanes padded to a power of two; fp8 at 80: a last group of two
// output tiles and rows padded to an odd chunk count) in every KV dtype (bf16, fp16, fp8 with
// per-tensor and per-head scales), both layouts and page sizes 1, 16 and 12, GQA 3 (13 padding
// rows of the mma tile): the default config and 2 fixed splits (the in-kernel merge). Small
// batches, so the CPU reference is the oracle. For sm90_tma: TMA boxes whose last one is
// zero-filled past the row (16-bit pools at pages of 16 keys), the cp.async path otherwise.
TEST_P(Sm80MmaGpu, HeadDims80_96And192InEveryKvDtypeLayoutAndPageMatchTheReference) {
  const Registry registry = make_registry();
  const Variant& variant = this->variant(registry);
  const Target target = Target::cuda(testing::gpu().device());
  std::vector<Batch> batches;
  for (const testing::OtherHeadDimCase& c : testing::other_head_dim_cases(6, 2)) {
    Features features;
    features.fp8 = c.fp8;
    features.sinks = c.shape.page_size == 12;
    batches.push_back(generate_batch(make_spec(c.shape, {0, 17, 300}, features)));
  }
  std::vector<std::pair<const Batch*, KernelConfig>> runs;
  for (const Batch& batch : batches) {
    KernelConfig fixed = variant.default_config(batch, target);
    fixed.set("num_splits", 2);
    runs.push_back({&batch, variant.default_config(batch, target)});
    runs.push_back({&batch, fixed});
  }
  compile_first(runs);
  for (const auto& [batch, config] : runs) {
    expect_passed(*batch, config);
    EXPECT_EQ(evaluate_once(GetParam(), *batch, config).verification.reference, "cpu_reference")
        << describe(*batch, config);
  }
  EXPECT_EQ(runs.size(), size_t(3 * 4 * 2 * 3 * 2));
}

// Sequences of one key (context 0) and two keys, alone and beside a long one, with auto and many
// splits: nearly every split and most warps of every block see no key.
// The two forms of the per-block compute on either side of the boundary between them: in
// sm80_mma a group of 8 q heads runs the key-rows form up to head dim 128 (heads as the mma's N
// columns, sm80_mma_block_key_rows.cuh), a group of 9 the head-rows form; at every head dim, with
// 16-bit and fp8 (per-head scales) K/V, in one split and in two.
TEST_P(Sm80MmaGpu, KeyRowsAndHeadRowsFormsAtEveryHeadDimMatchTheReference) {
  const Registry registry = make_registry();
  const Variant& variant = this->variant(registry);
  const Target target = Target::cuda(testing::gpu().device());
  std::vector<Batch> batches;
  for (const int group :
       {paged_decode::sm80_mma::kKeyRowsMaxGroup, paged_decode::sm80_mma::kKeyRowsMaxGroup + 1}) {
    for (const int head_dim : head_dims()) {
      for (const int fp8 : {0, 2}) {
        testing::SpecShape shape;
        shape.q_heads = 2 * group;
        shape.kv_heads = 2;
        shape.head_dim = head_dim;
        shape.seed = uint64_t(100 * group + head_dim + fp8);
        Features features;
        features.fp8 = fp8;
        batches.push_back(generate_batch(make_spec(shape, {0, 33, 517}, features)));
      }
    }
  }
  std::vector<std::pair<const Batch*, KernelConfig>> runs;
  for (const Batch& batch : batches) {
    KernelConfig split = variant.default_config(batch, target);
    split.set("num_splits", 2);
    runs.push_back({&batch, variant.default_config(batch, target)});
    runs.push_back({&batch, split});
  }
  compile_first(runs);
  for (const auto& [batch, config] : runs) expect_passed(*batch, config);
  EXPECT_EQ(runs.size(), size_t(2 * head_dims().size() * 2 * 2));
}

TEST_P(Sm80MmaGpu, LengthOneAndTwoSequencesMatchTheReference) {
  for (int page_size : {page(1), 16, 256}) {
    testing::SpecShape shape;
    shape.q_heads = 3;
    shape.kv_heads = 1;
    shape.head_dim = 128;
    shape.page_size = page_size;
    for (const std::vector<int64_t>& contexts :
         {std::vector<int64_t>{0}, std::vector<int64_t>{0, 1, 0},
          std::vector<int64_t>{0, 3000, 1}}) {
      Features features;
      features.sinks = page_size == 16;
      const Batch batch = generate_batch(make_spec(shape, contexts, features));
      for (int splits : {0, 8}) {
        expect_passed(
            batch, KernelConfig{
                       {"tile_tokens", 128}, {"warps", 8}, {"stages", 2}, {"num_splits", splits}});
      }
    }
  }
}

// The acceptance shapes: Llama-3-8B heads (GQA 4), 64 sequences of 4096 tokens, bf16, page 16;
// and one sequence of 32768 tokens, where auto split-KV must spread one KV head over the GPU.
TEST_P(Sm80MmaGpu, LargeDecodeBatchesMatchTheReference) {
  const Registry registry = make_registry();
  const Variant& variant = this->variant(registry);
  const Target target = Target::cuda(testing::gpu().device());
  testing::SpecShape shape;
  shape.q_heads = 32;
  shape.kv_heads = 8;
  shape.head_dim = 128;
  for (const std::vector<int64_t>& contexts :
       {std::vector<int64_t>(64, 4096), std::vector<int64_t>{32767}}) {
    const Batch batch = generate_batch(testing::make_decode_spec(shape, contexts));
    EXPECT_TRUE(expect_passed(batch, variant.default_config(batch, target)));
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, Sm80MmaGpu,
                         ::testing::Values("paged_decode.sm80_mma", "paged_decode.sm90_tma"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param == kTma ? std::string("Sm90Tma")
                                                     : std::string("Sm80Mma");
                         });

}  // namespace
}  // namespace attn
