// mla_decode.sm90_wgmma without a GPU: the traits' shared-memory layout and rules (TMA boxes of
// page pieces, the widths the two consumer warpgroups take, the register limit), the variant's
// gating (Hopper only, every page size 1 to 256 accepted or declined with the rule's words, an
// fp8 cache and other rope widths declined, DeepSeek-V3's presets taken with the default config),
// and NVRTC compiles of every accepted config at DeepSeek-V3's widths for sm_90a without spills.
#include <gtest/gtest.h>

#include <filesystem>
#include <future>

#include "kernels/jit/jit_compiler.hpp"
#include "kernels/mla_decode/sm90_wgmma_traits.hpp"
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
namespace wg_traits = mla_decode::sm90_wgmma;

TEST(MlaSm90WgmmaTraits, SharedMemoryIsQStagesAndBarriersAfterAlignment) {
  // DeepSeek-V3: Q 64 x 576 x 2, two stages of 64 latent rows, 4 mbarriers.
  EXPECT_EQ(wg_traits::q_bytes(512, 64), 64 * 576 * 2);
  EXPECT_EQ(wg_traits::stage_bytes(512, 64, 64), 64 * 576 * 2);
  EXPECT_EQ(wg_traits::shared_bytes(512, 64, 64, 2), 1024 + 3 * 64 * 576 * 2 + 4 * 8);
  EXPECT_LE(wg_traits::shared_bytes(512, 64, 64, 2), wg_traits::kMaxSharedBytes);
  // qk_split adds the exchange: two warpgroups' row maxima and P of the block (64 x 64 16-bit).
  EXPECT_EQ(wg_traits::exchange_bytes(64, true), 2 * 64 * 4 + 64 * 64 * 2);
  EXPECT_EQ(wg_traits::exchange_bytes(64, false), 0);
  EXPECT_EQ(wg_traits::shared_bytes(512, 64, 64, 2, true),
            wg_traits::shared_bytes(512, 64, 64, 2) + wg_traits::exchange_bytes(64, true));
  EXPECT_LE(wg_traits::shared_bytes(512, 64, 64, 2, true), wg_traits::kMaxSharedBytes);
  EXPECT_EQ(wg_traits::check(512, 64, 64, 2, 64, true), wg_traits::kOk);
  EXPECT_LT(wg_traits::register_estimate(512, 64, true), wg_traits::register_estimate(512, 64));
  // A third 64-row stage does not fit; four 32-row stages do.
  EXPECT_EQ(wg_traits::check(512, 64, 64, 3), wg_traits::kSharedMemory);
  EXPECT_EQ(wg_traits::check(512, 64, 32, 4), wg_traits::kOk);
  // The barriers lie on 8-byte words after the stage area of every config.
  for (int block : {32, 64}) {
    for (int stages : {2, 3, 4}) {
      EXPECT_EQ(wg_traits::stage_area_bytes(512, 64, block, stages),
                stages * wg_traits::stage_bytes(512, 64, block));
      EXPECT_EQ(wg_traits::barrier_offset(512, 64, block, stages) % 8, 0);
    }
  }
}

TEST(MlaSm90WgmmaTraits, BoxesArePagePiecesOfWholeSwizzleAtoms) {
  EXPECT_EQ(wg_traits::box_tokens(64, 64), 64);
  EXPECT_EQ(wg_traits::box_tokens(16, 64), 16);
  EXPECT_EQ(wg_traits::box_tokens(256, 64), 64);
  EXPECT_EQ(wg_traits::box_tokens(48, 64), 16);
  EXPECT_EQ(wg_traits::box_tokens(12, 32), 4);
  for (int page = 1; page <= 256; ++page) {
    for (int block : {32, 64}) {
      const int box = wg_traits::box_tokens(page, block);
      EXPECT_EQ(block % box, 0) << page;
      EXPECT_EQ(page % box, 0) << page;
      EXPECT_EQ(wg_traits::check(512, 64, block, 2, page) == wg_traits::kOk, page % 8 == 0)
          << page << " " << block;
    }
  }
}

