// paged_decode.sm80_mma on the CPU: the traits reject invalid configs with a reason before any
// compile, the variant declines the batch features it does not implement, and every config the
// traits accept compiles through NVRTC for sm_80 and sm_90a without spilling (a seeded sample;
// ATTN_TEST_EXHAUSTIVE=1 compiles them all).
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
#include "kernels/paged_decode/sm80_mma_traits.hpp"
#include "kernels/registry.hpp"
#include "tests/target_fixtures.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

Target hopper() {
  return testing::hopper_target();
}

Target ampere() {
  return testing::ampere_target();
}

Batch decode_batch(int q_heads, int kv_heads, int head_dim, DType dtype = DType::bf16,
                   const std::vector<int64_t>& lengths = {5, 40, 300}) {
  testing::SpecShape shape;
  shape.q_heads = q_heads;
  shape.kv_heads = kv_heads;
  shape.head_dim = head_dim;
  shape.dtype = dtype;
  return generate_batch(testing::make_decode_spec(shape, lengths));
}

// The batch's K/V read as fp8 codes with unit scales (the planner looks at the dtype only).
Batch as_fp8(Batch batch) {
  batch.kv_dtype = DType::fp8_e4m3;
  batch.k_scales = batch.v_scales = {1.0f};
  return batch;
}

KernelConfig make_config(int tile_tokens, int warps, int stages, int num_splits = 0) {
  return KernelConfig{{"tile_tokens", tile_tokens},
                      {"warps", warps},
                      {"stages", stages},
                      {"num_splits", num_splits}};
}

const Variant& sm80_mma_variant(const Registry& registry) {
  const Variant* variant = registry.find("paged_decode.sm80_mma");
  EXPECT_NE(variant, nullptr);
  return *variant;
}

TEST(Sm80MmaTraits, RulesNameTheFirstBrokenConstraint) {
  using namespace paged_decode::sm80_mma;
  EXPECT_EQ(check(128, 4, 64, 3), kOk);
  EXPECT_EQ(check(96, 4, 64, 3), kOk);
  EXPECT_EQ(check(80, 4, 64, 3, 1), kOk);
  EXPECT_EQ(check(192, 2, 32, 2), kOk);
  EXPECT_EQ(check(192, 8, 128, 2), kOk);          // 16 keys per warp, one row per pass
  EXPECT_EQ(check(192, 4, 128, 2), kCopyPasses);  // 32 keys per warp, one row per pass
  EXPECT_EQ(check(192, 2, 64, 2), kCopyPasses);
  EXPECT_EQ(check(192, 2, 64, 2, 1), kOk);  // fp8: two rows per pass
  EXPECT_EQ(check(256, 2, 64, 2), kOk);     // unpadded copy lanes: no pass limit
  EXPECT_EQ(check(72, 4, 64, 3), kHeadDim);
  EXPECT_EQ(check(112, 4, 64, 3), kHeadDim);
  EXPECT_EQ(check(128, 3, 48, 3), kWarps);
  EXPECT_EQ(check(128, 4, 64, 1), kStages);
  EXPECT_EQ(check(128, 4, 64, 5), kStages);
  EXPECT_EQ(check(128, 4, 32, 3), kBlockTokens);    // 8 keys per warp: less than one k16 slice
  EXPECT_EQ(check(128, 2, 48, 3), kBlockTokens);    // 24 keys per warp
  EXPECT_EQ(check(64, 1, 512, 2), kBlockTokens);    // over 256
  EXPECT_EQ(check(256, 8, 256, 4), kSharedMemory);  // 4 x 270 KiB
  EXPECT_EQ(check(256, 1, 96, 2), kRegisters);      // 128 accumulators + 96 keys per warp
  // Shared memory: stages x (K + V) x tokens x padded row, plus Q.
  EXPECT_EQ(shared_bytes(128, 4, 64, 3), 3 * 2 * 64 * 136 * 2 + 16 * 136 * 2);
  // K/V rows hold an odd count of 16-byte chunks (conflict-free ldmatrix and 32-bit loads): data
  // plus 16 bytes, or plus 32 where that count would be even (fp8 at head dim 80).
  for (int d : {64, 80, 96, 128, 192, 256}) {
    for (int kv : {1, 2}) {
      const int row = row_bytes(d, kv);
      EXPECT_EQ(row % 16, 0) << d << " " << kv;
      EXPECT_EQ(row / 16 % 2, 1) << d << " " << kv;
      EXPECT_GE(row, d * kv + 16) << d << " " << kv;
      EXPECT_LE(row, d * kv + 32) << d << " " << kv;
    }
  }
  EXPECT_EQ(row_bytes(80, 1), 112);
  EXPECT_EQ(row_bytes(80, 2), 176);
  EXPECT_EQ(row_bytes(128, 1), 144);
  // The copy lanes of a row: the chunks rounded up to a power of two, at most a warp.
  EXPECT_EQ(copy_lanes(64, 2), 8);
  EXPECT_EQ(copy_lanes(80, 2), 16);
  EXPECT_EQ(copy_lanes(80, 1), 8);
  EXPECT_EQ(copy_lanes(96, 1), 8);
  EXPECT_EQ(copy_lanes(192, 2), 32);
  EXPECT_EQ(copy_lanes(256, 2), 32);
  // Q's fragments stay in registers for 16-bit K/V up to head dim 128 only; fp8 K/V re-read them,
  // and the register estimate counts them only where they are held.
  EXPECT_TRUE(q_in_registers(128, 2));
  EXPECT_FALSE(q_in_registers(192, 2));
  EXPECT_FALSE(q_in_registers(128, 1));
  EXPECT_FALSE(q_in_registers(64, 1));
  EXPECT_EQ(register_estimate(128, 2, 32, 2) - register_estimate(128, 2, 32, 1), 128 / 4);
  EXPECT_EQ(register_estimate(256, 2, 32, 2), register_estimate(256, 2, 32, 1));
  // The cross-warp merge always fits into the stage buffers it reuses.
  for (int d : {64, 80, 96, 128, 192, 256}) {
    for (int w : {1, 2, 4, 8}) EXPECT_LE(merge_bytes(d, w), 2 * stage_bytes(d, 16 * w)) << d << w;
  }
}

