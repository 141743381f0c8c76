// mla_decode.sm90_wgmma_key_rows without a GPU: the traits' shared-memory layout (every buffer on a
// 1024-byte swizzle period, the state each stage holds after the loop) and rules, the variant's
// gating (Hopper only, pages of whole 8-key boxes, other widths declined with a reason, 32-row
// tiles refused at rank 512 for their registers and the default where they fit, an fp8 cache
// taken), the fp8 operands' orders, and NVRTC compiles of both tile widths in bf16 and fp16, over
// 16-bit and fp8 caches, for sm_90a without spills.
#include <gtest/gtest.h>

#include <filesystem>

#include "kernels/jit/jit_compiler.hpp"
#include "kernels/mla_decode/sm90_wgmma_key_rows_traits.hpp"
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
namespace kr = mla_decode::sm90_wgmma_key_rows;

TEST(MlaSm90KeyRowsTraits, SharedMemoryIsQStagesPExchangeAndBarriers) {
  // DeepSeek-V3 at 16 rows: Q 16 x 576 x 2, two stages of 64 latent rows, two P^T of 16 x 64,
  // the maxima [2][2][4][16] floats, 4 mbarriers.
  EXPECT_EQ(kr::q_bytes(512, 64, 16), 16 * 576 * 2);
  EXPECT_EQ(kr::stage_bytes(512, 64), 64 * 576 * 2);
  EXPECT_EQ(kr::shared_bytes(512, 64, 16),
            1024 + 16 * 576 * 2 + 2 * 64 * 576 * 2 + 2 * 16 * 128 + 2 * 2 * 4 * 16 * 4 + 4 * 8);
  for (int rows : {16, 32}) {
    for (int rope : {64, 128}) {
      for (int rank : {128, 256, 512}) {
        if (rank == 512 && rows == 32) continue;  // past the registers (below)
        SCOPED_TRACE(std::to_string(rank) + " " + std::to_string(rope) + " " +
                     std::to_string(rows));
        ASSERT_EQ(kr::check(rank, rope, rows), kr::kOk);
        // The swizzled operands start on the swizzle's 1024-byte period; the barriers on 8 bytes.
        EXPECT_EQ(kr::stages_offset(rank, rope, rows) % 1024, 0);
        EXPECT_EQ(kr::stage_bytes(rank, rope) % 1024, 0);
        EXPECT_EQ(kr::p_offset(rank, rope, rows) % 1024, 0);
        EXPECT_EQ(kr::p_bytes(rows) % 1024, 0);
        EXPECT_EQ(kr::barrier_offset(rank, rope, rows) % 8, 0);
        // After the loop a stage holds warpgroup 1's state or the rows.
        EXPECT_LE(kr::state_bytes(rank, rows), kr::stage_bytes(rank, rope));
        EXPECT_LE(kr::rows_bytes(rank, rows), kr::stage_bytes(rank, rope));
        EXPECT_LE(kr::register_estimate(rank, rows), kr::kConsumerRegisters);
      }
    }
  }
}

// Over fp8 codes: 128-code column blocks (5 at DeepSeek-V3's 576, the last half past the row),
// as many stages as fit (5 there, where 16-bit blocks fit 2), Q as two e4m3 terms laid out as the
// stages' rows, Q's row factors before the barriers, the rows and warpgroup 1's state within the
// stages after the loop.
TEST(MlaSm90KeyRowsTraits, Fp8StagesAreCodesAsManyAsFit) {
  EXPECT_EQ(kr::fp8_column_blocks(512, 64), 5);
  EXPECT_EQ(kr::stage_bytes(512, 64, true), 64 * 5 * 128);
  EXPECT_EQ(kr::stages(512, 64, 16), 2);
  EXPECT_EQ(kr::stages(512, 64, 16, true), 5);
  EXPECT_EQ(kr::q_bytes(512, 64, 16, true), 2 * 5 * 16 * 128);
  EXPECT_EQ(kr::shared_bytes(512, 64, 16, true), 1024 + 2 * 5 * 16 * 128 + 5 * 64 * 640 +
                                                     2 * 16 * 128 + 2 * 2 * 4 * 16 * 4 + 16 * 4 +
                                                     5 * 2 * 8);
  for (int rows : {16, 32}) {
    for (int rope : {64, 128}) {
      for (int rank : {128, 192, 256, 448, 512}) {
        const bool fits = kr::register_estimate(rank, rows, true) <= kr::kMaxRegisters;
        SCOPED_TRACE(std::to_string(rank) + " " + std::to_string(rope) + " " +
                     std::to_string(rows));
        ASSERT_EQ(kr::check(rank, rope, rows, 0, true), fits ? kr::kOk : kr::kRegisters);
        if (!fits) continue;
        EXPECT_LE(kr::shared_bytes(rank, rope, rows, true), kr::kMaxSharedBytes);
        EXPECT_GE(kr::stages(rank, rope, rows, true), 3);
        EXPECT_EQ(kr::stage_bytes(rank, rope, true) % 1024, 0);
        EXPECT_EQ(kr::q_bytes(rank, rope, rows, true) / 2 % 1024, 0);  // the lo term's start
        EXPECT_EQ(kr::p_offset(rank, rope, rows, true) % 1024, 0);
        EXPECT_EQ(kr::barrier_offset(rank, rope, rows, true) % 8, 0);
        EXPECT_GE(kr::state_offset(rank, rope, rows, true), kr::rows_bytes(rank, rows));
        EXPECT_LE(kr::state_offset(rank, rope, rows, true) + kr::state_bytes(rank, rows),
                  kr::stages(rank, rope, rows, true) * kr::stage_bytes(rank, rope, true));
      }
    }
  }
  // 32 rows at rank 512 are past the launch's 168 registers either way; at 256 they fit.
  EXPECT_EQ(kr::check(512, 64, 32, 0, true), kr::kRegisters);
  EXPECT_EQ(kr::check(256, 64, 32, 0, true), kr::kOk);
}

