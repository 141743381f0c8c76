// mla_decode.sm80_mma without a GPU: the traits' shared-memory rule for an fp8 latent cache (fp8
// staging buffers and one 16-bit block tile) and for a 16-bit one, the variant's gating of fp8
// batches (accepted with every config that fits, declined with the rule's words otherwise, never
// more shared memory than the device allows), and NVRTC compiles of accepted configs for sm_80 and
// sm_90a without spills (a seeded sample; ATTN_TEST_EXHAUSTIVE=1 compiles them all).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <random>

#include "kernels/jit/jit_compiler.hpp"
#include "kernels/mla_decode/sm80_mma_traits.hpp"
#include "kernels/registry.hpp"
#include "tests/kernels/compile_jobs.hpp"
#include "tests/kernels/every_config_cases.hpp"
#include "tests/kernels/mla_decode/latent_batch.hpp"
#include "tests/target_fixtures.hpp"
#include "workloads/presets.hpp"
#include "workloads/workload_spec.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;
namespace traits = mla_decode::sm80_mma;

// Every config of the variant's space with num_splits 0 (the split count changes no rule).
std::vector<KernelConfig> mla_sm80_configs(const Variant& variant, const Batch& batch,
                                           const Target& target) {
  return testing::space_configs(variant, batch, target, {{"num_splits", 0}});
}

Batch deepseek_batch(int q_heads, int rank, int rope, const std::string& kv_dtype,
                     const std::string& dtype = "bf16") {
  testing::LatentShape shape;
  shape.q_heads = q_heads;
  shape.kv_lora_rank = rank;
  shape.qk_rope_head_dim = rope;
  shape.page_size = 64;
  shape.kv_dtype = kv_dtype;
  nlohmann::json spec = testing::latent_workload_json(shape);
  spec["model"]["dtype"] = dtype;
  return generate_batch(parse_workload(spec.dump(), "latent"));
}

TEST(MlaSm80MmaTraits, Fp8PipelineIsStagesOfFp8BlocksAndOne16BitTile) {
  EXPECT_EQ(traits::fp8_stage_bytes(512, 64, 32), 32 * 576);
  const int q = traits::q_bytes(512, 64, 1);
  EXPECT_EQ(q, 16 * 576 * 2);
  EXPECT_EQ(traits::q_and_pipeline_bytes(512, 64, 1, 32, 3, false, false), q + 3 * 32 * 576 * 2);
  // A 16-bit cache split by width: Q in the last stage's bytes where its rows fit there.
  EXPECT_EQ(traits::q_and_pipeline_bytes(512, 64, 1, 32, 3, true, false), 3 * 32 * 576 * 2);
  EXPECT_EQ(traits::q_and_pipeline_bytes(512, 64, 2, 16, 3, true, false), 2 * q + 3 * 16 * 576 * 2);
  EXPECT_EQ(traits::q_and_pipeline_bytes(512, 64, 1, 32, 3, false, true),
            q + 3 * 32 * 576 + 32 * 576 * 2);
  // Split by width, Q's rows share the bytes of the 16-bit tile (the larger of the two).
  EXPECT_EQ(traits::q_and_pipeline_bytes(512, 64, 1, 32, 3, true, true), 3 * 32 * 576 + 32 * 1152);
  EXPECT_EQ(traits::q_and_pipeline_bytes(512, 64, 2, 16, 2, true, true), 2 * 16 * 576 + 32 * 1152);
  // Where the first stage starts: after Q's own bytes, at 0 (Q in the last stage), or after the
  // tile that holds Q (an fp8 cache split by width).
  EXPECT_EQ(traits::stages_offset(512, 64, 1, 32, false, false), q);
  EXPECT_EQ(traits::stages_offset(512, 64, 1, 32, true, false), 0);
  EXPECT_EQ(traits::stages_offset(512, 64, 2, 16, true, false), 2 * q);
  EXPECT_EQ(traits::stages_offset(512, 64, 1, 32, false, true), q);
  EXPECT_EQ(traits::stages_offset(512, 64, 1, 32, true, true), 32 * 1152);
  EXPECT_EQ(traits::stages_offset(512, 64, 2, 16, true, true), 2 * q);
  // Everything else is the 16-bit path's.
  const int rest = traits::q_bytes(512, 64, 2) + traits::p_bytes(2, 64) +
                   traits::reduce_bytes(2, 4) + traits::factor_bytes(2) +
                   traits::partial_score_bytes(2, 64, 4, false);
  EXPECT_EQ(traits::shared_bytes(512, 64, 2, 64, 4, 2, false, true),
            rest + 2 * 64 * 576 + 64 * 1152);
  EXPECT_EQ(traits::shared_bytes(512, 64, 2, 64, 4, 2, false, false), rest + 2 * 64 * 1152);
}