// Every point of the space is accepted exactly when the traits accept it, and every refusal
// carries a reason that names the axis to change.
TEST(Sm80MmaGating, SpaceRefusalsMirrorTheTraitsWithReasons) {
  const Registry registry = make_registry();
  const Variant& variant = sm80_mma_variant(registry);
  int accepted = 0, refused = 0;
  for (int head_dim : {64, 80, 96, 128, 192, 256}) {
    const Batch batch = decode_batch(32, 8, head_dim);
    for (const Target& target : {hopper(), ampere()}) {
      const auto space = variant.space(batch, target);
      ASSERT_EQ(space.size(), 4u);
      for (int64_t t : space[0].values) {
        for (int64_t w : space[1].values) {
          for (int64_t s : space[2].values) {
            for (int64_t n : space[3].values) {
              const KernelConfig config = make_config(int(t), int(w), int(s), int(n));
              const Support support = variant.check(batch, config, target);
              const int rule = paged_decode::sm80_mma::check(head_dim, int(w), int(t), int(s));
              const bool device_fits =
                  paged_decode::sm80_mma::shared_bytes(head_dim, int(w), int(t), int(s)) <=
                  target.max_shared_per_block;
              EXPECT_EQ(support.ok, rule == paged_decode::sm80_mma::kOk && device_fits)
                  << config.key() << " d" << head_dim << " " << target.arch << ": "
                  << support.reason;
              if (support.ok) {
                ++accepted;
                continue;
              }
              ++refused;
              const std::string& why = support.reason;
              switch (rule) {
                case paged_decode::sm80_mma::kBlockTokens:
                  EXPECT_NE(why.find("tile_tokens must be a multiple of"), std::string::npos)
                      << why;
                  break;
                case paged_decode::sm80_mma::kSharedMemory:
                case paged_decode::sm80_mma::kOk:  // the device's own limit
                  EXPECT_NE(why.find("shared memory"), std::string::npos) << why;
                  break;
                case paged_decode::sm80_mma::kRegisters:
                  EXPECT_NE(why.find("registers"), std::string::npos) << why;
                  break;
                case paged_decode::sm80_mma::kCopyPasses:
                  EXPECT_TRUE(head_dim == 80 || head_dim == 96 || head_dim == 192)
                      << config.key();  // padded copy lanes only
                  EXPECT_NE(why.find("passes"), std::string::npos) << why;
                  break;
                default:
                  ADD_FAILURE() << "unexpected rule " << rule << " for " << config.key();
              }
            }
          }
        }
      }
    }
  }
  EXPECT_GT(accepted, 0);
  EXPECT_GT(refused, 0);
  // Off-space values are refused too.
  const Batch batch = decode_batch(32, 8, 128);
  EXPECT_FALSE(variant.check(batch, make_config(64, 3, 3), hopper()).ok);
  EXPECT_FALSE(variant.check(batch, make_config(64, 4, 1), hopper()).ok);
  EXPECT_FALSE(variant.check(batch, make_config(64, 4, 3, -1), hopper()).ok);
  EXPECT_FALSE(variant.check(batch, make_config(64, 4, 3, 129), hopper()).ok);
  KernelConfig extra = make_config(64, 4, 3);
  extra.set("heads_per_cta", 4);
  EXPECT_FALSE(variant.check(batch, extra, hopper()).ok);
  KernelConfig missing{{"tile_tokens", 64}, {"warps", 4}, {"num_splits", 0}};
  EXPECT_NE(variant.check(batch, missing, hopper()).reason.find("stages"), std::string::npos);
}

