// prefix_prefill.sm90_wgmma on a Hopper GPU (skipped elsewhere, with the reason): one tile first,
// then random batches (contexts including 0 and page-boundary lengths, query lengths including 1,
// GQA non powers of two, page sizes 1..256 (cp.async under 64 keys, TMA boxes from 64), NHD and
// HND, both dtypes, soft-cap, sinks, non-causal), every accepted config, every page size and
// layout, decode-like tiles that are mostly padding, and the acceptance shapes; head dims
// 80, 96, 192 and 192 with a V of 128 on one-tile, per-context-path and random cases. Each case
// is verified against the oracle (the CPU reference, or the tiled GPU reference for a large batch)
// on a poisoned output (the Evaluator NaN-fills the output, runs once and checks every row within
// the dtype's tolerance, and counts non-finite values) before anything is timed. The programs of a
// test are compiled in parallel first. The random draws change with the time unless
// ATTN_TEST_SEED is set; a failure prints the seed. The random test checks as many cases as the
// case budget allows (tests/gpu_case_budget.hpp).
#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <sstream>

#include "kernels/prefix_prefill/prefix_prefill_variants.hpp"
#include "kernels/registry.hpp"
#include "measure/evaluator.hpp"
#include "tests/gpu_case_budget.hpp"
#include "tests/gpu_test_support.hpp"
#include "tests/kernels/random_draws.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

using Lengths = std::vector<std::pair<int64_t, int64_t>>;

#define ATTN_REQUIRE_HOPPER()                                                \
  do {                                                                       \
    ATTN_REQUIRE_GPU();                                                      \
    if (testing::gpu().device().arch() != "sm_90a")                          \
      GTEST_SKIP() << "prefix_prefill.sm90_wgmma needs sm_90a; this GPU is " \
                   << testing::gpu().device().arch();                        \
  } while (0)

using testing::pick;

bool chance(std::mt19937_64& rng, double p) {
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng) < p;
}

uint64_t test_seed() {
  return testing::test_seed_or_clock();
}

const Variant& sm90_variant(const Registry& registry) {
  const Variant* variant = registry.find("prefix_prefill.sm90_wgmma");
  EXPECT_NE(variant, nullptr);
  return *variant;
}

Target device_target() {
  return Target::cuda(testing::gpu().device());
}

KernelConfig make_config(int tile_m, int tile_n, int stages, int consumers) {
  return KernelConfig{
      {"tile_m", tile_m}, {"tile_n", tile_n}, {"stages", stages}, {"consumers", consumers}};
}

std::string describe(const Batch& batch, const KernelConfig& config) {
  const WorkloadSpec& spec = batch.spec;
  std::ostringstream out;
  out << "q" << spec.model.num_q_heads << "/kv" << spec.model.num_kv_heads << " d"
      << spec.model.head_dim << " " << to_string(spec.model.dtype) << " page "
      << spec.kv_cache.page_size << " " << to_string(spec.kv_cache.layout) << " "
      << to_string(spec.kv_cache.allocation) << " seed " << spec.seed;
  if (spec.model.effective_v_head_dim() != spec.model.head_dim)
    out << " dv" << spec.model.effective_v_head_dim();
  if (batch.logits_soft_cap > 0) out << " soft-cap " << batch.logits_soft_cap;
  if (!batch.sink_logits.empty()) out << " sinks";
  if (!batch.causal) out << " non-causal";
  out << " (context, query) [";
  for (int s = 0; s < batch.num_seqs; ++s)
    out << "(" << batch.context_lens[size_t(s)] << "," << batch.query_lens[size_t(s)] << ") ";
  out << "] config " << config.key();
  return out.str();
}

Measurement evaluate_once(const Batch& batch, const Variant& variant, const KernelConfig& config) {
  auto& env = testing::gpu();
  auto evaluator = Evaluator::on_cuda(batch, env.discovery.api, env.device(), *env.jit,
                                      testing::test_evaluator_options());
  return evaluator->evaluate(variant, config);
}

