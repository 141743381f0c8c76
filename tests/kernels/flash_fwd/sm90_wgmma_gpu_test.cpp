// flash_fwd.sm90_wgmma on a Hopper GPU (skipped elsewhere, with the reason): random
// variable-length batches (lengths that are multiples of no tile, contexts that shift the causal
// diagonal, several sequences so TMA boxes cross into the next sequence's rows), GQA ratios
// including non powers of two, head dims 64/128/256 (and 80/96/192 and 192 with a V of 128:
// their own tests below), bf16 and fp16, causal and not, and every
// config of the space (without a causal mask at head dim 128 those over tiles wider than 64 keys
// narrow each item's last key tile: flash_fwd::sm90_wgmma::narrows_last_tile). Every run writes
// into a poisoned output and a NaN-filled LSE buffer and is compared with the oracle
// (flash_fwd_gpu_check.hpp).
#include <gtest/gtest.h>

#include <tuple>

#include "kernels/flash_fwd/sm90_wgmma_traits.hpp"
#include "tests/kernels/flash_fwd/flash_fwd_gpu_check.hpp"

namespace attn {
namespace {

using namespace flash_fwd_testing;

const FlashFwdVariant& sm90_variant(const Registry& registry) {
  return dynamic_cast<const FlashFwdVariant&>(*registry.find("flash_fwd.sm90_wgmma"));
}

#define ATTN_REQUIRE_HOPPER()                                           \
  do {                                                                  \
    ATTN_REQUIRE_GPU();                                                 \
    if (testing::gpu().device().arch() != "sm_90a")                     \
      GTEST_SKIP() << "flash_fwd.sm90_wgmma needs sm_90a; this GPU is " \
                   << testing::gpu().device().arch();                   \
  } while (0)

KernelConfig make_config(int tile_m, int tile_n, int stages, int consumers) {
  return KernelConfig{
      {"tile_m", tile_m}, {"tile_n", tile_n}, {"stages", stages}, {"consumers", consumers}};
}

void expect_matches_reference(const Batch& batch, const KernelConfig& config) {
  const Registry registry = make_registry();
  expect_flash_fwd_matches_reference(sm90_variant(registry), batch, config);
}

// The smallest cases first, so a broken layout shows on a batch that is easy to read: one
// sequence of one tile (64 queries, 64 keys, head_dim 64, one head), non-causal then causal, with
// the simplest config (one consumer, 64 keys per stage).
TEST(FlashFwdSm90Gpu, OneTileMatchesTheReference) {
  ATTN_REQUIRE_HOPPER();
  for (int head_dim : {64, 128, 256}) {
    for (bool causal : {false, true}) {
      testing::SpecShape shape;
      shape.q_heads = 1;
      shape.kv_heads = 1;
      shape.head_dim = head_dim;
      const Batch batch = generate_batch(prefill_spec(shape, {{0, 64}}, causal));
      expect_matches_reference(batch, make_config(64, 64, 2, 1));
    }
  }
}

// The head dims whose rows are not whole 64-dim column blocks (80 and 96: the second block is TMA's
// zero fill past the row, Q K^T takes 5 or 6 k16 steps, P V an N of 80 or 96) or are three of them
// (192), and V narrower than Q and K (192, 128: K and V tiles of different widths).
const std::vector<std::pair<int, int>> kFlashSm90NewHeadDims = {
    {80, 80}, {96, 96}, {192, 192}, {192, 128}};

WorkloadSpec flash_sm90_with_v_head_dim(WorkloadSpec spec, int v_head_dim) {
  if (v_head_dim != spec.model.head_dim) spec.model.v_head_dim = v_head_dim;
  return spec;
}

// One tile at each new head dim first (as OneTileMatchesTheReference), then, on a batch of
// uneven lengths (a one-token sequence, contexts that shift the causal diagonal, GQA 3), the
// default config and the smallest one (one consumer, 64-key tiles), causal (bf16) and not (fp16).
TEST(FlashFwdSm90Gpu, HeadDims80To192AndNarrowVMatchTheReference) {
  ATTN_REQUIRE_HOPPER();
  const Registry registry = make_registry();
  const FlashFwdVariant& variant = sm90_variant(registry);
  const Target target = Target::cuda(testing::gpu().device());
  std::vector<std::pair<Batch, KernelConfig>> cases;
  for (const auto& [head_dim, v_head_dim] : kFlashSm90NewHeadDims) {
    for (bool causal : {false, true}) {
      testing::SpecShape shape;
      shape.q_heads = 1;
      shape.kv_heads = 1;
      shape.head_dim = head_dim;
      cases.push_back({generate_batch(flash_sm90_with_v_head_dim(
                           prefill_spec(shape, {{0, 64}}, causal), v_head_dim)),
                       make_config(64, 64, 2, 1)});
      shape.q_heads = 6;
      shape.kv_heads = 2;  // GQA 3
      shape.dtype = causal ? DType::bf16 : DType::fp16;
      shape.seed = uint64_t(head_dim + v_head_dim) * 2 + causal;
      const Batch batch = generate_batch(flash_sm90_with_v_head_dim(
          prefill_spec(shape, {{0, 300}, {45, 1}, {3, 129}, {0, 17}, {200, 70}}, causal),
          v_head_dim));
      cases.push_back({batch, variant.default_config(batch, target)});
      cases.push_back({batch, make_config(64, 64, 2, 1)});
    }
  }
  for (const auto& [batch, config] : cases) {
    const Support support = variant.check(batch, config, target);
    ASSERT_TRUE(support.ok) << config.key() << " d" << batch.spec.model.head_dim << ": "
                            << support.reason;
  }
  expect_all_match_reference(variant, cases);
}

// Random shapes and lengths (random_prefill_batch) at the new head dims with a random accepted
// config, as many as the case budget allows (tests/gpu_case_budget.hpp).
TEST(FlashFwdSm90Gpu, RandomBatchesAtHeadDims80To192AndNarrowVMatchTheReference) {
  ATTN_REQUIRE_HOPPER();
  const Registry registry = make_registry();
  expect_random_batches_match_reference(sm90_variant(registry), 20261129, kFlashSm90NewHeadDims);
}

// Random shapes and lengths (random_prefill_batch) with a random accepted config, as many as the
// case budget allows (tests/gpu_case_budget.hpp).
TEST(FlashFwdSm90Gpu, RandomBatchesShapesAndConfigsMatchTheReference) {
  ATTN_REQUIRE_HOPPER();
  const Registry registry = make_registry();
  expect_random_batches_match_reference(sm90_variant(registry), 20261290, kPowerOfTwoHeadDims);
}

// Random shapes and lengths over an fp8 cache (per-tensor or per-head scales; a pass converts the
// gathered codes to 16-bit before the kernel), every head dim and the narrower V, with a random
// accepted config, as many as the case budget allows.
TEST(FlashFwdSm90Gpu, RandomFp8CachesMatchTheReference) {
  ATTN_REQUIRE_HOPPER();
  const Registry registry = make_registry();
  std::vector<std::pair<int, int>> dims = kPowerOfTwoHeadDims;
  dims.insert(dims.end(), kFlashSm90NewHeadDims.begin(), kFlashSm90NewHeadDims.end());
  expect_random_batches_match_reference(sm90_variant(registry), 20261130, dims, true);
}

// An fp8 cache at every head dim: per-head scales with bf16 queries, causal, and one per-tensor
// scale with fp16 queries, not causal (GQA 3, uneven lengths), in the default config and the
// smallest; each q head's kv head's scales (stacked and shared-rows items at head dim 64 too).
TEST(FlashFwdSm90Gpu, Fp8CachesAtEveryHeadDimMatchTheReference) {
  ATTN_REQUIRE_HOPPER();
  const Registry registry = make_registry();
  const FlashFwdVariant& variant = sm90_variant(registry);
  const Target target = Target::cuda(testing::gpu().device());
  std::vector<std::pair<Batch, KernelConfig>> cases;
  std::vector<std::pair<int, int>> dims = kPowerOfTwoHeadDims;
  dims.insert(dims.end(), kFlashSm90NewHeadDims.begin(), kFlashSm90NewHeadDims.end());
  for (const auto& [head_dim, v_head_dim] : dims) {
    for (bool causal : {true, false}) {
      testing::SpecShape shape =
          testing::gqa3_shape(head_dim, causal ? DType::bf16 : DType::fp16,
                              uint64_t(head_dim + v_head_dim) * 2 + causal + 7);
      WorkloadSpec spec = flash_sm90_with_v_head_dim(
          prefill_spec(shape, {{0, 300}, {45, 1}, {3, 129}, {0, 17}, {200, 70}}, causal),
          v_head_dim);
      spec.model.kv_dtype = DType::fp8_e4m3;
      spec.model.kv_scale = causal ? KvScaleGranularity::per_head : KvScaleGranularity::per_tensor;
      const Batch batch = generate_batch(spec);
      cases.push_back({batch, variant.default_config(batch, target)});
      cases.push_back({batch, make_config(64, 64, 2, 1)});
    }
  }
  expect_all_match_reference(variant, cases);
}

// Every (tile_m, tile_n, stages, consumers) the variant accepts on this device, for each head
// dim, on a batch whose lengths are multiples of no tile (with a one-token sequence, and a
// sequence shorter than one warpgroup's rows after a long one): the whole compiled space runs,
// each config twice, causal and not, in bf16 or fp16 by turns (every config in both dtypes was 192
// compiles, a third of a fresh machine's GPU suite). The programs are compiled in parallel first.
TEST(FlashFwdSm90Gpu, EveryAcceptedConfigMatchesTheReference) {
  ATTN_REQUIRE_HOPPER();
  const Registry registry = make_registry();
  const FlashFwdVariant& variant = sm90_variant(registry);
  const Target target = Target::cuda(testing::gpu().device());
  std::vector<std::pair<Batch, KernelConfig>> cases;
  for (int head_dim : {64, 128, 256}) {
    // Each config runs on batches 0 and 1, or on 2 and 3: causal and not.
    std::vector<Batch> batches;
    for (const auto& [dtype, causal] : {std::pair{DType::bf16, true},
                                        {DType::fp16, false},
                                        {DType::fp16, true},
                                        {DType::bf16, false}}) {
      testing::SpecShape shape = testing::gqa3_shape(
          head_dim, dtype, uint64_t(head_dim) * 4 + 2 * int(dtype == DType::fp16) + causal);
      batches.push_back(generate_batch(
          prefill_spec(shape, {{0, 300}, {45, 1}, {3, 129}, {0, 17}, {200, 70}}, causal)));
    }
    add_rotated_cases(variant, batches, target, 2, cases);
  }
  EXPECT_EQ(cases.size(), size_t(2 * (26 + 17 + 5)));  // see FlashFwdSm90Gating in the CPU test
  // The narrowed last tiles run too: in 176-key tiles the sequences' last tiles hold 124, 46,
  // 132, 17 and 94 keys, so every item's last tile takes 144 (LAST_KEYS), one-tile items too.
  int narrowed = 0;
  for (const auto& [batch, config] : cases)
    narrowed += int(variant.programs(batch, config, target).front().name.find(".last") !=
                    std::string::npos);
  EXPECT_GT(narrowed, 0);
  expect_all_match_reference(variant, cases);
}

// Bottom-right alignment: queries on top of a context see context + i + 1 keys, with the
// diagonal at every offset within the tiles; GQA 5; contexts longer than a tile and shorter.
TEST(FlashFwdSm90Gpu, CausalDiagonalAlignedToTheBottomRight) {
  ATTN_REQUIRE_HOPPER();
  testing::SpecShape shape;
  shape.q_heads = 10;
  shape.kv_heads = 2;
  shape.head_dim = 128;
  shape.page_size = 16;
  for (const KernelConfig& config :
       {make_config(128, 128, 2, 2), make_config(64, 64, 3, 1), make_config(128, 64, 3, 2)}) {
    const Batch batch = generate_batch(
        prefill_spec(shape, {{300, 129}, {5, 1}, {1000, 700}, {1, 64}, {63, 65}}, true));
    expect_matches_reference(batch, config);
  }
}

// The persistent grid: more work items (query tiles x q heads) than twice the SMs of an H100 or
// H200, so each CTA runs several, of key-tile counts that differ from item to item (the
// pipeline's stages and phases are numbered across items): 24 sequences of uneven lengths
// (queries of 1 to 513 tokens on contexts of 0 to 1000), GQA 4, causal (bf16) and not (fp16);
// configs with two Q buffers and with one (flash_fwd::sm90_wgmma::q_buffers), one, two and three
// consumers, head dims 64, 128 and 256; with and without LSE; each launched twice (the second
// launch runs on the work counters the first one zeroed).
TEST(FlashFwdSm90Gpu, ManyItemsPerCtaMatchTheReference) {
  ATTN_REQUIRE_HOPPER();
  const Registry registry = make_registry();
  const FlashFwdVariant& variant = sm90_variant(registry);
  const int64_t queries[] = {1, 37, 130, 300, 513}, contexts[] = {0, 40, 129, 300, 1000};
  std::vector<std::pair<int64_t, int64_t>> lengths;
  for (int s = 0; s < 24; ++s) lengths.push_back({contexts[(s / 5 + s) % 5], queries[s % 5]});
  const std::vector<std::pair<int, KernelConfig>> configs = {
      {128, make_config(128, 128, 2, 2)},  // two Q buffers
      {128, make_config(128, 128, 3, 2)},  // one
      {128, make_config(64, 64, 2, 1)},    // two
      {128, make_config(64, 128, 3, 1)},   // two
      {256, make_config(128, 64, 2, 2)},   // one
      {256, make_config(64, 64, 2, 1)},    // two
      {64, make_config(192, 128, 2, 3)},   // two, three consumers taking turns
      {128, make_config(192, 80, 4, 3)},   // one
  };
  std::vector<std::pair<Batch, KernelConfig>> cases;
  std::vector<RunOptions> runs;
  for (bool causal : {true, false}) {
    for (size_t c = 0; c < configs.size(); ++c) {
      const auto& [head_dim, config] = configs[c];
      testing::SpecShape shape;
      shape.q_heads = 8;
      shape.kv_heads = 2;
      shape.head_dim = head_dim;
      shape.dtype = causal ? DType::bf16 : DType::fp16;
      shape.seed = uint64_t(head_dim) + causal;
      cases.push_back({generate_batch(prefill_spec(shape, lengths, causal)), config});
      const size_t tiles = flash_fwd_tile_schedule(cases.back().first, int(config.get("tile_m")),
                                                   int(config.get("tile_n")))
                               .size() /
                           2;
      EXPECT_GT(tiles * 8, 2u * 132u) << config.key();
      RunOptions run;
      run.lse = (c + causal) % 2 == 0;  // each config with LSE once and without once
      run.launches = 2;
      runs.push_back(run);
    }
  }
  compile_all(variant, cases);
  for (size_t i = 0; i < cases.size(); ++i)
    expect_flash_fwd_matches_reference(variant, cases[i].first, cases[i].second, runs[i]);
}

// The top tile of a sequence 64 rows past a multiple of the tile (64, 256, 448, 640, 1024 for 192
// rows; 64, 320, 1088 for 128; query tiles end at the sequence's last row) holds only the last
// warpgroup's rows. At head dim 64 with a causal mask such tiles of up to that many consecutive q
// heads are stacked in one item (flash_fwd::sm90_wgmma::stacks_heads; 8 heads: stacks of 3, 3 and
// 2, or four of 2; 5 heads: 3 and 2, or 2, 2 and 1), over contexts of 0 to 1000 keys (one key tile
// to several, the diagonal anywhere in them), bf16. Without the mask (fp16) three consumers share
// the tile's rows (flash_fwd::sm90_wgmma::shares_rows: the warpgroups split its key tiles and merge
// through shared memory) and two take the ordinary path. Two and three consumers in 2 to 4 stages,
// GQA 8 / 2 (stacks that span two kv heads) and 5 / 5, with and without LSE, two launches each.
TEST(FlashFwdSm90Gpu, TopTilesStackedOrSharedMatchTheReference) {
  ATTN_REQUIRE_HOPPER();
  const Registry registry = make_registry();
  const FlashFwdVariant& variant = sm90_variant(registry);
  const std::vector<std::pair<int64_t, int64_t>> lengths = {
      {0, 256}, {0, 448}, {300, 64}, {1000, 640}, {5, 1024},
      {0, 37},  {129, 1}, {0, 832},  {0, 320},    {77, 1088}};
  std::vector<std::pair<Batch, KernelConfig>> cases;
  std::vector<RunOptions> runs;
  for (bool causal : {true, false}) {
    for (const auto& [consumers, tile_n, stages] :
         {std::tuple{3, 128, 4}, {3, 64, 2}, {3, 80, 3}, {2, 128, 4}, {2, 96, 2}}) {
      EXPECT_EQ(flash_fwd::sm90_wgmma::stacks_heads(64, 64 * consumers, causal), causal);
      const KernelConfig config = make_config(64 * consumers, tile_n, stages, consumers);
      testing::SpecShape shape;
      shape.q_heads = tile_n % 128 == 0 ? 8 : 5;
      shape.kv_heads = tile_n % 128 == 0 ? 2 : 5;
      shape.head_dim = 64;
      shape.dtype = causal ? DType::bf16 : DType::fp16;
      shape.seed = uint64_t(tile_n + consumers) + causal;
      cases.push_back({generate_batch(prefill_spec(shape, lengths, causal)), config});
      RunOptions run;
      run.lse = (tile_n / 16 + causal) % 2 == 0;
      run.launches = 2;
      runs.push_back(run);
    }
  }
  compile_all(variant, cases);
  for (size_t i = 0; i < cases.size(); ++i)
    expect_flash_fwd_matches_reference(variant, cases[i].first, cases[i].second, runs[i]);
}

// The path `attn-bench run` takes, with the default config.
TEST(FlashFwdSm90Gpu, EvaluatorVerifiesAndTimesTheDefaultConfig) {
  ATTN_REQUIRE_HOPPER();
  const Registry registry = make_registry();
  expect_evaluator_passes_default_config(sm90_variant(registry));
}

// Large: one 8192-token causal prompt and four 2000-token non-causal ones, 16 heads, head dim
// 128, bf16, default configs; and head dim 256 at 4096 tokens.
TEST(FlashFwdSm90Gpu, LargeBatchesMatchTheReference) {
  ATTN_REQUIRE_HOPPER();
  const Registry registry = make_registry();
  const Variant& variant = sm90_variant(registry);
  const Target target = Target::cuda(testing::gpu().device());
  testing::SpecShape shape;
  shape.q_heads = 16;
  shape.kv_heads = 16;
  shape.head_dim = 128;
  const Batch causal = generate_batch(prefill_spec(shape, {{0, 8192}}, true));
  expect_matches_reference(causal, variant.default_config(causal, target));
  const Batch full = generate_batch(
      prefill_spec(shape, std::vector<std::pair<int64_t, int64_t>>(4, {0, 2000}), false));
  expect_matches_reference(full, variant.default_config(full, target));
  shape.head_dim = 256;
  shape.q_heads = 8;
  shape.kv_heads = 2;
  const Batch wide = generate_batch(prefill_spec(shape, {{0, 4096}}, true));
  expect_matches_reference(wide, variant.default_config(wide, target));
}

}  // namespace
}  // namespace attn