TEST(Sm80MmaGating, DefaultConfigIsSupportedForEveryHeadDimAndDevice) {
  const Registry registry = make_registry();
  const Variant& variant = sm80_mma_variant(registry);
  for (int head_dim : {64, 80, 96, 128, 192, 256}) {
    for (const Target& target : {hopper(), ampere()}) {
      const Batch batch = decode_batch(8, 1, head_dim);
      const KernelConfig config = variant.default_config(batch, target);
      const Support support = variant.check(batch, config, target);
      EXPECT_TRUE(support.ok) << head_dim << " " << target.arch << ": " << support.reason;
    }
  }
}

// The planner's tile by head dim: t64.w4 up to 192 (at most 166 registers there), the smaller
// t32.w2 for 256 with 16-bit K/V below a full GQA group of 16; fp8 K/V as 16-bit K/V at head dims
// 192 and 256, and in the key-rows form (up to 128) 128 keys over 4 warps here: the automatic plan
// splits the longest of these three sequences.
TEST(Sm80MmaGating, DefaultTileFollowsTheHeadDimsRegisters) {
  const Registry registry = make_registry();
  const Variant& variant = sm80_mma_variant(registry);
  for (int head_dim : {64, 80, 96, 128, 192, 256}) {
    for (bool fp8 : {false, true}) {
      const Batch plain = decode_batch(32, 8, head_dim);
      const Batch batch = fp8 ? as_fp8(plain) : plain;
      const KernelConfig config = variant.default_config(batch, hopper());
      const bool small = !fp8 && head_dim == 256, key_rows_fp8 = fp8 && head_dim <= 128;
      EXPECT_EQ(config.get("tile_tokens"), small          ? 32
                                           : key_rows_fp8 ? 128
                                                          : 64)
          << head_dim << " " << fp8;
      EXPECT_EQ(config.get("warps"), small ? 2 : 4) << head_dim << " " << fp8;
      EXPECT_TRUE(variant.check(batch, config, hopper())) << head_dim << " " << fp8;
    }
  }
}

// A head-dim-128 decode batch of these lengths, its K/V as fp8 codes where asked.
Batch long_decode_batch(int q_heads, int kv_heads, const std::vector<int64_t>& lengths, bool fp8) {
  const Batch batch = decode_batch(q_heads, kv_heads, 128, DType::bf16, lengths);
  return fp8 ? as_fp8(batch) : batch;
}

std::string tile_of(const KernelConfig& config) {
  return "t" + std::to_string(config.get("tile_tokens")) + ".w" +
         std::to_string(config.get("warps"));
}