struct Case {
  Batch batch;
  KernelConfig config;
};

// Compiles the programs of `cases` in parallel (reporting compile errors), then runs each once on
// a poisoned output and checks it against the oracle.
void expect_all_pass(const std::vector<Case>& cases) {
  const Registry registry = make_registry();
  const Variant& variant = sm90_variant(registry);
  const Target target = device_target();
  std::vector<JitProgram> programs;
  for (const Case& c : cases) {
    const Support support = variant.check(c.batch, c.config, target);
    ASSERT_TRUE(support.ok) << describe(c.batch, c.config) << ": " << support.reason;
    programs.push_back(variant.programs(c.batch, c.config, target).front());
  }
  testing::compile_in_parallel(programs);
  for (const Case& c : cases) {
    const Measurement m = evaluate_once(c.batch, variant, c.config);
    EXPECT_EQ(m.disposition, Disposition::passed)
        << describe(c.batch, c.config) << ": " << m.reason;
    EXPECT_EQ(m.verification.nonfinite, 0) << describe(c.batch, c.config);
  }
}

testing::SpecShape shape_of(int q_heads, int kv_heads, int head_dim, int page_size,
                            DType dtype = DType::bf16, KvLayout layout = KvLayout::nhd) {
  testing::SpecShape shape;
  shape.q_heads = q_heads;
  shape.kv_heads = kv_heads;
  shape.head_dim = head_dim;
  shape.page_size = page_size;
  shape.dtype = dtype;
  shape.layout = layout;
  return shape;
}

// The smallest cases first, so that a broken layout shows on a batch that is easy to read: one
// head, one sequence, the simplest config (one consumer, 64 keys per stage, one page box per
// tile). No context and 64 new tokens (one key tile), non-causal then causal; one whole context
// tile before them; then a partial context tile (40 keys: the mask and the zeroed V rows past the
// context) before 24 new tokens. Pages of 64 keys (one TMA box per tile), then of 16 (the
// cp.async path: copied tiles, zero-filled past the context).
TEST(PrefixPrefillSm90Gpu, OneTileMatchesTheReference) {
  ATTN_REQUIRE_HOPPER();
  std::vector<Case> cases;
  for (int page : {64, 16}) {
    for (int head_dim : {64, 128, 256}) {
      for (const auto& [lengths, causal] : std::vector<std::pair<Lengths, bool>>{
               {{{0, 64}}, false}, {{{0, 64}}, true}, {{{64, 64}}, true}, {{{40, 24}}, true}}) {
        WorkloadSpec spec = testing::make_spec(shape_of(1, 1, head_dim, page), lengths, "one-tile");
        spec.mask.causal = causal;
        cases.push_back({generate_batch(spec), make_config(64, 64, 2, 1)});
      }
    }
  }
  expect_all_pass(cases);
}

// The features a random case draws: soft-cap (30%), sinks (30%) and non-causal (20%).
void draw_features(std::mt19937_64& rng, WorkloadSpec& spec) {
  if (chance(rng, 0.3)) spec.model.logits_soft_cap = pick(rng, std::vector<double>{2.0, 30.0});
  if (chance(rng, 0.3)) spec.model.attention_sinks = true;
  if (chance(rng, 0.2)) spec.mask.causal = false;
}

// Runs one_case as many times as the case budget allows (tests/gpu_case_budget.hpp) on one random
// stream, seeded by ATTN_TEST_SEED or the test's own seed; a failure names the seed and the case.
void for_each_random_case(const std::function<void(std::mt19937_64&)>& one_case) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE("ATTN_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  testing::CaseBudget budget = testing::CaseBudget::from_environment(8);
  while (budget.another()) {
    SCOPED_TRACE("case " + std::to_string(budget.draws()));
    one_case(rng);
  }
  testing::print_case_summary(budget, seed);
}

