// paged_decode.sm90_tma on the CPU: the traits' rules (the page-size rule of TMA boxes
// included), the variant's gating (Hopper only, 16-bit K/V, pages its boxes can tile), the
// swizzled tile layout's offsets, and NVRTC compiles of accepted configs for sm_90a without spills.
#include <gtest/gtest.h>

#include <filesystem>
#include <future>
#include <regex>
#include <set>

#include "kernels/jit/jit_compiler.hpp"
#include "kernels/paged_decode/sm90_tma_traits.hpp"
#include "kernels/registry.hpp"
#include "tests/target_fixtures.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

// seqs > 0: that many sequences of 40 keys instead of the three default ones.
Batch decode_batch(int head_dim, int page_size, DType dtype = DType::bf16, int q_heads = 8,
                   int kv_heads = 2, int seqs = 0) {
  testing::SpecShape shape;
  shape.q_heads = q_heads;
  shape.kv_heads = kv_heads;
  shape.head_dim = head_dim;
  shape.page_size = page_size;
  shape.dtype = dtype;
  const std::vector<int64_t> lens =
      seqs > 0 ? std::vector<int64_t>(size_t(seqs), 40) : std::vector<int64_t>{5, 40, 300};
  return generate_batch(testing::make_decode_spec(shape, lens));
}

KernelConfig make_config(int tile_tokens, int warps, int stages, int num_splits = 0) {
  return KernelConfig{{"tile_tokens", tile_tokens},
                      {"warps", warps},
                      {"stages", stages},
                      {"num_splits", num_splits}};
}

const Variant& tma_variant(const Registry& registry) {
  const Variant* variant = registry.find("paged_decode.sm90_tma");
  EXPECT_NE(variant, nullptr);
  return *variant;
}

TEST(Sm90TmaTraits, RulesNameTheFirstBrokenConstraint) {
  using namespace paged_decode::sm90_tma;
  EXPECT_EQ(check(128, 4, 64, 2, 16), kOk);
  EXPECT_EQ(check(128, 4, 64, 2), kOk);  // page size not known yet
  EXPECT_EQ(check(96, 4, 64, 2, 16), kOk);
  EXPECT_EQ(check(80, 4, 64, 2, 16), kOk);
  EXPECT_EQ(check(192, 4, 64, 2, 16), kOk);
  EXPECT_EQ(check(112, 4, 64, 2, 16), kHeadDim);
  // A row is whole 64-element boxes side by side, the last one zero-filled past the row.
  EXPECT_EQ(column_boxes(64), 1);
  EXPECT_EQ(column_boxes(80), 2);
  EXPECT_EQ(column_boxes(96), 2);
  EXPECT_EQ(column_boxes(128), 2);
  EXPECT_EQ(column_boxes(192), 3);
  EXPECT_EQ(column_boxes(256), 4);
  EXPECT_EQ(tile_bytes(96, 64), tile_bytes(128, 64));
  EXPECT_EQ(tile_bytes(192, 32), 32 * 192 * 2);
  EXPECT_EQ(check(128, 3, 48, 2, 16), kWarps);
  EXPECT_EQ(check(128, 4, 64, 5, 16), kStages);
  EXPECT_EQ(check(128, 4, 32, 2, 16), kBlockTokens);
  EXPECT_EQ(check(256, 4, 256, 4, 16), kSharedMemory);  // 4 x 2 x 128 KiB
  EXPECT_EQ(check(128, 4, 64, 2, 4), kPageSize);        // boxes of 4 keys: not 1024-aligned
  EXPECT_EQ(check(128, 4, 64, 2, 24), kPageSize);       // 24-key boxes do not tile 64 keys
  EXPECT_EQ(check(128, 4, 64, 2, 96), kPageSize);       // a 64-key box does not tile 96
  EXPECT_EQ(check(128, 4, 64, 2, 256), kOk);            // the block is a quarter of a page
  EXPECT_EQ(box_tokens(16, 64), 16);
  EXPECT_EQ(box_tokens(256, 64), 64);
  EXPECT_EQ(threads(4), 160);  // four compute warps and the producer
  // The layout: stage area, Q, barriers, all inside the allocation with its alignment slack.
  EXPECT_EQ(q_offset(128, 4, 64, 2) % 16, 0);
  EXPECT_GE(q_offset(128, 4, 64, 2), 2 * 2 * tile_bytes(128, 64));
  EXPECT_EQ(barrier_offset(128, 4, 64, 2) % 8, 0);
  EXPECT_EQ(shared_bytes(128, 4, 64, 2), kAlignment + barrier_offset(128, 4, 64, 2) + 32);
}

// The default block: 128 keys where 16 or more q heads fill the mma rows at head dims 80 to 128
// and the (sequence, KV head) units are 90% to 100% of the SMs (one CTA each, no split); 64 keys
// elsewhere.
TEST(Sm90TmaVariant, DefaultBlockIs128KeysForFullRowsWithOneUnitPerSm) {
  const Registry registry = make_registry();
  const Variant& variant = tma_variant(registry);
  Target hopper = testing::hopper_target();
  hopper.sm_count = 132;
  struct Case {
    int head_dim, q_heads, kv_heads, seqs, tile;
  };
  for (const Case c :
       {Case{128, 16, 1, 128, 128}, Case{128, 32, 2, 64, 128}, Case{96, 16, 1, 132, 128},
        Case{80, 16, 1, 120, 128}, Case{128, 16, 1, 133, 64}, Case{128, 16, 1, 118, 64},
        Case{128, 16, 1, 64, 64}, Case{128, 32, 2, 128, 64}, Case{64, 16, 1, 128, 64},
        Case{128, 8, 1, 128, 64}, Case{256, 16, 1, 128, 64}, Case{192, 16, 1, 128, 64}}) {
    SCOPED_TRACE("d" + std::to_string(c.head_dim) + " " + std::to_string(c.q_heads) + "/" +
                 std::to_string(c.kv_heads) + " x " + std::to_string(c.seqs));
    const Batch batch = decode_batch(c.head_dim, 16, DType::bf16, c.q_heads, c.kv_heads, c.seqs);
    const KernelConfig config = variant.default_config(batch, hopper);
    EXPECT_EQ(config.get("tile_tokens"), c.tile);
    EXPECT_EQ(config.get("warps"), 4);
    EXPECT_TRUE(variant.check(batch, config, hopper));
  }
}