TEST(MlaSm90WgmmaTraits, WidthsSplitOverTwoWarpgroupsAndRegisters) {
  EXPECT_EQ(wg_traits::consumer_columns(512), 256);
  EXPECT_EQ(wg_traits::pv_chunk(512), 256);
  EXPECT_EQ(wg_traits::pv_chunk(256), 128);
  EXPECT_EQ(wg_traits::pv_chunk(384), 64);
  EXPECT_EQ(wg_traits::check(448, 64, 64, 2), wg_traits::kRank);
  EXPECT_EQ(wg_traits::check(512, 32, 64, 2), wg_traits::kRope);
  EXPECT_EQ(wg_traits::check(512, 64, 128, 2), wg_traits::kBlockTokens);
  EXPECT_EQ(wg_traits::check(512, 64, 64, 1), wg_traits::kStages);
  // A 768-wide rank fits shared memory, but its accumulator is 192 registers per consumer thread;
  // 1024 + 128 does not fit shared memory at all.
  EXPECT_EQ(wg_traits::check(768, 64, 32, 2), wg_traits::kRegisters);
  EXPECT_EQ(wg_traits::check(1024, 128, 32, 2), wg_traits::kSharedMemory);
  EXPECT_LE(wg_traits::register_estimate(512, 64), wg_traits::kMaxRegisters);
}

TEST(MlaSm90WgmmaGating, TakesTheDeepSeekPresetsOnHopperOnly) {
  const Registry registry = make_registry();
  const Variant& variant = *registry.find("mla_decode.sm90_wgmma");
  for (const char* name :
       {"decode-deepseek-v3-tp8-mla-64x4096", "decode-deepseek-v3-mla-64x4096",
        "decode-kimi-k2-mla-64x4096", "decode-deepseek-v3-mla-speculative-64x4096"}) {
    const Batch batch = generate_batch(load_preset(name));
    const KernelConfig config = variant.default_config(batch, testing::hopper_target());
    const Support s = variant.check(batch, config, testing::hopper_target());
    EXPECT_TRUE(s.ok) << name << " " << config.key() << ": " << s.reason;
    EXPECT_EQ(config.get("block_tokens"), 64) << name;
    EXPECT_EQ(config.get("qk_split"), 1) << name;
    EXPECT_FALSE(variant.check(batch, config, testing::ampere_target()).ok) << name;
  }
  const Batch fp8 = generate_batch(load_preset("decode-deepseek-v3-tp8-mla-fp8-64x4096"));
  const Support s = variant.check(fp8, variant.default_config(fp8, testing::hopper_target()),
                                  testing::hopper_target());
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.reason.find("fp8"), std::string::npos) << s.reason;
}

// Every page size 1 to 256 with every config: accepted exactly when the traits accept it, else
// declined with the rule's words (pages whose box is not whole 8-row atoms name the page size).
TEST(MlaSm90WgmmaGating, EveryPageSizeIsAcceptedOrDeclinedWithTheRule) {
  const Registry registry = make_registry();
  const Variant& variant = *registry.find("mla_decode.sm90_wgmma");
  const Target target = testing::hopper_target();
  int accepted = 0, by_page = 0;
  for (int page = 1; page <= 256; page += (page < 24 ? 1 : 13)) {
    const Batch batch = testing::small_latent_batch(16, 512, 64, page);
    for (const KernelConfig& config :
         testing::space_configs(variant, batch, target, {{"num_splits", 0}})) {
      const Support s = variant.check(batch, config, target);
      const int rule =
          wg_traits::check(512, 64, int(config.get("block_tokens")), int(config.get("stages")),
                           page, config.get("qk_split") != 0);
      EXPECT_EQ(s.ok, rule == wg_traits::kOk) << page << " " << config.key() << ": " << s.reason;
      if (rule == wg_traits::kPageSize) {
        ++by_page;
        EXPECT_NE(s.reason.find("pages of " + std::to_string(page) + " keys"), std::string::npos)
            << s.reason;
      }
      if (s.ok) {
        ++accepted;
        EXPECT_LE(wg_traits::shared_bytes(512, 64, int(config.get("block_tokens")),
                                          int(config.get("stages")), config.get("qk_split") != 0),
                  target.max_shared_per_block);
      }
    }
  }
  EXPECT_GT(accepted, 0);
  EXPECT_GT(by_page, 0);
  // The common page sizes run.
  for (int page : {16, 64}) {
    const Batch batch = testing::small_latent_batch(16, 512, 64, page);
    EXPECT_TRUE(variant.check(batch, variant.default_config(batch, target), target).ok) << page;
  }
}