// The lists a random case draws from: GQA groups, page sizes, the most sequences, and each
// sequence's context and new-token lengths.
struct RandomDraws {
  std::vector<int> groups;
  std::vector<int> pages;
  int max_sequences;
  std::vector<int64_t> contexts;
  std::vector<int64_t> queries;
};
// GQA 1..16 with non powers of two, page sizes 1..256 (copied and TMA-boxed), 1 to 5 sequences
// with contexts 0, around pages and tiles, and long, query lengths from 1.
const RandomDraws kAnyCase = {{1, 2, 3, 4, 5, 6, 7, 8, 11, 12, 13, 16},
                              {1, 5, 8, 16, 24, 32, 48, 64, 128, 256},
                              5,
                              {0, 0, 1, 15, 16, 17, 63, 64, 100, 255, 256, 1031, 2047},
                              {1, 1, 2, 7, 16, 17, 63, 64, 65, 129, 300}};

// One random case: a random shape (GQA and pages from `draws`, (head_dim, v_head_dim) from `dims`,
// bf16/fp16, NHD/HND, sequential or shuffled pages), lengths from `draws`, with kv_fp8 an fp8
// cache (per-head or per-tensor scales), soft-cap, sinks and non-causal at random, and a random
// accepted config.
void expect_random_case_passes(std::mt19937_64& rng, const std::vector<std::pair<int, int>>& dims,
                               const RandomDraws& draws = kAnyCase, bool kv_fp8 = false) {
  const Registry registry = make_registry();
  const Variant& variant = sm90_variant(registry);
  const Target target = device_target();
  testing::SpecShape shape;
  shape.kv_heads = pick(rng, std::vector<int>{1, 2, 3});
  shape.q_heads = shape.kv_heads * pick(rng, draws.groups);
  const auto [head_dim, v_head_dim] = pick(rng, dims);
  shape.head_dim = head_dim;
  shape.dtype = pick(rng, std::vector<DType>{DType::bf16, DType::fp16});
  shape.page_size = pick(rng, draws.pages);
  shape.layout = pick(rng, std::vector<KvLayout>{KvLayout::nhd, KvLayout::hnd});
  shape.allocation =
      pick(rng, std::vector<PageAllocation>{PageAllocation::sequential, PageAllocation::shuffled});
  shape.seed = rng();
  Lengths lengths;
  const int seqs = std::uniform_int_distribution<int>(1, draws.max_sequences)(rng);
  for (int s = 0; s < seqs; ++s)
    lengths.push_back({pick(rng, draws.contexts), pick(rng, draws.queries)});
  WorkloadSpec spec = testing::make_spec(
      shape, lengths, kv_fp8 ? "prefill-sm90-fp8-random" : "prefill-sm90-random");
  if (v_head_dim != head_dim) spec.model.v_head_dim = v_head_dim;
  if (kv_fp8) {
    spec.model.kv_dtype = DType::fp8_e4m3;
    spec.model.kv_scale =
        chance(rng, 0.5) ? KvScaleGranularity::per_head : KvScaleGranularity::per_tensor;
  }
  draw_features(rng, spec);
  Batch batch = generate_batch(spec);
  const KernelConfig config = testing::random_accepted_config(variant, batch, target, rng, 40);
  expect_all_pass({Case{std::move(batch), config}});
}

// Random cases (expect_random_case_passes) at head dims 64/128/256, one at a time, as many as the
// case budget allows.
TEST(PrefixPrefillSm90Gpu, RandomBatchesFeaturesAndConfigsMatchTheReference) {
  ATTN_REQUIRE_HOPPER();
  for_each_random_case([](std::mt19937_64& rng) {
    expect_random_case_passes(rng, {{64, 64}, {128, 128}, {256, 256}});
  });
}

