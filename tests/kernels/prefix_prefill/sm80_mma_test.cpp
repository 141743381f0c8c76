// prefix_prefill.sm80_mma and prefix_prefill.sm80_mma_masked on the CPU: the traits reject invalid
// configs with a reason before any compile, the variants accept or decline batch features with a
// reason, and a seeded sample of the configs the traits accept compiles through NVRTC for sm_80 and
// sm_90a without spilling, for every kernel flavour (16-bit or fp8 KV, key-major or vLLM V,
// explicit mask) and every head dim, with V as wide as Q/K or narrower. ATTN_TEST_EXHAUSTIVE=1
// compiles every accepted config of one flavour per head dim.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <future>
#include <iostream>
#include <random>
#include <regex>

#include "kernels/device/device_info.hpp"
#include "kernels/jit/jit_compiler.hpp"
#include "kernels/prefix_prefill/prefix_prefill_variants.hpp"
#include "kernels/prefix_prefill/sm80_mma_traits.hpp"
#include "kernels/registry.hpp"
#include "tests/kernels/fp8_batch.hpp"
#include "tests/test_support.hpp"
#include "workloads/batch_data.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

Target hopper() {
  DeviceInfo device;
  device.cc_major = 9;
  device.sm_count = 132;
  device.max_shared_per_block_optin = 227 * 1024;
  return Target::cuda(device);
}

Target ampere() {
  DeviceInfo device;
  device.cc_major = 8;
  device.sm_count = 108;
  device.max_shared_per_block_optin = 163 * 1024;
  return Target::cuda(device);
}

testing::SpecShape shape_of(int q_heads, int kv_heads, int head_dim, DType dtype = DType::bf16,
                            KvLayout layout = KvLayout::nhd) {
  testing::SpecShape shape;
  shape.q_heads = q_heads;
  shape.kv_heads = kv_heads;
  shape.head_dim = head_dim;
  shape.dtype = dtype;
  shape.layout = layout;
  return shape;
}

// v_head_dim 0: V as wide as Q/K.
Batch prefill_batch(const testing::SpecShape& shape, int v_head_dim = 0) {
  WorkloadSpec spec = testing::make_spec(shape, {{0, 7}, {40, 1}, {300, 65}}, "prefill-test");
  if (v_head_dim != 0 && v_head_dim != shape.head_dim) spec.model.v_head_dim = v_head_dim;
  return generate_batch(spec);
}

// (Q/K head dim, V head dim): every head dim of the schema, and the narrower Vs of DeepSeek's
// prefill (192, 128) and of a halved V (128, 64).
const std::pair<int, int> kPrefillHeadDimPairs[] = {{64, 64},   {80, 80},   {96, 96},   {128, 128},
                                                    {192, 192}, {256, 256}, {192, 128}, {128, 64}};

using testing::with_fp8;

Batch with_causal_mask(Batch batch) {
  ExplicitMask mask;
  mask.offsets = explicit_mask_offsets(batch);
  mask.bits.assign(size_t(mask.offsets.back()), 1);
  batch.explicit_mask = mask;
  return batch;
}

KernelConfig make_config(int block_m, int block_n, int warps, int stages, int unroll_cache = 1,
                         int unroll_new = 1) {
  return KernelConfig{
      {"block_m", block_m}, {"block_n", block_n},           {"warps", warps},
      {"stages", stages},   {"unroll_cache", unroll_cache}, {"unroll_new", unroll_new}};
}

const Variant& variant_named(const Registry& registry, const std::string& name) {
  const Variant* variant = registry.find(name);
  EXPECT_NE(variant, nullptr) << name;
  return *variant;
}