TEST(Sm90TmaVariant, DeclinesWhatItCannotRunAndFallsBackWhereTmaCannotLoad) {
  const Registry registry = make_registry();
  const Variant& variant = tma_variant(registry);
  const Target hopper = testing::hopper_target();
  const Batch page16 = decode_batch(128, 16);
  EXPECT_TRUE(variant.check(page16, make_config(64, 4, 2), hopper));
  EXPECT_TRUE(variant.check(page16, variant.default_config(page16, hopper), hopper));

  const Support ampere = variant.check(page16, make_config(64, 4, 2), testing::ampere_target());
  EXPECT_FALSE(ampere.ok);
  EXPECT_NE(ampere.reason.find("9.0"), std::string::npos) << ampere.reason;

  // Pages TMA boxes cannot tile and fp8 pools run on the cp.async kernel: accepted with
  // sm80_mma's rules (programs of sm80_mma), not declined.
  const Registry& r = registry;
  const Variant& cp_async = *r.find("paged_decode.sm80_mma");
  for (int page : {1, 5, 48}) {
    const Batch odd = decode_batch(128, page);
    EXPECT_TRUE(variant.check(odd, make_config(64, 4, 2), hopper)) << "page " << page;
    EXPECT_TRUE(variant.check(odd, variant.default_config(odd, hopper), hopper)) << page;
    EXPECT_EQ(variant.programs(odd, make_config(64, 4, 2), hopper).front().name,
              cp_async.programs(odd, make_config(64, 4, 2), hopper).front().name);
  }
  Batch fp8 = page16;
  fp8.kv_dtype = DType::fp8_e4m3;
  fp8.k_scales = fp8.v_scales = {1.0f};
  EXPECT_TRUE(variant.check(fp8, make_config(64, 4, 2), hopper));
  EXPECT_EQ(variant.programs(fp8, make_config(64, 4, 2), hopper).front().source,
            cp_async.programs(fp8, make_config(64, 4, 2), hopper).front().source);
  // A config the cp.async kernel cannot run either is declined with its rule.
  const Support too_big = variant.check(fp8, make_config(256, 1, 4), hopper);
  EXPECT_FALSE(too_big.ok);
  EXPECT_FALSE(too_big.reason.empty());

  const Support wrong_axes = variant.check(page16, KernelConfig{{"tile_tokens", 64}}, hopper);
  EXPECT_FALSE(wrong_axes.ok);
}

// Accepted configs compile for sm_90a (every one at head dim 128, bf16, page 16; one per other
// head dim, dtype and page size, smaller and larger than a block) and ptxas reports no spills.
TEST(Sm90TmaCompile, AcceptedConfigsCompileForSm90aWithoutSpills) {
  const fs::path dir =
      fs::temp_directory_path() /
      ("attn-sm90-tma-jit-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  fs::remove_all(dir);
  JitCompiler jit(JitOptions{dir.string(), /*use_cache=*/false});
  const Registry registry = make_registry();
  const Variant& variant = tma_variant(registry);
  const Target hopper = testing::hopper_target();
  struct Job {
    std::string what;
    std::future<CompiledProgram> compiled;
  };
  std::vector<Job> jobs;
  std::set<std::string> seen;  // num_splits does not change the program
  std::vector<Batch> batches;
  batches.reserve(12);
  for (int head_dim : {64, 128, 256}) {
    for (DType dtype : {DType::bf16, DType::fp16}) {
      for (int page_size : {16, 256}) {
        batches.push_back(decode_batch(head_dim, page_size, dtype));
        const Batch& batch = batches.back();
        const auto space = variant.space(batch, hopper);
        for (int64_t t : space[0].values) {
          for (int64_t w : space[1].values) {
            for (int64_t s : space[2].values) {
              const KernelConfig config = make_config(int(t), int(w), int(s));
              if (!variant.check(batch, config, hopper)) continue;
              // Head dim 128, bf16, page 16: every config; the other cases: t64.w4.st2.
              const bool all = head_dim == 128 && dtype == DType::bf16 && page_size == 16;
              if (!all && (t != 64 || w != 4 || s != 2)) continue;
              JitProgram program = variant.programs(batch, config, hopper).front();
              if (!seen.insert(program.name).second) continue;
              program.options.push_back("--ptxas-options=-v");
              jobs.push_back({program.name, jit.compile_async(program)});
            }
          }
        }
      }
    }
  }
  EXPECT_GT(jobs.size(), 20u);
  const std::regex spills("([1-9][0-9]*) bytes spill (stores|loads)");
  for (Job& job : jobs) {
    try {
      const CompiledProgram compiled = job.compiled.get();
      EXPECT_EQ(compiled.lowered_names.size(), 1u) << job.what;
      EXPECT_FALSE(std::regex_search(compiled.log, spills)) << job.what << ":\n" << compiled.log;
    } catch (const CompileError& error) {
      ADD_FAILURE() << job.what << ": " << error.what() << "\n" << error.log();
    }
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace attn