// Over the whole space and the latent widths: two fp8 stages take at most what two 16-bit stages
// take (as much where Q lies in the pipeline's bytes on both), three take less; an fp8 config
// breaks the shared-memory rule exactly when its bytes are above the limit, and no other rule
// differs from the 16-bit path's.
TEST(MlaSm80MmaTraits, Fp8SharedMemoryRuleIsExact) {
  int declined = 0, accepted = 0;
  for (int rank : {64, 256, 512, 1024}) {
    for (int rope : {64, 128}) {
      for (int m_tiles : {1, 2, 4}) {
        for (int block : {16, 32, 64, 128}) {
          for (int warps : {4, 8}) {
            for (int stages : {2, 3}) {
              for (bool by_dims : {false, true}) {
                const int fp8 =
                    traits::shared_bytes(rank, rope, m_tiles, block, warps, stages, by_dims, true);
                const int wide =
                    traits::shared_bytes(rank, rope, m_tiles, block, warps, stages, by_dims, false);
                EXPECT_LE(fp8, wide);
                if (stages >= 3 || (by_dims && traits::tile_rows(m_tiles) > block)) {
                  EXPECT_LT(fp8, wide);
                }
                const int rule =
                    traits::check(rank, rope, m_tiles, block, warps, stages, by_dims, true);
                const int wide_rule =
                    traits::check(rank, rope, m_tiles, block, warps, stages, by_dims, false);
                if (wide_rule != traits::kSharedMemory) {
                  EXPECT_EQ(rule, wide_rule);
                } else {
                  EXPECT_EQ(rule == traits::kSharedMemory, fp8 > traits::kMaxSharedBytes);
                }
                if (rule == traits::kSharedMemory) {
                  EXPECT_GT(fp8, traits::kMaxSharedBytes);
                  ++declined;
                }
                if (rule == traits::kOk) {
                  EXPECT_LE(fp8, traits::kMaxSharedBytes);
                  ++accepted;
                }
              }
            }
          }
        }
      }
    }
  }
  EXPECT_GT(declined, 0);
  EXPECT_GT(accepted, 0);
}

TEST(MlaSm80MmaGating, DeclaresAnFp8LatentCacheAndTakesTheFp8Presets) {
  const Registry registry = make_registry();
  const Variant& variant = *registry.find("mla_decode.sm80_mma");
  for (const char* name :
       {"decode-deepseek-v3-mla-fp8-64x4096", "decode-deepseek-v3-tp8-mla-fp8-64x4096",
        "decode-deepseek-v3-mla-fp8-128x4096"}) {
    const Batch batch = generate_batch(load_preset(name));
    ASSERT_EQ(batch.kv_dtype, DType::fp8_e4m3) << name;
    for (const Target& target : {testing::hopper_target(), testing::ampere_target()}) {
      const KernelConfig config = variant.default_config(batch, target);
      const Support s = variant.check(batch, config, target);
      EXPECT_TRUE(s.ok) << name << " " << config.key() << ": " << s.reason;
    }
  }
}