TEST(PrefixPrefillTraits, RulesNameTheFirstBrokenConstraint) {
  using namespace prefix_prefill::sm80_mma;
  EXPECT_EQ(check(128, 128, 128, 64, 8, 2, 1, 1, false, false, false), kOk);
  EXPECT_EQ(check(72, 72, 128, 64, 8, 2, 1, 1, false, false, false), kHeadDim);
  EXPECT_EQ(check(96, 128, 128, 64, 8, 2, 1, 1, false, false, false), kHeadDim);  // V wider
  EXPECT_EQ(check(192, 100, 128, 64, 8, 2, 1, 1, false, false, false), kHeadDim);
  // Head dims that are not powers of two, and a narrower V.
  EXPECT_EQ(check(80, 80, 128, 64, 8, 2, 1, 1, false, false, false), kOk);
  EXPECT_EQ(check(96, 96, 128, 64, 8, 3, 1, 1, true, true, false), kOk);
  EXPECT_EQ(check(192, 192, 128, 64, 8, 2, 1, 1, true, false, false), kOk);
  EXPECT_EQ(check(192, 128, 128, 64, 8, 2, 1, 1, false, false, false), kOk);
  EXPECT_EQ(check(128, 64, 64, 64, 4, 2, 1, 1, false, false, false), kOk);
  EXPECT_EQ(check(192, 192, 16, 128, 1, 2, 1, 1, false, false, false), kRegisters);
  // 32 rows per warp: head dims 80 and 96 take head dim 128's shapes, 192 none.
  EXPECT_EQ(check(80, 80, 128, 64, 4, 2, 1, 1, false, false, false), kOk);
  EXPECT_EQ(check(96, 96, 128, 32, 4, 2, 1, 1, false, false, false), kOk);
  EXPECT_EQ(check(96, 96, 128, 64, 4, 2, 1, 1, false, false, false), kRegisters);  // measured
  EXPECT_EQ(check(80, 80, 64, 16, 2, 3, 1, 1, true, true, true), kOk);
  EXPECT_EQ(check(96, 96, 128, 64, 4, 3, 1, 1, false, false, false), kRegisters);
  EXPECT_EQ(check(192, 128, 64, 16, 2, 2, 1, 1, false, false, false), kRegisters);
  EXPECT_EQ(check(128, 128, 96, 64, 3, 2, 1, 1, false, false, false), kWarps);
  EXPECT_EQ(check(128, 128, 128, 64, 8, 1, 1, 1, false, false, false), kStages);
  EXPECT_EQ(check(128, 128, 128, 64, 8, 5, 1, 1, false, false, false), kStages);
  EXPECT_EQ(check(128, 128, 128, 64, 2, 2, 1, 1, false, false, false),
            kBlockM);                                                            // 64 rows per warp
  EXPECT_EQ(check(128, 128, 48, 64, 2, 2, 1, 1, false, false, false), kBlockM);  // 24 rows per warp
  EXPECT_EQ(check(128, 128, 64, 48, 4, 2, 1, 1, false, false, false), kBlockN);
  EXPECT_EQ(check(128, 128, 64, 256, 4, 2, 1, 1, false, false, false), kBlockN);
  EXPECT_EQ(check(128, 128, 64, 64, 4, 2, 3, 1, false, false, false), kUnroll);
  EXPECT_EQ(check(128, 128, 64, 64, 4, 2, 1, 0, false, false, false), kUnroll);
  EXPECT_EQ(check(256, 256, 128, 128, 8, 4, 1, 1, false, false, false), kSharedMemory);
  EXPECT_EQ(check(256, 256, 64, 32, 2, 2, 1, 1, false, false, false),
            kRegisters);  // 32 rows x d256
  // An unrolled tile with the explicit mask's loads and fp8/vLLM addressing needs more registers.
  EXPECT_EQ(check(128, 128, 16, 64, 1, 2, 1, 2, true, true, false), kOk);
  EXPECT_EQ(check(128, 128, 16, 64, 1, 2, 1, 2, true, true, true), kRegisters);
  // 32 rows per warp: measured shapes only (wide_warp_fits). Head dim 128 takes them at block_n
  // 16, and at 32 or 64 only in the issue-6 shape (block_m 128, 4 warps, 2 stages, no unroll,
  // 16-bit key-major K/V, no explicit mask, no soft-cap); head dim 64 up to block_n 64.
  EXPECT_EQ(check(128, 128, 128, 64, 4, 2, 1, 1, false, false, false), kOk);
  EXPECT_EQ(check(128, 128, 128, 32, 4, 2, 1, 1, false, false, false), kOk);
  EXPECT_EQ(check(128, 128, 64, 16, 2, 3, 1, 1, true, true, true), kOk);
  EXPECT_EQ(check(128, 128, 128, 64, 4, 3, 1, 1, false, false, false), kRegisters);
  EXPECT_EQ(check(128, 128, 128, 64, 4, 2, 2, 1, false, false, false), kRegisters);
  EXPECT_EQ(check(128, 128, 64, 64, 2, 2, 1, 1, false, false, false), kRegisters);
  EXPECT_EQ(check(128, 128, 128, 64, 4, 2, 1, 1, true, false, false), kRegisters);
  EXPECT_EQ(check(128, 128, 128, 64, 4, 2, 1, 1, false, true, false), kRegisters);
  EXPECT_EQ(check(128, 128, 128, 64, 4, 2, 1, 1, false, false, true), kRegisters);
  EXPECT_EQ(check(128, 128, 128, 64, 4, 2, 1, 1, false, false, false, /*soft_cap=*/true),
            kRegisters);
  EXPECT_EQ(check(128, 128, 128, 64, 8, 2, 1, 1, false, false, false, /*soft_cap=*/true), kOk);
  EXPECT_EQ(check(64, 64, 128, 64, 4, 3, 1, 1, true, true, true), kOk);
  EXPECT_EQ(check(64, 64, 128, 64, 4, 2, 2, 1, false, false, false), kRegisters);
  EXPECT_EQ(check(64, 64, 128, 32, 4, 2, 2, 1, false, false, true), kRegisters);
  EXPECT_EQ(check(128, 128, 128, 128, 4, 2, 1, 1, false, false, false), kRegisters);
  // Shared memory: Q, stages x (K + V) rows padded by 16 bytes; fp8 adds one 16-bit K/V tile;
  // then an 8-byte source offset per key row and stage.
  EXPECT_EQ(shared_bytes(128, 128, 128, 64, 2, false, false),
            128 * 272 + 2 * (64 * 272 + 64 * 272) + 2 * 64 * 8);
  EXPECT_EQ(shared_bytes(128, 128, 64, 32, 3, true, false),
            64 * 272 + 3 * (32 * 144 + 32 * 144) + (32 * 272 + 32 * 272) + 3 * 32 * 8);
  // vLLM's V is kept dims-major: head_dim rows of block_n keys.
  EXPECT_EQ(shared_bytes(64, 64, 64, 32, 2, false, true),
            64 * 144 + 2 * (32 * 144 + 64 * 80) + 2 * 32 * 8);
  // Head dim 80 over fp8: 96-byte rows as stored, 176 as computed.
  EXPECT_EQ(shared_bytes(80, 80, 64, 32, 3, true, false),
            64 * 176 + 3 * (32 * 96 + 32 * 96) + (32 * 176 + 32 * 176) + 3 * 32 * 8);
  // A narrower V: its rows are v_head_dim wide and have their own source offsets.
  EXPECT_EQ(shared_bytes(192, 128, 128, 64, 2, false, false),
            128 * 400 + 2 * (64 * 400 + 64 * 272) + 2 * 2 * 64 * 8);
  EXPECT_EQ(shared_bytes(128, 64, 64, 32, 2, true, true),
            64 * 272 + 2 * (32 * 144 + 64 * 48) + (32 * 272 + 64 * 80) + 2 * 32 * 8);
}

