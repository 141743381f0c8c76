// blocksparse.sm90_wgmma on a Hopper GPU (skipped elsewhere, with the reason): one tile first;
// random variable-length prefill batches (contexts that put the first new token anywhere in a
// block, so the first tile's Q box starts inside the context or before the tensor; lengths off
// every tile; several sequences so key tiles cross into the next sequence's rows), GQA ratios
// including non powers of two, head dims 64/128 (and 80/96/192/256 and 192 with a V of 128:
// their own tests below), bf16 and fp16, causal and not, over random Phi-3
// layouts and random lower-triangular ones (empty rows, dropped diagonals) of blocks 64 and 128,
// 16-bit and fp8 caches (a pass converts the codes first), with random configs and every accepted
// config (one and two consumers, one and two CTAs per SM); many more work items than CTAs (each
// persistent CTA runs several, its key tiles numbered across them); and repeated launches (the work
// counter resets itself). Every run writes into a poisoned output (0xFF: NaN in bf16 and fp16) and
// is compared with the oracle (the CPU reference, or the tiled GPU reference for a large batch; no
// NaN, every row within the dtype's tolerance). Then issue 7's two benchmark shapes through the
// Evaluator against the tiled GPU reference, with two consumers and with one at both CTA
// occupancies.
#include <gtest/gtest.h>

#include <optional>

#include "tests/kernels/blocksparse/blocksparse_gpu_check.hpp"
#include "workloads/presets.hpp"