// The head dims whose rows are not whole 64-dim column blocks (80 and 96: K and V tiles
// column-block-major, a TMA box per page and column block, the second zero-filled past the row;
// Q K^T takes 5 or 6 k16 steps, P V an N of 80 or 96), three of them (192), and V narrower than
// Q and K (192, 128: K and V tiles of different widths, V's pool strides scaled from K's).
const std::vector<std::pair<int, int>> kPrefixSm90NewHeadDims = {
    {80, 80}, {96, 96}, {192, 192}, {192, 128}};

// Random cases (expect_random_case_passes) at the new head dims, as many as the case budget
// allows.
TEST(PrefixPrefillSm90Gpu, RandomBatchesAtHeadDims80To192AndNarrowVMatchTheReference) {
  ATTN_REQUIRE_HOPPER();
  for_each_random_case(
      [](std::mt19937_64& rng) { expect_random_case_passes(rng, kPrefixSm90NewHeadDims); });
}

// At each new head dim: one tile first (OneTileMatchesTheReference's four cases, TMA pages of 64
// and copied pages of 5, the smallest config), then each way the context arrives with the
// default config on uneven lengths (a long context with few new tokens, no context, a decode
// row, a context ending mid-page; GQA 3): copied pages of 5 (NHD), TMA boxes of 16-key pages
// (HND), of whole 64-key pages (NHD) and of a tile's part of 256-key pages (HND, soft-cap and
// sinks), bf16 and fp16 by turns.
TEST(PrefixPrefillSm90Gpu, HeadDims80To192AndNarrowVMatchTheReference) {
  ATTN_REQUIRE_HOPPER();
  const Registry registry = make_registry();
  const Variant& variant = sm90_variant(registry);
  const Target target = device_target();
  std::vector<Case> cases;
  for (const auto& [head_dim, v_head_dim] : kPrefixSm90NewHeadDims) {
    auto narrow = [&, v = v_head_dim](WorkloadSpec spec) {
      if (v != spec.model.head_dim) spec.model.v_head_dim = v;
      return spec;
    };
    for (int page : {64, 5}) {
      for (const auto& [lengths, causal] : std::vector<std::pair<Lengths, bool>>{
               {{{0, 64}}, false}, {{{0, 64}}, true}, {{{64, 64}}, true}, {{{40, 24}}, true}}) {
        WorkloadSpec spec =
            narrow(testing::make_spec(shape_of(1, 1, head_dim, page), lengths, "one-tile"));
        spec.mask.causal = causal;
        cases.push_back({generate_batch(spec), make_config(64, 64, 2, 1)});
      }
    }
    uint64_t seed = uint64_t(head_dim + v_head_dim) * 8;
    for (const auto& [page, layout] : std::vector<std::pair<int, KvLayout>>{
             {5, KvLayout::nhd}, {16, KvLayout::hnd}, {64, KvLayout::nhd}, {256, KvLayout::hnd}}) {
      const DType dtype = page % 32 == 0 ? DType::fp16 : DType::bf16;
      testing::SpecShape shape = shape_of(6, 2, head_dim, page, dtype, layout);  // GQA 3
      shape.seed = ++seed;
      WorkloadSpec spec = narrow(testing::make_spec(
          shape, {{1000, 17}, {0, 300}, {45, 1}, {3, 129}, {200, 70}}, "prefill-sm90-dims"));
      if (page == 256) {
        spec.model.logits_soft_cap = 30.0;
        spec.model.attention_sinks = true;
      }
      const Batch batch = generate_batch(spec);
      cases.push_back({batch, variant.default_config(batch, target)});
    }
  }
  expect_all_pass(cases);
}