// The planner's tile from the batch's units (sequence x KV head) and lengths.
TEST(Sm80MmaGating, DefaultTileFollowsTheUnitsAndLengths) {
  const Registry registry = make_registry();
  const Variant& variant = sm80_mma_variant(registry);
  const Target gpu = hopper();  // 132 SMs
  auto tile = [&](const Batch& batch) { return tile_of(variant.default_config(batch, gpu)); };
  // Few long units, at most one per SM: 128-key blocks, one CTA of 8 warps per SM.
  EXPECT_EQ(tile(long_decode_batch(64, 8, {65536}, false)), "t128.w8");
  EXPECT_EQ(tile(long_decode_batch(16, 1, std::vector<int64_t>(128, 8192), false)), "t128.w8");
  // ... but not when the keys leave SMs without a 128-key block.
  EXPECT_EQ(tile(long_decode_batch(64, 8, {1000}, false)), "t64.w4");
  // 256 units of a full group: 64 keys in 16-bit, 128 with fp8 codes (half the bytes a CTA).
  const std::vector<int64_t> gqa16(128, 8192);
  EXPECT_EQ(tile(long_decode_batch(32, 2, gqa16, false)), "t64.w4");
  EXPECT_EQ(tile(long_decode_batch(32, 2, gqa16, true)), "t128.w8");
  EXPECT_EQ(tile(long_decode_batch(32, 2, std::vector<int64_t>(512, 8192), true)), "t64.w4");
  // fp8 in the key-rows form: 2 warps where every sequence stays whole in one wave of them (512
  // units of 4096 keys), else 128 keys over 4 warps (lengths from 64 to 65536 keys; one long
  // sequence, which 16-bit K/V would give 128 keys over 8 warps).
  EXPECT_EQ(tile(long_decode_batch(64, 8, std::vector<int64_t>(64, 4096), true)), "t64.w2");
  std::vector<int64_t> skewed;
  for (int s = 0; s < 128; ++s) skewed.push_back(int64_t(64) << (s % 11));
  EXPECT_EQ(tile(long_decode_batch(64, 8, skewed, true)), "t128.w4");
  EXPECT_EQ(tile(long_decode_batch(32, 8, {131072}, true)), "t128.w4");
  EXPECT_EQ(tile(long_decode_batch(32, 8, {131072}, false)), "t128.w8");
  EXPECT_EQ(tile(long_decode_batch(64, 8, skewed, false)), "t64.w4");
}

struct Feature {
  std::string name;
  std::string reason_mentions;  // empty: supported
  std::function<void(Batch&)> apply;
};

TEST(Sm80MmaGating, FeaturesAreSupportedOrRefusedWithAReason) {
  const Batch plain = decode_batch(8, 2, 128);
  const Target gpu = hopper();
  const Registry registry = make_registry();
  const Variant& variant = sm80_mma_variant(registry);
  const KernelConfig config = variant.default_config(plain, gpu);
  ASSERT_TRUE(variant.check(plain, config, gpu)) << variant.check(plain, config, gpu).reason;

  const std::vector<Feature> features = {
      {"soft-cap", "", [](Batch& b) { b.logits_soft_cap = 30.0f; }},
      {"sliding window", "", [](Batch& b) { b.sliding_window = 16; }},
      {"sinks", "", [](Batch& b) { b.sink_logits.assign(8, 1.0f); }},
      {"non-causal", "", [](Batch& b) { b.causal = false; }},
      {"hnd", "", [](Batch& b) { b.spec.kv_cache.layout = KvLayout::hnd; }},
      {"fp8 KV", "",
       [](Batch& b) {
         b.kv_dtype = DType::fp8_e4m3;
         b.k_scales = {0.01f};
         b.v_scales = {0.02f};
       }},
      {"fp8 KV scale count", "fp8 KV cache with 3 K and 1 V scales for 2 KV heads",
       [](Batch& b) {
         b.kv_dtype = DType::fp8_e4m3;
         b.k_scales = {0.01f, 0.02f, 0.03f};
         b.v_scales = {0.02f};
       }},
      {"vllm layout", "vllm", [](Batch& b) { b.spec.kv_cache.layout = KvLayout::vllm; }},
      {"block-sparse", "block-sparse", [](Batch& b) { b.block_sparse = BlockSparseLayout{}; }},
      {"explicit mask", "explicit", [](Batch& b) { b.explicit_mask = ExplicitMask{}; }},
      {"sink count", "one value per q head", [](Batch& b) { b.sink_logits.assign(3, 1.0f); }},
  };
  for (const Feature& feature : features) {
    Batch batch = plain;
    feature.apply(batch);
    const Support s = variant.check(batch, config, gpu);
    if (feature.reason_mentions.empty()) {
      EXPECT_TRUE(s.ok) << feature.name << ": " << s.reason;
    } else {
      EXPECT_FALSE(s.ok) << feature.name << " was accepted";
      EXPECT_NE(s.reason.find(feature.reason_mentions), std::string::npos)
          << feature.name << ": " << s.reason;
    }
  }
}