// The fp8 O^T's row order: fp8_v_dim maps a warp's 16 accumulator rows onto its 16 dims, rows r
// and r + 8 on the two dims of the b16 element the transposed ldmatrix gives lane 4 r.
TEST(MlaSm90KeyRowsFp8, AccumulatorRowsAreAPermutationOfTheDims) {
  std::vector<int> dims(64, 0);
  for (int row = 0; row < 64; ++row) {
    const int dim = kr::fp8_v_dim(row);
    ASSERT_GE(dim, 0);
    ASSERT_LT(dim, 64);
    ++dims[size_t(dim)];
    EXPECT_EQ(dim / 16, row / 16);  // a warp's rows stay its dims
    EXPECT_EQ(dim % 16, row % 16 < 8 ? 2 * (row % 8) : 2 * (row % 8) + 1);
  }
  EXPECT_EQ(dims, std::vector<int>(64, 1));
}

TEST(MlaSm90KeyRowsTraits, RulesNameWhatBreaks) {
  EXPECT_EQ(kr::check(512, 64, 16), kr::kOk);
  EXPECT_EQ(kr::check(480, 64, 16), kr::kRank);
  EXPECT_EQ(kr::check(448, 64, 16), kr::kOk);
  EXPECT_EQ(kr::check(512, 32, 16), kr::kRope);
  EXPECT_EQ(kr::check(512, 64, 64), kr::kTileRows);
  EXPECT_EQ(kr::check(512, 64, 8), kr::kTileRows);
  // 1024 + 128 wide: two stages of 64 rows do not fit shared memory.
  EXPECT_EQ(kr::check(1024, 128, 16), kr::kSharedMemory);
  // 32 rows at rank 512: 128 accumulator registers per consumer thread, past the launch's 168
  // with the rest; at rank 256 they fit.
  EXPECT_EQ(kr::check(512, 64, 32), kr::kRegisters);
  EXPECT_EQ(kr::check(256, 64, 32), kr::kOk);
  for (int page = 1; page <= 256; ++page) {
    const int box = kr::box_tokens(page);
    EXPECT_EQ(kr::kBlock % box, 0) << page;
    EXPECT_EQ(page % box, 0) << page;
    EXPECT_EQ(kr::check(512, 64, 16, page) == kr::kOk, page % 8 == 0) << page;
  }
}

TEST(MlaSm90KeyRowsGating, TakesTheDeepSeekPresetsOnHopperOnly) {
  const Registry registry = make_registry();
  const Variant& variant = *registry.find("mla_decode.sm90_wgmma_key_rows");
  for (const auto& [name, rows] :
       {std::pair<const char*, int>{"decode-deepseek-v3-tp8-mla-64x4096", 16},
        {"decode-deepseek-v3-mla-64x4096", 16},
        {"decode-deepseek-v3-mla-speculative-64x4096", 16}}) {
    const Batch batch = generate_batch(load_preset(name));
    const KernelConfig config = variant.default_config(batch, testing::hopper_target());
    EXPECT_EQ(config.get("tile_rows"), rows) << name;
    const Support s = variant.check(batch, config, testing::hopper_target());
    EXPECT_TRUE(s.ok) << name << " " << config.key() << ": " << s.reason;
    EXPECT_FALSE(variant.check(batch, config, testing::ampere_target()).ok) << name;
  }
  for (const char* name :
       {"decode-deepseek-v3-tp8-mla-fp8-64x4096", "decode-deepseek-v3-mla-fp8-64x4096"}) {
    const Batch fp8 = generate_batch(load_preset(name));
    const KernelConfig config = variant.default_config(fp8, testing::hopper_target());
    const Support s = variant.check(fp8, config, testing::hopper_target());
    EXPECT_TRUE(s.ok) << name << " " << config.key() << ": " << s.reason;
    EXPECT_NE(variant.programs(fp8, config, testing::hopper_target())
                  .front()
                  .kernels.front()
                  .find(", true>"),
              std::string::npos);
  }
}