// Every point of the space is accepted exactly when the traits (and the device's shared memory)
// accept it, and every refusal carries a reason that names what to change.
TEST(PrefixPrefillGating, SpaceRefusalsMirrorTheTraitsWithReasons) {
  const Registry registry = make_registry();
  const Variant& variant = variant_named(registry, "prefix_prefill.sm80_mma");
  int accepted = 0, refused = 0;
  for (const auto& [head_dim, v_head_dim] : kPrefillHeadDimPairs) {
    for (bool fp8 : {false, true}) {
      Batch batch = prefill_batch(shape_of(8, 2, head_dim), v_head_dim);
      if (fp8) batch = with_fp8(batch, false);
      for (const Target& target : {hopper(), ampere()}) {
        const auto space = variant.space(batch, target);
        ASSERT_EQ(space.size(), 6u);
        for (int64_t m : space[0].values)
          for (int64_t n : space[1].values)
            for (int64_t w : space[2].values)
              for (int64_t s : space[3].values)
                for (int64_t uc : space[4].values)
                  for (int64_t un : space[5].values) {
                    const KernelConfig config =
                        make_config(int(m), int(n), int(w), int(s), int(uc), int(un));
                    const Support support = variant.check(batch, config, target);
                    const int rule = prefix_prefill::sm80_mma::check(
                        head_dim, v_head_dim, int(m), int(n), int(w), int(s), int(uc), int(un), fp8,
                        false, false);
                    const bool fits = prefix_prefill::sm80_mma::shared_bytes(
                                          head_dim, v_head_dim, int(m), int(n), int(s), fp8,
                                          false) <= target.max_shared_per_block;
                    EXPECT_EQ(support.ok, rule == prefix_prefill::sm80_mma::kOk && fits)
                        << config.key() << " d" << head_dim << "/" << v_head_dim << ": "
                        << support.reason;
                    if (support.ok) {
                      ++accepted;
                      continue;
                    }
                    ++refused;
                    const std::string& why = support.reason;
                    const char* expected = nullptr;
                    switch (rule) {
                      case prefix_prefill::sm80_mma::kBlockM:
                        expected = "block_m must be 16 or 32 rows per warp";
                        break;
                      case prefix_prefill::sm80_mma::kSharedMemory:
                      case prefix_prefill::sm80_mma::kOk:  // the device's own limit
                        expected = "shared memory";
                        break;
                      case prefix_prefill::sm80_mma::kRegisters:
                        expected = "registers";
                        break;
                      default:
                        ADD_FAILURE() << "unexpected rule " << rule << " for " << config.key();
                    }
                    if (expected) {
                      EXPECT_NE(why.find(expected), std::string::npos) << why;
                    }
                  }
      }
    }
  }
  EXPECT_GT(accepted, 0);
  EXPECT_GT(refused, 0);
  const Batch batch = prefill_batch(shape_of(8, 2, 128));
  EXPECT_FALSE(variant.check(batch, make_config(64, 64, 3, 2), hopper()).ok);
  EXPECT_FALSE(variant.check(batch, make_config(64, 24, 4, 2), hopper()).ok);
  KernelConfig extra = make_config(64, 64, 4, 2);
  extra.set("num_splits", 4);
  EXPECT_FALSE(variant.check(batch, extra, hopper()).ok);
  KernelConfig missing{
      {"block_m", 64}, {"block_n", 64}, {"warps", 4}, {"stages", 2}, {"unroll_cache", 1}};
  EXPECT_NE(variant.check(batch, missing, hopper()).reason.find("unroll_new"), std::string::npos);
}