// Every (tile_m, tile_n, stages, consumers) the variant accepts on this device, for each head dim
// and dtype (bf16 with pages of 16 keys, NHD; fp16 with pages of 256, HND, soft-cap and sinks), on
// a batch of uneven lengths: a long context with few new tokens, no context, a decode row, a
// context that ends mid-page.
TEST(PrefixPrefillSm90Gpu, EveryAcceptedConfigMatchesTheReference) {
  ATTN_REQUIRE_HOPPER();
  const Registry registry = make_registry();
  const Variant& variant = sm90_variant(registry);
  const Target target = device_target();
  std::vector<Case> cases;
  for (int head_dim : {64, 128, 256}) {
    for (DType dtype : {DType::bf16, DType::fp16}) {
      const bool bf16 = dtype == DType::bf16;
      testing::SpecShape shape = shape_of(6, 2, head_dim, bf16 ? 16 : 256, dtype,
                                          bf16 ? KvLayout::nhd : KvLayout::hnd);  // GQA 3
      shape.seed = uint64_t(head_dim) * 2 + (bf16 ? 0 : 1);
      WorkloadSpec spec = testing::make_spec(
          shape, {{1000, 17}, {0, 300}, {45, 1}, {3, 129}, {200, 70}}, "prefill-sm90-configs");
      if (!bf16) {
        spec.model.logits_soft_cap = 30.0;
        spec.model.attention_sinks = true;
      }
      const Batch batch = generate_batch(spec);
      const auto space = variant.space(batch, target);
      int accepted = 0;
      for (int64_t m : space[0].values)
        for (int64_t n : space[1].values)
          for (int64_t s : space[2].values)
            for (int64_t c : space[3].values) {
              const KernelConfig config = make_config(int(m), int(n), int(s), int(c));
              if (!variant.check(batch, config, target)) continue;
              ++accepted;
              cases.push_back({batch, config});
            }
      EXPECT_EQ(accepted, head_dim == 256 ? 3 : 8) << head_dim;
    }
  }
  expect_all_pass(cases);
}

// Every page size the variant takes, in both layouts, with the default config and with the
// smallest tiles: contexts that end on a page, a tile and mid-page, one shorter than a page.
// Pages under 64 keys take the cp.async path (any size: 1, 5, 31, 48, 63 too), larger ones TMA.
TEST(PrefixPrefillSm90Gpu, EveryPageSizeAndLayoutMatchesTheReference) {
  ATTN_REQUIRE_HOPPER();
  const Registry registry = make_registry();
  const Variant& variant = sm90_variant(registry);
  const Target target = device_target();
  std::vector<Case> cases;
  uint64_t seed = 7;
  for (int page : {1, 5, 8, 16, 31, 32, 48, 63, 64, 128, 256}) {
    for (KvLayout layout : {KvLayout::nhd, KvLayout::hnd}) {
      testing::SpecShape shape = shape_of(8, 2, 128, page, DType::bf16, layout);
      shape.seed = ++seed;
      const Batch batch = generate_batch(testing::make_spec(
          shape, {{0, 33}, {13, 1}, {250, 70}, {1000, 17}, {256, 64}, {512, 130}},
          "prefill-sm90-pages"));
      cases.push_back({batch, variant.default_config(batch, target)});
      cases.push_back({batch, make_config(64, 64, 3, 1)});
    }
  }
  expect_all_pass(cases);
}