TEST(MlaSm90WgmmaGating, OtherWidthsAreDeclinedWithAReason) {
  const Registry registry = make_registry();
  const Variant& variant = *registry.find("mla_decode.sm90_wgmma");
  const Target target = testing::hopper_target();
  const Batch narrow_rope = testing::small_latent_batch(16, 512, 32, 64);
  const Support rope =
      variant.check(narrow_rope, variant.default_config(narrow_rope, target), target);
  EXPECT_FALSE(rope.ok);
  EXPECT_NE(rope.reason.find("qk_rope_head_dim"), std::string::npos) << rope.reason;
  const Batch odd_rank = testing::small_latent_batch(16, 448, 64, 64);
  const Support rank = variant.check(odd_rank, variant.default_config(odd_rank, target), target);
  EXPECT_FALSE(rank.ok);
  EXPECT_NE(rank.reason.find("kv_lora_rank 448"), std::string::npos) << rank.reason;
  const Batch wide = testing::small_latent_batch(16, 1024, 128, 64);
  const Support regs = variant.check(wide, variant.default_config(wide, target), target);
  EXPECT_FALSE(regs.ok);
  const Batch small = testing::small_latent_batch(16, 256, 64, 64, "", "fp16");
  EXPECT_TRUE(variant.check(small, variant.default_config(small, target), target).ok);
}

// NVRTC compiles every accepted config at DeepSeek-V3's widths (bf16, pages of 64 keys) and the
// default config in fp16 and over 16-key pages (four boxes per block) for sm_90a, and ptxas
// reports no spills (the traits' register estimate holds).
TEST(MlaSm90WgmmaCompile, AcceptedConfigsCompileForSm90aWithoutSpills) {
  const fs::path dir =
      fs::temp_directory_path() /
      ("attn-mla-sm90-jit-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  fs::remove_all(dir);
  JitCompiler jit(JitOptions{dir.string(), /*use_cache=*/false});
  const Registry registry = make_registry();
  const Variant& variant = *registry.find("mla_decode.sm90_wgmma");
  const Target target = testing::hopper_target();
  std::vector<testing::CompileJob> jobs;
  for (const auto& [dtype, page] :
       {std::pair<std::string, int>{"bf16", 64}, {"fp16", 64}, {"bf16", 16}}) {
    const Batch batch = testing::small_latent_batch(16, 512, 64, page, "", dtype);
    // Every accepted config of bf16 over 64-key pages; the default of the others.
    std::vector<KernelConfig> configs = {variant.default_config(batch, target)};
    if (dtype == "bf16" && page == 64) {
      configs = testing::space_configs(variant, batch, target, {{"num_splits", 0}});
    }
    int accepted = 0;
    for (const KernelConfig& config : configs) {
      if (!variant.check(batch, config, target)) continue;
      ++accepted;
      JitProgram program = variant.programs(batch, config, target).front();
      program.options.push_back("--ptxas-options=-v");
      jobs.push_back({program.kernels.front() + " " + program.arch, jit.compile_async(program)});
    }
    EXPECT_GE(accepted, configs.size() > 1 ? 6 : 1) << dtype << " " << page;
  }
  testing::expect_compiled_without_spills(jobs, 1);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace attn