TEST(PrefixPrefillGating, DefaultConfigIsSupportedForEveryHeadDimLayoutAndDevice) {
  const Registry registry = make_registry();
  DeviceInfo small;  // sm_86: 99 KiB of shared memory per block
  small.cc_major = 8;
  small.cc_minor = 6;
  small.max_shared_per_block_optin = 99 * 1024;
  for (const char* name : {"prefix_prefill.sm80_mma", "prefix_prefill.sm80_mma_masked"}) {
    const Variant& variant = variant_named(registry, name);
    for (const auto& [head_dim, v_head_dim] : kPrefillHeadDimPairs) {
      for (KvLayout layout : {KvLayout::nhd, KvLayout::hnd, KvLayout::vllm}) {
        for (bool fp8 : {false, true}) {
          Batch batch = prefill_batch(shape_of(16, 1, head_dim, DType::fp16, layout), v_head_dim);
          if (fp8) batch = with_fp8(batch, true);
          if (std::string(name) == "prefix_prefill.sm80_mma_masked")
            batch = with_causal_mask(batch);
          for (const Target& target : {hopper(), ampere(), Target::cuda(small)}) {
            const KernelConfig config = variant.default_config(batch, target);
            const Support support = variant.check(batch, config, target);
            EXPECT_TRUE(support.ok)
                << name << " d" << head_dim << "/" << v_head_dim << " " << to_string(layout)
                << (fp8 ? " fp8 " : " ") << target.arch << ": " << support.reason;
          }
        }
      }
    }
  }
}

struct Feature {
  std::string name;
  std::string reason_mentions;  // empty: supported
  std::function<void(Batch&)> apply;
};