// Each feature alone and all together on GQA 6 (a 64-row warpgroup holds 10 tokens and 4
// padding rows; a 128-row tile 21 tokens and 2), with both tile shapes.
TEST(PrefixPrefillSm90Gpu, EachFeatureAloneAndTogetherMatchesTheReference) {
  ATTN_REQUIRE_HOPPER();
  const uint64_t seed = test_seed();
  SCOPED_TRACE("ATTN_TEST_SEED=" + std::to_string(seed));
  testing::SpecShape shape = shape_of(12, 2, 128, 16);
  shape.seed = seed;
  const Lengths lengths = {{0, 1}, {0, 77}, {3, 1}, {31, 40}, {700, 129}, {2500, 5}};
  using Edit = std::function<void(WorkloadSpec&)>;
  const std::vector<std::pair<std::string, Edit>> features = {
      {"plain", [](WorkloadSpec&) {}},
      {"soft-cap", [](WorkloadSpec& s) { s.model.logits_soft_cap = 5.0; }},
      {"sinks", [](WorkloadSpec& s) { s.model.attention_sinks = true; }},
      {"non-causal", [](WorkloadSpec& s) { s.mask.causal = false; }},
      {"hnd fp16",
       [](WorkloadSpec& s) {
         s.kv_cache.layout = KvLayout::hnd;
         s.model.dtype = DType::fp16;
       }},
      {"all",
       [](WorkloadSpec& s) {
         s.kv_cache.layout = KvLayout::hnd;
         s.model.logits_soft_cap = 10.0;
         s.model.attention_sinks = true;
         s.mask.causal = false;
       }},
  };
  std::vector<Case> cases;
  for (const auto& [name, edit] : features) {
    WorkloadSpec spec = testing::make_spec(shape, lengths, "prefill-sm90-" + name);
    edit(spec);
    const Batch batch = generate_batch(spec);
    for (const KernelConfig& config : {make_config(128, 128, 2, 2), make_config(64, 64, 3, 1)})
      cases.push_back({batch, config});
  }
  expect_all_pass(cases);
}

// Tiles that are mostly padding: query_len 1 everywhere (a decode batch), no context with one new
// token (a single key), GQA 16 and GQA 1, pages of 16 and 256 keys, sinks on one of them.
TEST(PrefixPrefillSm90Gpu, SingleTokenAndEmptyContextSequencesMatchTheReference) {
  ATTN_REQUIRE_HOPPER();
  const uint64_t seed = test_seed();
  SCOPED_TRACE("ATTN_TEST_SEED=" + std::to_string(seed));
  std::vector<Case> cases;
  for (int group : {1, 16}) {
    for (int page : {16, 256}) {
      testing::SpecShape shape = shape_of(group * 2, 2, 128, page);
      shape.seed = seed + uint64_t(page);
      for (const Lengths& lengths : {Lengths{{0, 1}}, Lengths{{0, 1}, {1, 1}, {0, 2}},
                                     Lengths{{0, 1}, {3000, 1}, {0, 300}}}) {
        WorkloadSpec spec = testing::make_spec(shape, lengths, "prefill-sm90-edges");
        spec.model.attention_sinks = page == 16;
        const Batch batch = generate_batch(spec);
        for (const KernelConfig& config : {make_config(64, 64, 2, 1), make_config(128, 128, 2, 2)})
          cases.push_back({batch, config});
      }
    }
  }
  expect_all_pass(cases);
}

// The persistent grid: more work items than twice the SMs of an H100 or H200 (each CTA runs
// several), of different key-tile counts (the pipeline's tiles are numbered across items) with
// partial last context tiles (the V rows zeroed item after item), for configs with two Q buffers
// (st2) and one (st3), TMA page boxes in both layouts (pages of 16 and 64) and copied pages (24).
TEST(PrefixPrefillSm90Gpu, ManyItemsPerCtaMatchTheReference) {
  ATTN_REQUIRE_HOPPER();
  const uint64_t seed = test_seed();
  SCOPED_TRACE("ATTN_TEST_SEED=" + std::to_string(seed));
  const int64_t queries[] = {1, 37, 130, 300, 513}, contexts[] = {0, 40, 129, 300, 1000};
  Lengths lengths;
  for (int s = 0; s < 24; ++s) lengths.push_back({contexts[(s / 5 + s) % 5], queries[s % 5]});
  std::vector<Case> cases;
  for (int page : {16, 24, 64}) {
    testing::SpecShape shape =
        shape_of(8, 8, 64, page, DType::bf16, page == 64 ? KvLayout::hnd : KvLayout::nhd);
    shape.seed = seed + uint64_t(page);
    const Batch batch = generate_batch(testing::make_spec(shape, lengths, "prefill-sm90-persist"));
    // Items of the largest tile (128 rows of GQA 1: 128 tokens), in (sequence, token, head)
    // triples.
    EXPECT_GT(prefix_prefill_cta_schedule(batch, 128, 128, 64).size() / 3, 2u * 132u);
    for (const KernelConfig& config : {make_config(128, 128, 2, 2), make_config(128, 128, 3, 2),
                                       make_config(128, 64, 2, 2), make_config(64, 64, 2, 1)})
      cases.push_back({batch, config});
  }
  expect_all_pass(cases);
}