TEST(MlaSm90KeyRowsGating, PagesAndWidthsAreAcceptedOrDeclinedWithTheRule) {
  const Registry registry = make_registry();
  const Variant& variant = *registry.find("mla_decode.sm90_wgmma_key_rows");
  const Target target = testing::hopper_target();
  for (int page : {1, 4, 8, 12, 16, 48, 64, 256}) {
    const Batch batch = testing::small_latent_batch(16, 256, 64, page);
    for (const KernelConfig& config :
         testing::space_configs(variant, batch, target, {{"num_splits", 0}})) {
      const Support s = variant.check(batch, config, target);
      EXPECT_EQ(s.ok, page % 8 == 0) << page << " " << config.key() << ": " << s.reason;
      if (!s.ok) {
        EXPECT_NE(s.reason.find("pages of " + std::to_string(page) + " keys"), std::string::npos)
            << s.reason;
      }
    }
  }
  const Batch narrow_rope = testing::small_latent_batch(16, 512, 32, 64);
  const Support rope =
      variant.check(narrow_rope, variant.default_config(narrow_rope, target), target);
  EXPECT_FALSE(rope.ok);
  EXPECT_NE(rope.reason.find("qk_rope_head_dim"), std::string::npos) << rope.reason;
  const Batch deepseek = testing::small_latent_batch(16, 512, 64, 64);
  KernelConfig wide = variant.default_config(deepseek, target);
  wide.set("tile_rows", 32);
  const Support regs = variant.check(deepseek, wide, target);
  EXPECT_FALSE(regs.ok);
  EXPECT_NE(regs.reason.find("registers"), std::string::npos) << regs.reason;
  // At rank 256 with 32 rows per sequence (16 heads, 2 tokens) the default takes 32-row tiles.
  const Batch small = testing::small_latent_batch(16, 256, 128, 16, "", "fp16");
  EXPECT_EQ(variant.default_config(small, target).get("tile_rows"), 32);
  EXPECT_TRUE(variant.check(small, variant.default_config(small, target), target).ok);
}

// NVRTC compiles 16-row tiles at DeepSeek-V3's widths (bf16 over 64-key pages, rope 128, fp16
// over 16-key pages: four boxes per block) and 32-row tiles at rank 256 for sm_90a; ptxas reports
// no spills (the traits' register estimate holds).
TEST(MlaSm90KeyRowsCompile, AcceptedConfigsCompileForSm90aWithoutSpills) {
  const fs::path dir = fs::temp_directory_path() /
                       ("attn-mla-key-rows-jit-" +
                        std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  fs::remove_all(dir);
  JitCompiler jit(JitOptions{dir.string(), /*use_cache=*/false});
  const Registry registry = make_registry();
  const Variant& variant = *registry.find("mla_decode.sm90_wgmma_key_rows");
  const Target target = testing::hopper_target();
  std::vector<testing::CompileJob> jobs;
  for (const auto& [dtype, page, rope, rows, kv] :
       {std::tuple<std::string, int, int, int, std::string>{"bf16", 64, 64, 16, ""},
        {"bf16", 64, 128, 16, ""},
        {"fp16", 16, 64, 16, ""},
        {"bf16", 64, 64, 32, ""},
        {"bf16", 64, 128, 32, ""},
        {"bf16", 64, 64, 16, "fp8_e4m3"},
        {"bf16", 64, 128, 16, "fp8_e4m3"},
        {"fp16", 16, 64, 16, "fp8_e4m3"},
        {"bf16", 8, 128, 32, "fp8_e4m3"},
        {"fp16", 64, 64, 32, "fp8_e4m3"}}) {
    const int rank = rows == 32 ? 256 : 512;
    const Batch batch = testing::small_latent_batch(16, rank, rope, page, kv, dtype);
    KernelConfig config = variant.default_config(batch, target);
    config.set("tile_rows", rows);
    ASSERT_TRUE(variant.check(batch, config, target)) << config.key();
    JitProgram program = variant.programs(batch, config, target).front();
    program.options.push_back("--ptxas-options=-v");
    jobs.push_back({program.kernels.front() + " " + program.arch, jit.compile_async(program)});
  }
  testing::expect_compiled_without_spills(jobs, 1);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace attn