TEST(PrefixPrefillGating, FeaturesAreSupportedOrRefusedWithAReason) {
  const Batch plain = prefill_batch(shape_of(12, 2, 128));
  const Target gpu = hopper();
  const Registry registry = make_registry();
  const Variant& mma = variant_named(registry, "prefix_prefill.sm80_mma");
  const Variant& masked = variant_named(registry, "prefix_prefill.sm80_mma_masked");
  // 16 rows per warp: a config every flavour fits in registers (the default for this batch, 32
  // rows per warp, takes only 16-bit key-major K/V without soft-cap or mask: checked below).
  const KernelConfig config = make_config(128, 64, 8, 2);
  ASSERT_TRUE(mma.check(plain, config, gpu)) << mma.check(plain, config, gpu).reason;
  const KernelConfig wide = mma.default_config(plain, gpu);
  EXPECT_EQ(wide.get("warps"), 4);
  EXPECT_TRUE(mma.check(plain, wide, gpu));
  for (const auto& [name, apply] : std::vector<std::pair<std::string, std::function<void(Batch&)>>>{
           {"soft-cap", [](Batch& b) { b.logits_soft_cap = 30.0f; }},
           {"vllm layout", [](Batch& b) { b.spec.kv_cache.layout = KvLayout::vllm; }},
           {"fp8 KV", [](Batch& b) { b = with_fp8(b, false); }}}) {
    Batch batch = plain;
    apply(batch);
    const Support s = mma.check(batch, wide, gpu);
    EXPECT_FALSE(s.ok) << name;
    EXPECT_NE(s.reason.find("32 rows per warp"), std::string::npos) << name << ": " << s.reason;
    EXPECT_TRUE(mma.check(batch, mma.default_config(batch, gpu), gpu)) << name;
  }

  const std::vector<Feature> features = {
      {"soft-cap", "", [](Batch& b) { b.logits_soft_cap = 30.0f; }},
      {"sliding window", "", [](Batch& b) { b.sliding_window = 16; }},
      {"sinks", "", [](Batch& b) { b.sink_logits.assign(12, 1.0f); }},
      {"non-causal", "", [](Batch& b) { b.causal = false; }},
      {"hnd", "", [](Batch& b) { b.spec.kv_cache.layout = KvLayout::hnd; }},
      {"vllm layout", "", [](Batch& b) { b.spec.kv_cache.layout = KvLayout::vllm; }},
      {"fp8 KV per tensor", "", [](Batch& b) { b = with_fp8(b, false); }},
      {"fp8 KV per head", "", [](Batch& b) { b = with_fp8(b, true); }},
      {"fp8 KV vllm", "",
       [](Batch& b) {
         b.spec.kv_cache.layout = KvLayout::vllm;
         b = with_fp8(b, true);
       }},
      {"fp32", "fp32 queries and output",
       [](Batch& b) {
         b.spec.model.dtype = DType::fp32;
         b.dtype = b.kv_dtype = DType::fp32;
       }},
      {"block-sparse", "block-sparse", [](Batch& b) { b.block_sparse = BlockSparseLayout{}; }},
      {"explicit mask", "prefix_prefill.sm80_mma_masked",
       [](Batch& b) { b = with_causal_mask(b); }},
      {"sink count", "one value per q head", [](Batch& b) { b.sink_logits.assign(3, 1.0f); }},
  };
  for (const Feature& feature : features) {
    Batch batch = plain;
    feature.apply(batch);
    const Support s = mma.check(batch, config, gpu);
    if (feature.reason_mentions.empty()) {
      EXPECT_TRUE(s.ok) << feature.name << ": " << s.reason;
    } else {
      EXPECT_FALSE(s.ok) << feature.name << " was accepted";
      EXPECT_NE(s.reason.find(feature.reason_mentions), std::string::npos)
          << feature.name << ": " << s.reason;
    }
  }
  // The masked variant needs a mask and reads every other feature as the mma variant does.
  const Support no_mask = masked.check(plain, config, gpu);
  EXPECT_FALSE(no_mask.ok);
  EXPECT_NE(no_mask.reason.find("prefix_prefill.sm80_mma runs batches without an explicit mask"),
            std::string::npos)
      << no_mask.reason;
  Batch with_mask = with_causal_mask(with_fp8(plain, true));
  with_mask.spec.kv_cache.layout = KvLayout::vllm;
  with_mask.sink_logits.assign(12, 0.5f);
  with_mask.logits_soft_cap = 20.0f;
  EXPECT_TRUE(masked.check(with_mask, config, gpu).ok)
      << masked.check(with_mask, config, gpu).reason;
}