// An fp8 (e4m3) cache, per-tensor or per-head scales: random shapes (GQA 1..12, head dims
// 64/128/256, bf16/fp16 queries, pages copied and TMA-sized, NHD/HND), 1 to 4 sequences with
// contexts 0, around pages and tiles, and long, query lengths from 1, soft-cap, sinks and
// non-causal at random, and a random accepted config; as many cases as the case budget allows.
TEST(PrefixPrefillSm90Gpu, RandomFp8CachesMatchTheReference) {
  ATTN_REQUIRE_HOPPER();
  const RandomDraws fp8_draws = {{1, 2, 3, 5, 8, 12},
                                 {1, 5, 16, 24, 64, 256},
                                 4,
                                 {0, 1, 15, 16, 17, 63, 64, 100, 255, 256, 1031, 2047},
                                 {1, 2, 7, 16, 17, 63, 64, 65, 129, 300}};
  for_each_random_case([&](std::mt19937_64& rng) {
    expect_random_case_passes(rng, {{64, 64}, {128, 128}, {256, 256}}, fp8_draws, true);
  });
}

// An fp8 cache in every config the variant accepts for it (the staging buffer leaves out the
// largest tiles where the producer converts; the dequantisation pass, fp8_dequant=1, takes a
// 16-bit cache's), per head dim: per-head scales with bf16 queries on pages of 16 keys (NHD), per-tensor
// scales with fp16 queries on pages of 5 (HND) with soft-cap and sinks; uneven lengths (a long
// context with few new tokens, no context, a decode row, a context that ends mid-page).
TEST(PrefixPrefillSm90Gpu, Fp8CachesInEveryAcceptedConfigMatchTheReference) {
  ATTN_REQUIRE_HOPPER();
  const Registry registry = make_registry();
  const Variant& variant = sm90_variant(registry);
  const Target target = device_target();
  std::vector<Case> cases;
  for (int head_dim : {64, 128, 256}) {
    for (bool per_head : {true, false}) {
      testing::SpecShape shape =
          shape_of(6, 2, head_dim, per_head ? 16 : 5, per_head ? DType::bf16 : DType::fp16,
                   per_head ? KvLayout::nhd : KvLayout::hnd);
      shape.seed = uint64_t(head_dim) * 2 + (per_head ? 0 : 1);
      WorkloadSpec spec = testing::make_spec(
          shape, {{1000, 17}, {0, 300}, {45, 1}, {3, 129}, {200, 70}}, "prefill-sm90-fp8-configs");
      spec.model.kv_dtype = DType::fp8_e4m3;
      spec.model.kv_scale =
          per_head ? KvScaleGranularity::per_head : KvScaleGranularity::per_tensor;
      if (!per_head) {
        spec.model.logits_soft_cap = 30.0;
        spec.model.attention_sinks = true;
      }
      const Batch batch = generate_batch(spec);
      int accepted = 0;
      const auto space = variant.space(batch, target);
      for (int64_t m : space[0].values)
        for (int64_t n : space[1].values)
          for (int64_t s : space[2].values)
            for (int64_t c : space[3].values)
              for (int64_t dequant : space[4].values) {
                KernelConfig config = make_config(int(m), int(n), int(s), int(c));
                config.set("fp8_dequant", dequant);
                if (!variant.check(batch, config, target)) continue;
                ++accepted;
                cases.push_back({batch, config});
              }
      EXPECT_GT(accepted, 0) << head_dim;
    }
  }
  expect_all_pass(cases);
}