// Every config is accepted or declined with the rule's words, for the fp8 and the 16-bit cache
// alike; an accepted one never needs more shared memory than the target allows, so none fails at
// launch.
TEST(MlaSm80MmaGating, Fp8ConfigsFitTheTargetOrAreDeclinedWithTheRule) {
  const Registry registry = make_registry();
  const Variant& variant = *registry.find("mla_decode.sm80_mma");
  for (const auto& [rank, rope] : {std::pair{512, 64}, std::pair{1024, 128}}) {
    const Batch batch = deepseek_batch(128, rank, rope, "fp8_e4m3");
    for (const Target& target : {testing::hopper_target(), testing::ampere_target()}) {
      int accepted = 0, by_shared_memory = 0;
      for (const KernelConfig& config : mla_sm80_configs(variant, batch, target)) {
        const Support s = variant.check(batch, config, target);
        const int rule =
            traits::check(rank, rope, int(config.get("m_tiles")), int(config.get("block_tokens")),
                          int(config.get("warps")), int(config.get("stages")),
                          config.get("qk_by_dims") != 0, true);
        const int bytes =
            traits::shared_bytes(rank, rope, int(config.get("m_tiles")),
                                 int(config.get("block_tokens")), int(config.get("warps")),
                                 int(config.get("stages")), config.get("qk_by_dims") != 0, true);
        if (s.ok) {
          ++accepted;
          EXPECT_EQ(rule, traits::kOk) << config.key();
          EXPECT_LE(bytes, target.max_shared_per_block) << config.key();
        } else if (rule == traits::kSharedMemory ||
                   (rule == traits::kOk && bytes > target.max_shared_per_block)) {
          ++by_shared_memory;
          EXPECT_NE(s.reason.find("shared memory"), std::string::npos) << s.reason;
          EXPECT_NE(s.reason.find(std::to_string(bytes)), std::string::npos) << s.reason;
        } else {
          EXPECT_NE(rule, traits::kOk) << config.key() << ": " << s.reason;
        }
      }
      // 1024 + 128 fits only the H100-like target's shared memory (as with a 16-bit cache).
      if (rank == 512 || target.max_shared_per_block > 200 * 1024) {
        EXPECT_GT(accepted, 0) << rank << "+" << rope;
      }
      EXPECT_GT(by_shared_memory, 0) << rank << "+" << rope;
    }
  }
}

TEST(MlaSm80MmaGating, Fp8ProgramsNameTheCacheDtype) {
  const Registry registry = make_registry();
  const Variant& variant = *registry.find("mla_decode.sm80_mma");
  const Target target = testing::hopper_target();
  const Batch fp8 = deepseek_batch(16, 512, 64, "fp8_e4m3");
  const Batch wide = deepseek_batch(16, 512, 64, "");
  const KernelConfig config = variant.default_config(wide, target);
  const JitProgram p8 = variant.programs(fp8, config, target).front();
  const JitProgram p16 = variant.programs(wide, config, target).front();
  EXPECT_NE(p8.name, p16.name);
  EXPECT_NE(p8.name.find("fp8_e4m3"), std::string::npos) << p8.name;
  EXPECT_NE(p8.kernels.front().find(", true>"), std::string::npos) << p8.kernels.front();
  EXPECT_NE(p16.kernels.front().find(", false>"), std::string::npos) << p16.kernels.front();
}

// NVRTC compiles accepted configs of the fp8 and the 16-bit path, bf16 and fp16, for sm_80 and
// sm_90a, and ptxas reports no spills (the traits' register estimate holds for both paths).
TEST(MlaSm80MmaCompile, AcceptedConfigsCompileForSm80AndSm90aWithoutSpills) {
  const fs::path dir =
      fs::temp_directory_path() /
      ("attn-mla-sm80-jit-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  fs::remove_all(dir);
  JitCompiler jit(JitOptions{dir.string(), /*use_cache=*/false});
  const Registry registry = make_registry();
  const Variant& variant = *registry.find("mla_decode.sm80_mma");
  const bool exhaustive = std::getenv("ATTN_TEST_EXHAUSTIVE") != nullptr;
  std::mt19937_64 rng(11);
  std::vector<testing::CompileJob> jobs;
  std::vector<Batch> batches;
  batches.reserve(8);
  for (const std::string dtype : {"bf16", "fp16"}) {
    for (const std::string kv_dtype : {"", "fp8_e4m3"}) {
      // The fp8 path in both dtypes; the 16-bit path (unchanged) in bf16 only.
      if (kv_dtype.empty() && dtype == "fp16") continue;
      batches.push_back(deepseek_batch(16, 512, 64, kv_dtype, dtype));
      const Batch& batch = batches.back();
      for (const Target& target : {testing::ampere_target(), testing::hopper_target()}) {
        std::vector<KernelConfig> accepted;
        for (const KernelConfig& config : mla_sm80_configs(variant, batch, target)) {
          if (variant.check(batch, config, target)) accepted.push_back(config);
        }
        ASSERT_FALSE(accepted.empty());
        std::shuffle(accepted.begin(), accepted.end(), rng);
        accepted.insert(accepted.begin(), variant.default_config(batch, target));
        const size_t take = exhaustive ? accepted.size() : std::min<size_t>(3, accepted.size());
        for (size_t i = 0; i < take; ++i) {
          JitProgram program = variant.programs(batch, accepted[i], target).front();
          program.options.push_back("--ptxas-options=-v");
          jobs.push_back(
              {program.kernels.front() + " " + program.arch, jit.compile_async(program)});
        }
      }
    }
  }
  testing::expect_compiled_without_spills(jobs, 1);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace attn