TEST(PrefixPrefillGating, AnyGroupThatFitsBlockMDecodeRowsAndNewerGpusOnly) {
  const Registry registry = make_registry();
  const Variant& variant = variant_named(registry, "prefix_prefill.sm80_mma");
  for (int group : {1, 3, 5, 7, 11, 16}) {
    const Batch batch = prefill_batch(shape_of(2 * group, 2, 64));
    EXPECT_TRUE(variant.check(batch, make_config(16, 32, 1, 2), hopper()).ok) << group;
  }
  const Batch wide = prefill_batch(shape_of(32, 1, 64));  // group 32
  const Support s = variant.check(wide, make_config(16, 32, 1, 2), hopper());
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.reason.find("GQA group 32"), std::string::npos) << s.reason;
  EXPECT_TRUE(variant.check(wide, make_config(32, 32, 2, 2), hopper()).ok);
  // query_len 1 everywhere (a decode batch) and context 0 are prefix-prefill batches too.
  const Batch decode = generate_batch(testing::make_decode_spec(shape_of(8, 2, 128), {0, 5, 99}));
  const KernelConfig decode_default = variant.default_config(decode, hopper());
  EXPECT_TRUE(variant.check(decode, decode_default, hopper()).ok);
  // Its rows (one token x group 4) fit one 16-row tile: the default does not idle 7 of 8 warps.
  EXPECT_EQ(decode_default.get("block_m"), 16);
  EXPECT_EQ(variant.default_config(prefill_batch(shape_of(8, 2, 128)), hopper()).get("block_m"),
            128);

  DeviceInfo turing;
  turing.cc_major = 7;
  turing.cc_minor = 5;
  const Batch batch = prefill_batch(shape_of(8, 2, 64));
  EXPECT_FALSE(variant.check(batch, make_config(64, 64, 4, 2), Target::cuda(turing)).ok);
  EXPECT_FALSE(variant.check(batch, make_config(64, 64, 4, 2), Target::cpu()).ok);
  DeviceInfo small;
  small.cc_major = 8;
  small.cc_minor = 6;
  small.max_shared_per_block_optin = 99 * 1024;
  const Batch d256 = prefill_batch(shape_of(8, 2, 256));
  const Support big = variant.check(d256, make_config(128, 64, 8, 2), Target::cuda(small));
  EXPECT_FALSE(big.ok);
  EXPECT_NE(big.reason.find("this device allows"), std::string::npos) << big.reason;
}

// The byte strides reproduce workloads' pool_offset for every layout and KV dtype, with V as wide
// as K and narrower (V's rows are v_head_dim wide).
TEST(PrefixPrefillStrides, MatchPoolOffsetForEveryLayout) {
  for (const auto& [head_dim, v_head_dim] : {std::pair<int, int>{64, 64}, {128, 64}, {192, 128}})
    for (KvLayout layout : {KvLayout::nhd, KvLayout::hnd, KvLayout::vllm}) {
      for (bool fp8 : {false, true}) {
        Batch batch = prefill_batch(shape_of(6, 3, head_dim, DType::bf16, layout), v_head_dim);
        batch.page_size = 5;
        if (fp8) batch = with_fp8(batch, false);
        const int64_t e = int64_t(size_of(batch.kv_dtype));
        const bool dim_major = prefix_prefill_v_dim_major(batch);
        EXPECT_EQ(dim_major, layout == KvLayout::vllm);
        for (DataStream stream : {DataStream::key, DataStream::value}) {
          const bool value = stream == DataStream::value;
          const PoolStrides s = prefix_prefill_pool_strides(batch, value);
          const int64_t chunk_elements = value && dim_major ? 1 : 16 / e;
          for (int64_t page : {0, 3}) {
            for (int slot : {0, 4}) {
              for (int head : {0, 2}) {
                for (int dim : {0, 1, 7, 8, 15, 16, 63, 64, 127, 191}) {
                  if (dim >= stream_head_dim(batch, stream)) continue;
                  const int64_t bytes = page * s.page + head * s.head + slot * s.token +
                                        (dim / chunk_elements) * s.chunk +
                                        (dim % chunk_elements) * e;
                  EXPECT_EQ(bytes, pool_offset(batch, stream, page, slot, head, dim) * e)
                      << "d" << head_dim << "/" << v_head_dim << " " << to_string(layout)
                      << (fp8 ? " fp8" : "") << (value ? " V" : " K") << " p" << page << " s"
                      << slot << " h" << head << " d" << dim;
                }
              }
            }
          }
        }
      }
    }
}