// An fp8 cache at each head dim beyond 64/128/256 (the tiles the codes are converted into are
// column-block-major at 80 and 96, V's narrower at 192x128): per-head scales with bf16 queries on
// pages of 16 keys (NHD), per-tensor scales with fp16 queries on pages of 5 (HND) with soft-cap
// and sinks, uneven lengths, in the smallest config (the producer converting, and the pass) and the
// default one.
TEST(PrefixPrefillSm90Gpu, Fp8CachesAtHeadDims80To192AndNarrowVMatchTheReference) {
  ATTN_REQUIRE_HOPPER();
  const Registry registry = make_registry();
  const Variant& variant = sm90_variant(registry);
  const Target target = device_target();
  std::vector<Case> cases;
  for (const auto& [head_dim, v_head_dim] : kPrefixSm90NewHeadDims) {
    for (bool per_head : {true, false}) {
      testing::SpecShape shape =
          shape_of(6, 2, head_dim, per_head ? 16 : 5, per_head ? DType::bf16 : DType::fp16,
                   per_head ? KvLayout::nhd : KvLayout::hnd);
      shape.seed = uint64_t(head_dim + v_head_dim) * 2 + (per_head ? 0 : 1);
      WorkloadSpec spec = testing::make_spec(
          shape, {{1000, 17}, {0, 300}, {45, 1}, {3, 129}, {200, 70}}, "prefill-sm90-fp8-dims");
      if (v_head_dim != head_dim) spec.model.v_head_dim = v_head_dim;
      spec.model.kv_dtype = DType::fp8_e4m3;
      spec.model.kv_scale =
          per_head ? KvScaleGranularity::per_head : KvScaleGranularity::per_tensor;
      if (!per_head) {
        spec.model.logits_soft_cap = 30.0;
        spec.model.attention_sinks = true;
      }
      const Batch batch = generate_batch(spec);
      for (int dequant : {0, 1}) {
        KernelConfig smallest = make_config(64, 64, 2, 1);
        smallest.set("fp8_dequant", dequant);
        cases.push_back({batch, smallest});
      }
      cases.push_back({batch, variant.default_config(batch, target)});
    }
  }
  expect_all_pass(cases);
}

// The performance case (8 x (2048 cached + 512 new), 32/8 heads, d128, bf16, page 16)
// and the mixed chunked-prefill shape, with the default config, over a bf16 and an fp8 cache.
TEST(PrefixPrefillSm90Gpu, AcceptanceShapesMatchTheReference) {
  ATTN_REQUIRE_HOPPER();
  const Registry registry = make_registry();
  const Variant& variant = sm90_variant(registry);
  const Target target = device_target();
  testing::SpecShape shape = shape_of(32, 8, 128, 16);
  shape.seed = test_seed();
  SCOPED_TRACE("ATTN_TEST_SEED=" + std::to_string(shape.seed));
  Lengths mixed(40, {1500, 1});
  mixed.push_back({2048, 512});
  mixed.push_back({0, 512});
  std::vector<Case> cases;
  for (const Lengths& lengths : {Lengths(8, {2048, 512}), mixed}) {
    for (bool fp8 : {false, true}) {
      WorkloadSpec spec = testing::make_spec(shape, lengths, "prefill-sm90-acceptance");
      if (fp8) {
        spec.model.kv_dtype = DType::fp8_e4m3;
        spec.model.kv_scale = KvScaleGranularity::per_head;
      }
      const Batch batch = generate_batch(spec);
      cases.push_back({batch, variant.default_config(batch, target)});
    }
  }
  expect_all_pass(cases);
}

}  // namespace
}  // namespace attn