namespace attn {
namespace {

using namespace blocksparse_testing;

#define ATTN_REQUIRE_HOPPER()                                             \
  do {                                                                    \
    ATTN_REQUIRE_GPU();                                                   \
    if (testing::gpu().device().arch() != "sm_90a")                       \
      GTEST_SKIP() << "blocksparse.sm90_wgmma needs sm_90a; this GPU is " \
                   << testing::gpu().device().arch();                     \
  } while (0)

const Variant& sm90_variant(const Registry& registry) {
  return *registry.find("blocksparse.sm90_wgmma");
}

KernelConfig make_config(int tile_n, int stages, int ctas_per_sm, int consumers) {
  return KernelConfig{{"tile_n", tile_n},
                      {"stages", stages},
                      {"ctas_per_sm", ctas_per_sm},
                      {"consumers", consumers}};
}

// v_head_dim: V's width where narrower than Q and K's (0: as wide). fp8_scales: an fp8 e4m3
// cache with those scales.
Batch sparse_batch(const testing::SpecShape& shape,
                   const std::vector<std::pair<int64_t, int64_t>>& sequences,
                   const BlockSparseSpec& layout, bool causal, int v_head_dim = 0,
                   std::optional<KvScaleGranularity> fp8_scales = std::nullopt) {
  WorkloadSpec spec = testing::make_spec(shape, sequences, "bs-sm90-gpu");
  spec.mask.block_sparse = layout;
  if (v_head_dim > 0 && v_head_dim != shape.head_dim) spec.model.v_head_dim = v_head_dim;
  if (fp8_scales) {
    spec.model.kv_dtype = DType::fp8_e4m3;
    spec.model.kv_scale = *fp8_scales;
  }
  Batch batch = generate_batch(spec);
  batch.causal = causal;  // workloads with a layout are causal; the kernel also runs non-causal
  return batch;
}

// Asserts that the variant takes every case, compiles their programs in parallel, then checks each
// against the oracle.
void expect_all_match_reference(const Variant& variant,
                                const std::vector<std::pair<Batch, KernelConfig>>& cases) {
  const Target target = Target::cuda(testing::gpu().device());
  for (const auto& [batch, config] : cases) {
    const Support support = variant.check(batch, config, target);
    ASSERT_TRUE(support.ok) << config.key() << " d" << batch.spec.model.head_dim << ": "
                            << support.reason;
  }
  compile_cases_in_parallel(variant, cases);
  for (const auto& [batch, config] : cases) expect_matches_reference(variant, batch, config);
}

// The smallest cases first, so a broken layout or pipeline shows on a batch that is easy to read:
// one head, one sequence of 64 tokens, one block of 64 (a single key tile, the diagonal one),
// head dims 64 and 128, non-causal then causal, with one consumer at one and two CTAs per SM and
// with two consumers (the second one's rows hold no token), at 64- and 128-key tiles (one
// padded); then 128 tokens with two blocks of 64 (one kept block before the diagonal: a run seen
// whole, then a masked one; with two consumers the first one hides the second one's diagonal
// run; a 128-key tile gathers both).
TEST(BlockSparseSm90Gpu, OneTileMatchesTheReference) {
  ATTN_REQUIRE_HOPPER();
  const Registry registry = make_registry();
  const Variant& variant = sm90_variant(registry);
  std::vector<std::pair<Batch, KernelConfig>> cases;
  for (int head_dim : {64, 128}) {
    for (bool causal : {false, true}) {
      for (const KernelConfig& config : {make_config(64, 2, 1, 1), make_config(64, 2, 2, 1),
                                         make_config(64, 2, 1, 2), make_config(128, 2, 1, 2)}) {
        testing::SpecShape shape;
        shape.q_heads = 1;
        shape.kv_heads = 1;
        shape.head_dim = head_dim;
        for (int64_t tokens : {64, 128}) {
          cases.push_back(
              {sparse_batch(shape, {{0, tokens}}, phi3_layout(64, 2, 1), causal), config});
        }
      }
    }
  }
  expect_all_match_reference(variant, cases);
}

// The head dims past 64 and 128: rows that are not whole 64-dim column blocks (80 and 96: the
// second block is TMA's zero fill past the row, Q K^T takes 5 or 6 k16 steps, P V an N of 80 or
// 96), three or four of them (192, 256: 64-key tiles only at 256), and V narrower than Q and K
// (192, 128).
const std::vector<std::pair<int, int>> kBlockSparseSm90NewHeadDims = {
    {80, 80}, {96, 96}, {192, 192}, {256, 256}, {192, 128}};

// One tile at each new head dim (as OneTileMatchesTheReference, 64-key tiles), then, on lengths
// off every tile with a one-token sequence and a context ending mid-block (GQA 3), the default
// config and one consumer at one CTA per SM, causal (bf16, Phi-3 blocks of 64) and not (fp16,
// random blocks of 128).
TEST(BlockSparseSm90Gpu, HeadDims80To256AndNarrowVMatchTheReference) {
  ATTN_REQUIRE_HOPPER();
  const Registry registry = make_registry();
  const Variant& variant = sm90_variant(registry);
  const Target target = Target::cuda(testing::gpu().device());
  std::mt19937_64 rng(80);
  std::vector<std::pair<Batch, KernelConfig>> cases;
  for (const auto& [head_dim, v_head_dim] : kBlockSparseSm90NewHeadDims) {
    for (bool causal : {false, true}) {
      testing::SpecShape shape;
      shape.q_heads = 1;
      shape.kv_heads = 1;
      shape.head_dim = head_dim;
      cases.push_back({sparse_batch(shape, {{0, 128}}, phi3_layout(64, 2, 1), causal, v_head_dim),
                       make_config(64, 2, 1, 1)});
      shape.q_heads = 6;
      shape.kv_heads = 2;  // GQA 3
      shape.dtype = causal ? DType::bf16 : DType::fp16;
      shape.seed = uint64_t(head_dim + v_head_dim) * 2 + causal;
      Batch batch = sparse_batch(shape, {{0, 300}, {45, 1}, {3, 129}, {70, 217}},
                                 phi3_layout(causal ? 64 : 128, 2, 3), causal, v_head_dim);
      if (!causal) randomise_layout(batch, rng, 0.4);
      cases.push_back({batch, variant.default_config(batch, target)});
      cases.push_back({batch, make_config(64, 2, 1, 1)});
    }
  }
  expect_all_match_reference(variant, cases);
}

// Random shapes, lengths and layouts of blocks 64 and 128 (random_batch) at the new head dims,
// with a random accepted config, as many as the case budget allows.
TEST(BlockSparseSm90Gpu, RandomBatchesAtHeadDims80To256AndNarrowVMatchTheReference) {
  ATTN_REQUIRE_HOPPER();
  const Registry registry = make_registry();
  expect_random_prefill_batches_match(sm90_variant(registry), 20261130, {64, 128},
                                      kBlockSparseSm90NewHeadDims);
}

// Over fp8 e4m3 caches (a pass converts the gathered codes to 16-bit before the kernel; per-tensor
// and per-head scales at random, bf16 and fp16 queries): random shapes, lengths and layouts of
// blocks 64 and 128 at every head dim with a random accepted config, then every head dim (256
// included) with the default config and the smallest, causal with per-head scales and bf16
// queries, not causal with one per-tensor scale and fp16 (GQA 3, lengths off every tile, a
// context ending mid-block).
TEST(BlockSparseSm90Gpu, RandomFp8CachesMatchTheReference) {
  ATTN_REQUIRE_HOPPER();
  const Registry registry = make_registry();
  std::vector<std::pair<int, int>> dims = {{64, 64}, {128, 128}};
  dims.insert(dims.end(), kBlockSparseSm90NewHeadDims.begin(), kBlockSparseSm90NewHeadDims.end());
  expect_random_prefill_batches_match(sm90_variant(registry), 20261201, {64, 128}, dims, true);
}

TEST(BlockSparseSm90Gpu, Fp8CachesAtEveryHeadDimMatchTheReference) {
  ATTN_REQUIRE_HOPPER();
  const Registry registry = make_registry();
  const Variant& variant = sm90_variant(registry);
  const Target target = Target::cuda(testing::gpu().device());
  std::vector<std::pair<int, int>> dims = {{64, 0}, {128, 0}};
  dims.insert(dims.end(), kBlockSparseSm90NewHeadDims.begin(), kBlockSparseSm90NewHeadDims.end());
  std::vector<std::pair<Batch, KernelConfig>> cases;
  for (const auto& [head_dim, v_head_dim] : dims) {
    for (bool causal : {true, false}) {
      testing::SpecShape shape =
          testing::gqa3_shape(head_dim, causal ? DType::bf16 : DType::fp16,
                              uint64_t(head_dim + v_head_dim) * 2 + causal + 11);
      const Batch batch = sparse_batch(
          shape, {{0, 300}, {45, 1}, {3, 129}, {70, 217}}, phi3_layout(64, 2, 3), causal,
          v_head_dim, causal ? KvScaleGranularity::per_head : KvScaleGranularity::per_tensor);
      ASSERT_TRUE(batch.kv_fp8());
      cases.push_back({batch, variant.default_config(batch, target)});
      cases.push_back({batch, make_config(64, 2, 1, 1)});
    }
  }
  expect_all_match_reference(variant, cases);
}

// Random shapes, lengths and layouts of blocks 64 and 128 (random_batch) with a random accepted
// config, as many as the case budget allows (tests/gpu_case_budget.hpp).
TEST(BlockSparseSm90Gpu, RandomBatchesLayoutsAndConfigsMatchTheReference) {
  ATTN_REQUIRE_HOPPER();
  const Registry registry = make_registry();
  expect_random_prefill_batches_match(sm90_variant(registry), 20261301, {64, 128},
                                      {{64, 64}, {128, 128}});
}

// Every accepted config (tile_n, stages, ctas_per_sm, consumers), for each head dim, on lengths
// that are multiples of no tile, a one-token sequence and a context ending mid-block; each config
// twice, causal and not, over eight batches in turn: bf16 and fp16, a Phi-3 layout of 64-token
// blocks (128-key tiles gather two blocks) and a random one of 128-token blocks.
TEST(BlockSparseSm90Gpu, EveryAcceptedConfigMatchesTheReference) {
  ATTN_REQUIRE_HOPPER();
  const Registry registry = make_registry();
  const Variant& variant = sm90_variant(registry);
  const Target target = Target::cuda(testing::gpu().device());
  std::mt19937_64 rng(6);
  std::vector<std::pair<Batch, KernelConfig>> cases;
  struct Kind {
    DType dtype;
    bool causal;
    int block;
  };
  // Each config runs on batches 0 and 1, 2 and 3, 4 and 5, or 6 and 7: causal and not.
  const Kind kinds[] = {{DType::bf16, true, 64},  {DType::fp16, false, 128},
                        {DType::fp16, true, 128}, {DType::bf16, false, 64},
                        {DType::bf16, true, 128}, {DType::fp16, false, 64},
                        {DType::fp16, true, 64},  {DType::bf16, false, 128}};
  for (int head_dim : {64, 128}) {
    std::vector<Batch> batches;
    for (const Kind& kind : kinds) {
      testing::SpecShape shape =
          testing::gqa3_shape(head_dim, kind.dtype,
                              uint64_t(head_dim) * 8 + 4 * (kind.dtype == DType::fp16) +
                                  2 * kind.causal + (kind.block == 128));
      Batch batch = sparse_batch(shape, {{0, 300}, {45, 1}, {3, 129}, {70, 217}},
                                 phi3_layout(kind.block, 2, 3), kind.causal);
      if (kind.block == 128) randomise_layout(batch, rng, 0.4);
      batches.push_back(std::move(batch));
    }
    for (auto& [b, config] : testing::rotated_config_cases(variant, batches, target, 2))
      cases.push_back({batches[b], config});
  }
  // 17 configs at d64, 11 at d128 (every batch accepts them all), two batches each.
  EXPECT_EQ(cases.size(), size_t(2 * (17 + 11)));
  expect_all_match_reference(variant, cases);
}

// Queries after a context (q shorter than k, causal aligned to the bottom right): contexts that end
// mid-block and mid-tile, a first sequence with a context (its first tile's Q box starts before
// the tensor: TMA's zero fill), decode rows, GQA 5; two consumers, and one at both occupancies.
TEST(BlockSparseSm90Gpu, QueriesAfterAContextMatchTheReference) {
  ATTN_REQUIRE_HOPPER();
  const Registry registry = make_registry();
  const Variant& variant = sm90_variant(registry);
  testing::SpecShape shape;
  shape.q_heads = 10;
  shape.kv_heads = 2;
  shape.head_dim = 128;
  shape.page_size = 16;
  std::vector<std::pair<Batch, KernelConfig>> cases;
  for (const KernelConfig& config : {make_config(64, 2, 2, 1), make_config(64, 4, 1, 1),
                                     make_config(64, 4, 1, 2), make_config(128, 2, 1, 2)}) {
    cases.push_back({sparse_batch(shape, {{300, 129}, {5, 1}, {1000, 700}, {1, 64}, {63, 65}},
                                  phi3_layout(64, 4, 3), true),
                     config});
    cases.push_back(
        {sparse_batch(shape, {{37, 100}, {2000, 1}, {130, 257}}, phi3_layout(128, 2, 2, 2), true),
         config});
  }
  expect_all_match_reference(variant, cases);
}

// Large: one 8192-token prompt with seed 003's layout (128 query tiles per head, rows with up to
// 16 local + 15 vertical blocks) and a 1000-token chunk after a 3000-token context, against the
// tiled GPU reference.
TEST(BlockSparseSm90Gpu, LargeBatchesMatchTheReference) {
  ATTN_REQUIRE_HOPPER();
  const Registry registry = make_registry();
  const Variant& variant = sm90_variant(registry);
  const Target target = Target::cuda(testing::gpu().device());
  testing::SpecShape shape;
  shape.q_heads = 8;
  shape.kv_heads = 2;
  shape.head_dim = 128;
  const Batch batch = sparse_batch(shape, {{0, 8192}, {3000, 1000}}, phi3_layout(64, 16, 8), true);
  expect_matches_reference(variant, batch, variant.default_config(batch, target));
}

// Many more work items than CTAs, so every persistent CTA draws several (its key tiles numbered
// across them, the next item's Q loaded while the last one ends): 40 q heads over 8 kv heads and
// uneven sequences (a long prompt, chunks after contexts, one-token rows) give thousands of items
// against 132 or 264 CTAs; each config runs three times on the same output (the work counter must
// reset itself after every launch), then is checked.
TEST(BlockSparseSm90Gpu, ManyItemsPerCtaMatchTheReferenceAcrossLaunches) {
  ATTN_REQUIRE_HOPPER();
  const Registry registry = make_registry();
  const Variant& variant = sm90_variant(registry);
  testing::SpecShape shape;
  shape.q_heads = 40;
  shape.kv_heads = 8;
  shape.head_dim = 64;
  for (bool causal : {true, false}) {
    const Batch batch = sparse_batch(shape, {{0, 2048}, {700, 513}, {3, 1}, {129, 300}, {0, 77}},
                                     phi3_layout(64, 4, 5), causal);
    for (const KernelConfig& config : {make_config(128, 4, 1, 2), make_config(64, 3, 1, 2),
                                       make_config(64, 4, 2, 1), make_config(64, 2, 1, 1)}) {
      expect_matches_reference(variant, batch, config, /*launches=*/3);
    }
  }
}

// Issue 7's benchmark cases as `attn-bench run` runs them (the presets: 4 x 8192 and 2 x 16384
// tokens, 32/8 heads, d128, bf16, blocks of 64, local 16, vertical stride 8): the Evaluator's
// path against the tiled GPU reference, with the default config (two consumers) and with one
// consumer at two and at one CTA per SM, on one evaluator per preset (as `attn-bench run` does:
// one fill and one oracle run for the three).
TEST(BlockSparseSm90Gpu, BenchmarkShapesMatchTheGpuReference) {
  ATTN_REQUIRE_HOPPER();
  const Registry registry = make_registry();
  const Variant& variant = sm90_variant(registry);
  const Target target = Target::cuda(testing::gpu().device());
  for (const char* preset :
       {"prefill-phi3-small-block-sparse", "prefill-phi3-small-block-sparse-2x16384"}) {
    SCOPED_TRACE(preset);
    const Batch batch = generate_batch(load_preset(preset));
    const std::vector<KernelConfig> configs = {variant.default_config(batch, target),
                                               make_config(64, 2, 2, 1), make_config(64, 3, 1, 1)};
    for (const KernelConfig& config : configs) {
      ASSERT_TRUE(variant.check(batch, config, target).ok) << config.key();
    }
    expect_evaluator_passes(variant, batch, configs, ReferenceOracle::gpu);
  }
}

}  // namespace
}  // namespace attn