// NVRTC compiles a seeded sample of the configs the traits accept, for both archs, every kernel
// flavour (every other one per head dim, by turns, unless ATTN_TEST_EXHAUSTIVE=1) and both dtypes,
// and ptxas reports no spills (the register estimate in the traits keeps accepted configs in
// registers).
TEST(PrefixPrefillCompile, SampledConfigsCompileForSm80AndSm90aWithoutSpills) {
  const fs::path dir = fs::temp_directory_path() /
                       ("attn-prefix-prefill-jit-" +
                        std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  fs::remove_all(dir);
  JitCompiler jit(JitOptions{dir.string(), /*use_cache=*/false});
  const Registry registry = make_registry();
  const bool exhaustive = std::getenv("ATTN_TEST_EXHAUSTIVE") != nullptr;
  std::mt19937_64 rng(6);

  struct Flavour {
    const char* variant;
    KvLayout layout;
    bool fp8;
    bool soft_cap = false;  // its own kernel flavour (the tanh costs registers)
  };
  const Flavour flavours[] = {{"prefix_prefill.sm80_mma", KvLayout::nhd, false},
                              {"prefix_prefill.sm80_mma", KvLayout::vllm, false},
                              {"prefix_prefill.sm80_mma", KvLayout::hnd, true},
                              {"prefix_prefill.sm80_mma_masked", KvLayout::vllm, true},
                              {"prefix_prefill.sm80_mma", KvLayout::nhd, false, true}};
  struct Job {
    std::string what;
    std::future<CompiledProgram> compiled;
  };
  std::vector<Job> jobs;
  for (const auto& [head_dim, v_head_dim] : kPrefillHeadDimPairs) {
    for (size_t f = 0; f < std::size(flavours); ++f) {
      const Flavour& flavour = flavours[f];
      // One dtype and one arch per (head dim, flavour), alternating, so the sample stays small.
      const DType dtype = (head_dim / 64 + f) % 2 ? DType::fp16 : DType::bf16;
      const Target target = (head_dim / 64 + f) % 2 ? ampere() : hopper();
      Batch batch = prefill_batch(shape_of(8, 2, head_dim, dtype, flavour.layout), v_head_dim);
      if (flavour.fp8) batch = with_fp8(batch, f % 2 == 0);
      if (flavour.soft_cap) batch.logits_soft_cap = 30.0f;
      if (std::string(flavour.variant) == "prefix_prefill.sm80_mma_masked")
        batch = with_causal_mask(batch);
      const Variant& variant = variant_named(registry, flavour.variant);
      std::vector<KernelConfig> accepted;
      const auto space = variant.space(batch, target);
      for (int64_t m : space[0].values)
        for (int64_t n : space[1].values)
          for (int64_t w : space[2].values)
            for (int64_t s : space[3].values)
              for (int64_t uc : space[4].values)
                for (int64_t un : space[5].values) {
                  const KernelConfig config =
                      make_config(int(m), int(n), int(w), int(s), int(uc), int(un));
                  if (variant.check(batch, config, target)) accepted.push_back(config);
                }
      ASSERT_FALSE(accepted.empty());
      std::shuffle(accepted.begin(), accepted.end(), rng);
      // The sample always includes the default config (first flavour of each head dim).
      if (f == 0) accepted.insert(accepted.begin(), variant.default_config(batch, target));
      // One config per (head dim, flavour), on every other flavour by turns (CI time), the first
      // flavour's default always.
      if (!exhaustive && f != 0 && (head_dim / 16 + f) % 2 == 1) continue;
      const size_t take = exhaustive && f == 0 ? accepted.size() : 1;
      for (size_t i = 0; i < take && i < accepted.size(); ++i) {
        JitProgram program = variant.programs(batch, accepted[i], target).front();
        program.options.push_back("--ptxas-options=-v");
        jobs.push_back({program.name + " " + program.arch, jit.compile_async(program)});
      }
    }
  }
  const std::regex spills("([1-9][0-9]*) bytes spill (stores|loads)");
  for (Job& job : jobs) {
    try {
      const CompiledProgram compiled = job.compiled.get();
      EXPECT_EQ(compiled.lowered_names.size(), 2u) << job.what;
      EXPECT_NE(compiled.log.find("registers"), std::string::npos) << job.what << compiled.log;
      EXPECT_FALSE(std::regex_search(compiled.log, spills)) << job.what << ":\n" << compiled.log;
      if (std::getenv("ATTN_TEST_VERBOSE")) std::cout << job.what << "\n" << compiled.log;
    } catch (const CompileError& error) {
      ADD_FAILURE() << job.what << ": " << error.what() << "\n" << error.log();
    }
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace attn