TEST(Sm80MmaGating, GroupSizesUpToSixteenAndNewerGpusOnly) {
  const Registry registry = make_registry();
  const Variant& variant = sm80_mma_variant(registry);
  for (int group : {1, 3, 7, 16}) {
    const Batch batch = decode_batch(2 * group, 2, 64);
    EXPECT_TRUE(variant.check(batch, variant.default_config(batch, hopper()), hopper()).ok)
        << group;
  }
  const Batch wide = decode_batch(34, 2, 64);  // group 17
  const Support s = variant.check(wide, variant.default_config(wide, hopper()), hopper());
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.reason.find("group size 17"), std::string::npos) << s.reason;

  DeviceInfo turing;
  turing.cc_major = 7;
  turing.cc_minor = 5;
  const Batch batch = decode_batch(8, 2, 64);
  EXPECT_FALSE(variant.check(batch, make_config(64, 4, 2), Target::cuda(turing)).ok);
  EXPECT_FALSE(variant.check(batch, make_config(64, 4, 2), Target::cpu()).ok);
  // A device with less shared memory than the traits allow (sm_86: 99 KiB) refuses big configs.
  DeviceInfo small = {};
  small.cc_major = 8;
  small.cc_minor = 6;
  small.max_shared_per_block_optin = 99 * 1024;
  const Batch d256 = decode_batch(8, 2, 256);
  const Support big = variant.check(d256, make_config(64, 4, 2), Target::cuda(small));
  EXPECT_FALSE(big.ok);
  EXPECT_NE(big.reason.find("this device allows"), std::string::npos) << big.reason;
}

// NVRTC compiles the configs the traits accept, for both archs, both dtypes and fp8 K/V, and ptxas
// reports no spills (the register estimate in the traits keeps accepted configs in registers): the
// default config of each batch and a random one on every other batch (ATTN_TEST_EXHAUSTIVE=1:
// every config).
TEST(Sm80MmaCompile, AcceptedConfigsCompileForSm80AndSm90aWithoutSpills) {
  const fs::path dir =
      fs::temp_directory_path() /
      ("attn-sm80_mma-jit-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  fs::remove_all(dir);
  JitCompiler jit(JitOptions{dir.string(), /*use_cache=*/false});
  const Registry registry = make_registry();
  const Variant& variant = sm80_mma_variant(registry);
  const bool exhaustive = std::getenv("ATTN_TEST_EXHAUSTIVE") != nullptr;
  std::mt19937_64 rng(5);

  struct Job {
    std::string what;
    std::future<CompiledProgram> compiled;
  };
  std::vector<Job> jobs;
  std::vector<Batch> batches;  // programs() reads the batch; keep them alive
  batches.reserve(64);
  for (int head_dim : {64, 80, 96, 128, 192, 256}) {
    for (DType dtype : {DType::bf16, DType::fp16}) {
      // Head dims 80, 96 and 192 (padded copy lanes and fp8 rows): one dtype each, to keep the
      // compile count down; 96 in fp16, the others in bf16.
      const bool padded_dim = head_dim == 80 || head_dim == 96 || head_dim == 192;
      if (padded_dim && (dtype == DType::fp16) != (head_dim == 96)) continue;
      for (bool fp8 : {false, true}) {
        batches.push_back(decode_batch(16, 1, head_dim, dtype));
        if (fp8) {  // programs() reads only the element types and the head dim
          batches.back().kv_dtype = DType::fp8_e4m3;
          batches.back().k_scales = batches.back().v_scales = {1.0f};
        }
        const Batch& batch = batches.back();
        for (const Target& target : {ampere(), hopper()}) {
          std::vector<KernelConfig> accepted;
          const auto space = variant.space(batch, target);
          for (int64_t t : space[0].values) {
            for (int64_t w : space[1].values) {
              for (int64_t s : space[2].values) {
                const KernelConfig config = make_config(int(t), int(w), int(s));
                if (variant.check(batch, config, target)) accepted.push_back(config);
              }
            }
          }
          ASSERT_FALSE(accepted.empty());
          std::shuffle(accepted.begin(), accepted.end(), rng);
          // The sample always includes the default config.
          accepted.insert(accepted.begin(), variant.default_config(batch, target));
          // The default, and on every other batch one random config more (CI time).
          const size_t take = exhaustive
                                  ? accepted.size()
                                  : std::min<size_t>(batches.size() % 2 ? 2 : 1, accepted.size());
          for (size_t i = 0; i < take; ++i) {
            JitProgram program = variant.programs(batch, accepted[i], target).front();
            program.options.push_back("--ptxas-options=-v");
            jobs.push_back({program.name + " " + program.arch, jit.compile_async(program)});
          }
        }
      }
    }
  }
  const std::regex spills("([1-9][0-9]*) bytes spill (stores|loads)");
  for (Job& job : jobs) {
    try {
      const CompiledProgram compiled = job.compiled.get();
      EXPECT_EQ(compiled.lowered_names.size(), 1u) << job.what;  // attention (merges in-kernel)
      // ptxas -v reports each kernel's registers; a spill would show as bytes spill stores/loads.
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
