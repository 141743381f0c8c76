// flash_fwd.sm80_mma on the GPU: random variable-length batches (lengths that are multiples of no
// tile, contexts that shift the causal diagonal), GQA ratios including non powers of two, head
// dims 64/80/96/128/192/256 and V narrower than Q/K ((192, 128), (128, 64)), bf16 and fp16, causal
// and not, random configs from the variant's space, and fp8 (e4m3) caches with per-tensor and
// per-head scales (gathered as codes, dequantised by the kernel on their way into shared memory).
// Every run writes into a poisoned output and a NaN-filled LSE buffer and is compared with the
// oracle (flash_fwd_gpu_check.hpp).
#include <gtest/gtest.h>

#include "tests/kernels/flash_fwd/flash_fwd_gpu_check.hpp"

namespace attn {
namespace {

using namespace flash_fwd_testing;

const FlashFwdVariant& sm80_variant(const Registry& registry) {
  return dynamic_cast<const FlashFwdVariant&>(*registry.find("flash_fwd.sm80_mma"));
}

void expect_matches_reference(const Batch& batch, const KernelConfig& config) {
  const Registry registry = make_registry();
  expect_flash_fwd_matches_reference(sm80_variant(registry), batch, config);
}

// Every (head_dim, v_head_dim) the variant runs: each head dim with V as wide, and the narrower
// Vs of DeepSeek-V3's prefill (192, 128) and of (128, 64).
const std::vector<std::pair<int, int>> kAllHeadDims = {
    {64, 64}, {80, 80}, {96, 96}, {128, 128}, {192, 192}, {256, 256}, {192, 128}, {128, 64}};
// The ones whose layouts are not the power-of-two widths': padded 80 and 96, three-group 192,
// and V narrower than K.
const std::vector<std::pair<int, int>> kNewHeadDims = {
    {80, 80}, {96, 96}, {192, 192}, {192, 128}, {128, 64}};

// The batches of an every-config test at (head_dim, v_head_dim): causal (bf16) and not (fp16),
// GQA 3, lengths that are multiples of no tile. kv_fp8: over an fp8 cache, per-head scales for
// the causal batch and one per-tensor scale for the other.
std::vector<Batch> every_config_batches(int head_dim, int v_head_dim, bool kv_fp8 = false) {
  std::vector<Batch> batches;
  for (bool causal : {true, false}) {
    testing::SpecShape shape = testing::gqa3_shape(head_dim, causal ? DType::bf16 : DType::fp16,
                                                   uint64_t(head_dim) * 2 + causal);
    WorkloadSpec spec = prefill_spec(shape, {{0, 300}, {45, 1}, {3, 129}, {0, 17}}, causal);
    if (v_head_dim != head_dim) spec.model.v_head_dim = v_head_dim;
    if (kv_fp8) {
      spec.model.kv_dtype = DType::fp8_e4m3;
      spec.model.kv_scale = causal ? KvScaleGranularity::per_head : KvScaleGranularity::per_tensor;
    }
    batches.push_back(generate_batch(spec));
  }
  return batches;
}

// Random shapes and lengths (random_prefill_batch) with a random accepted config, as many as the
// case budget allows (tests/gpu_case_budget.hpp).
TEST(FlashFwdSm80Gpu, RandomBatchesShapesAndConfigsMatchTheReference) {
  ATTN_REQUIRE_GPU();
  const Registry registry = make_registry();
  expect_random_batches_match_reference(sm80_variant(registry), 20261208, kAllHeadDims);
}

// Random shapes and lengths over an fp8 cache (per-tensor or per-head scales), every head dim
// and the narrower Vs, with a random accepted config (the stage pipeline: stages 2 to 4), as
// many as the case budget allows.
TEST(FlashFwdSm80Gpu, RandomFp8CachesMatchTheReference) {
  ATTN_REQUIRE_GPU();
  const Registry registry = make_registry();
  expect_random_batches_match_reference(sm80_variant(registry), 20261129, kAllHeadDims, true);
}

// Every config the variant accepts over an fp8 cache, at head dims 64, 128 and 256, 96 (padded
// rows) and Q/K 192 with V 128 (V's own rows): causal with per-head scales (bf16 queries) and not
// with one per-tensor scale (fp16), each config once.
TEST(FlashFwdSm80Gpu, EveryAcceptedConfigWithFp8CachesMatchesTheReference) {
  ATTN_REQUIRE_GPU();
  const Registry registry = make_registry();
  const FlashFwdVariant& variant = sm80_variant(registry);
  const Target target = Target::cuda(testing::gpu().device());
  std::vector<std::pair<Batch, KernelConfig>> cases;
  for (const auto& [head_dim, v_head_dim] :
       std::vector<std::pair<int, int>>{{64, 64}, {128, 128}, {256, 256}, {96, 96}, {192, 128}})
    add_rotated_cases(variant, every_config_batches(head_dim, v_head_dim, true), target, 1, cases);
  EXPECT_GT(cases.size(), 30u);
  expect_all_match_reference(variant, cases);
}

// Every (tile_m, tile_n, warps, stages) the variant accepts on this device, for each head dim, on
// a batch whose lengths are multiples of no tile: the whole compiled space runs, not just a
// sample, each config once, causal (bf16) and not (fp16) in turn. The programs are compiled in
// parallel first.
TEST(FlashFwdSm80Gpu, EveryAcceptedConfigMatchesTheReference) {
  ATTN_REQUIRE_GPU();
  const Registry registry = make_registry();
  const FlashFwdVariant& variant = sm80_variant(registry);
  const Target target = Target::cuda(testing::gpu().device());
  std::vector<std::pair<Batch, KernelConfig>> cases;
  for (int head_dim : {64, 128, 256})
    add_rotated_cases(variant, every_config_batches(head_dim, head_dim), target, 1, cases);
  EXPECT_GT(cases.size(), 30u);
  expect_all_match_reference(variant, cases);
}

// The same at head dims 80, 96 and 192 (rows of 10, 12 and 24 16-byte chunks: padded rows, a
// swizzle over three 128-byte groups, idle copy slots) and with V narrower than Q and K
// ((192, 128), (128, 64): V's own rows, copies and output width).
TEST(FlashFwdSm80Gpu, EveryAcceptedConfigAtHeadDims80To192AndNarrowVMatchesTheReference) {
  ATTN_REQUIRE_GPU();
  const Registry registry = make_registry();
  const FlashFwdVariant& variant = sm80_variant(registry);
  const Target target = Target::cuda(testing::gpu().device());
  std::vector<std::pair<Batch, KernelConfig>> cases;
  for (const auto& [head_dim, v_head_dim] : kNewHeadDims)
    add_rotated_cases(variant, every_config_batches(head_dim, v_head_dim), target, 1, cases);
  EXPECT_GT(cases.size(), 50u);
  expect_all_match_reference(variant, cases);
}

// Bottom-right alignment: queries on top of a context see context + i + 1 keys, with the
// diagonal at every offset within the tiles; GQA 5; one sequence whose context is longer than
// its queries by more than a tile, one shorter.
TEST(FlashFwdSm80Gpu, CausalDiagonalAlignedToTheBottomRight) {
  ATTN_REQUIRE_GPU();
  testing::SpecShape shape;
  shape.q_heads = 10;
  shape.kv_heads = 2;
  shape.head_dim = 128;
  shape.page_size = 16;
  for (const KernelConfig& config :
       {KernelConfig{{"tile_m", 128}, {"tile_n", 32}, {"warps", 4}, {"stages", 2}},
        KernelConfig{{"tile_m", 64}, {"tile_n", 128}, {"warps", 4}, {"stages", 3}},
        KernelConfig{{"tile_m", 32}, {"tile_n", 64}, {"warps", 2}, {"stages", 4}}}) {
    const Batch batch = generate_batch(
        prefill_spec(shape, {{300, 129}, {5, 1}, {1000, 700}, {1, 64}, {63, 65}}, true));
    expect_matches_reference(batch, config);
  }
}

// The path `attn-bench run` takes, with the default config.
TEST(FlashFwdSm80Gpu, EvaluatorVerifiesAndTimesTheDefaultConfig) {
  ATTN_REQUIRE_GPU();
  const Registry registry = make_registry();
  expect_evaluator_passes_default_config(sm80_variant(registry));
}

// Large: one 8192-token causal prompt (64 query tiles, diagonal-heavy scheduling) and four
// 2000-token non-causal ones, 16 heads, head dim 128, bf16, default configs.
TEST(FlashFwdSm80Gpu, LargeBatchesMatchTheReference) {
  ATTN_REQUIRE_GPU();
  const Registry registry = make_registry();
  const Variant& variant = sm80_variant(registry);
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
}

// Large batches at the new head dims and a narrower V (the tiled GPU reference is the oracle):
// DeepSeek-V3's prefill shape (Q/K 192, V 128, 16 heads, two 4096-token causal prompts), and
// 80, 96 and 192 over GQA 4 (3000 tokens, non-causal), default configs.
TEST(FlashFwdSm80Gpu, LargeBatchesAtHeadDims80To192AndNarrowVMatchTheReference) {
  ATTN_REQUIRE_GPU();
  const Registry registry = make_registry();
  const Variant& variant = sm80_variant(registry);
  const Target target = Target::cuda(testing::gpu().device());
  testing::SpecShape shape;
  shape.q_heads = 16;
  shape.kv_heads = 16;
  shape.head_dim = 192;
  WorkloadSpec deepseek = prefill_spec(shape, {{0, 4096}, {0, 4096}}, true);
  deepseek.model.v_head_dim = 128;
  const Batch narrow = generate_batch(deepseek);
  expect_matches_reference(narrow, variant.default_config(narrow, target));
  shape.kv_heads = 4;
  for (int head_dim : {80, 96, 192}) {
    shape.head_dim = head_dim;
    const Batch batch = generate_batch(prefill_spec(shape, {{0, 3000}}, false));
    expect_matches_reference(batch, variant.default_config(batch, target));
  }
}

}  // namespace
}  // namespace attn
