// blocksparse.sm90_wgmma on the CPU: the traits' rules (tiles, shared memory and registers at one
// or two CTAs per SM, the layout's block); supports() refusing every arch but sm_90a, the features
// the family does not define and block sizes the 64-row tiles cannot walk, each with a reason; the
// kernel's element-mask decision emulated on the walk and compared key by key with key_visible; and
// every accepted config compiled by NVRTC for sm_90a, both dtypes, head dims 64 and 128, causal
// and not, with no spills, no stack frame, no ignored setmaxnreg and no serialised wgmma.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <future>
#include <iostream>
#include <random>
#include <regex>
#include <set>

#include "kernels/blocksparse/blocksparse_variants.hpp"
#include "kernels/blocksparse/mma_traits.hpp"
#include "kernels/blocksparse/sm90_wgmma_traits.hpp"
#include "kernels/jit/jit_compiler.hpp"
#include "kernels/registry.hpp"
#include "tests/target_fixtures.hpp"
#include "tests/test_support.hpp"
#include "workloads/visibility.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

BlockSparseSpec phi3_layout(int block_size, int local, int stride, int sliding = 1) {
  BlockSparseSpec b;
  b.block_size = block_size;
  b.local_blocks = local;
  b.vertical_stride = stride;
  b.head_sliding_step = sliding;
  b.homo_head = false;
  return b;
}

Batch prefill_batch(int head_dim, DType dtype = DType::bf16, int block_size = 64,
                    bool causal = true) {
  testing::SpecShape shape;
  shape.q_heads = 8;
  shape.kv_heads = 2;
  shape.head_dim = head_dim;
  shape.dtype = dtype;
  WorkloadSpec spec = testing::make_spec(shape, {{0, 300}, {70, 33}, {0, 1}}, "bs-sm90-test");
  spec.mask.block_sparse = phi3_layout(block_size, 2, 3);
  Batch batch = generate_batch(spec);
  batch.causal = causal;  // workloads with a layout are causal; the kernel also runs non-causal
  return batch;
}

KernelConfig make_config(int tile_n, int stages, int ctas_per_sm) {
  return KernelConfig{{"tile_n", tile_n}, {"stages", stages}, {"ctas_per_sm", ctas_per_sm}};
}

const Variant& sm90_variant(const Registry& registry) {
  const Variant* variant = registry.find("blocksparse.sm90_wgmma");
  EXPECT_NE(variant, nullptr);
  return *variant;
}

std::vector<KernelConfig> space_configs(const Variant& variant, const Batch& batch,
                                        const Target& target) {
  const auto space = variant.space(batch, target);
  EXPECT_EQ(space.size(), 3u);
  std::vector<KernelConfig> out;
  for (int64_t n : space[0].values) {
    for (int64_t s : space[1].values) {
      for (int64_t c : space[2].values) out.push_back(make_config(int(n), int(s), int(c)));
    }
  }
  return out;
}

TEST(BlockSparseSm90Traits, RulesNameTheFirstBrokenConstraint) {
  using namespace blocksparse_sm90;
  EXPECT_EQ(check(128, 64, 2, 2), kOk);
  EXPECT_EQ(check(128, 64, 4, 1), kOk);
  EXPECT_EQ(check(128, 128, 2, 1), kOk);
  EXPECT_EQ(check(64, 64, 4, 2), kOk);
  EXPECT_EQ(check(64, 128, 3, 2), kOk);
  EXPECT_EQ(check(256, 64, 2, 1), sm90_attn::kHeadDim);  // the 64 and 128, as mma
  EXPECT_EQ(check(96, 64, 2, 1), sm90_attn::kHeadDim);
  EXPECT_EQ(check(128, 32, 2, 1), sm90_attn::kTileN);
  EXPECT_EQ(check(128, 64, 5, 1), sm90_attn::kStages);
  EXPECT_EQ(check(128, 64, 2, 3), kCtasPerSm);
  EXPECT_EQ(check(128, 64, 2, 0), kCtasPerSm);
  // Two CTAs at head_dim 128: 2 x (81 KiB + 1 KiB) fits 228 KiB; three stages (113 KiB) do not,
  // nor 128-key tiles (145 KiB).
  EXPECT_EQ(check(128, 64, 3, 2), kTwoCtaShared);
  EXPECT_EQ(check(128, 128, 2, 2), kTwoCtaShared);
  EXPECT_EQ(check(64, 128, 4, 2), kTwoCtaShared);
  EXPECT_EQ(check(128, 64, 2, 2, 64), kOk);
  EXPECT_EQ(check(128, 64, 2, 2, 128), kOk);
  EXPECT_EQ(check(128, 128, 2, 1, 64), kBlockSize);  // a key tile over two block columns
  EXPECT_EQ(check(128, 64, 2, 1, 32), kBlockSize);   // 64 rows over two block rows
  EXPECT_EQ(check(128, 64, 2, 1, 96), kBlockSize);
  EXPECT_EQ(shared_bytes(128, 64, 2), 1024 + 64 * 128 * 2 + 4 * 64 * 128 * 2 + 9 * 8);
  EXPECT_EQ(threads(), 256);
  // The setmaxnreg split fits a CTA's share of the register file: 128 per thread at launch with
  // two CTAs (24 + 232 = 2 x 128 exactly), 256 with one.
  EXPECT_EQ(launch_registers(2), 128);
  EXPECT_EQ(launch_registers(1), 256);
  EXPECT_TRUE(register_split_fits(1));
  EXPECT_TRUE(register_split_fits(2));
  EXPECT_EQ(128 * (producer_registers(2) + consumer_registers(2)), 256 * 128);
  for (int c : {1, 2}) {
    EXPECT_EQ(producer_registers(c) % 8, 0);
    EXPECT_EQ(consumer_registers(c) % 8, 0);
    EXPECT_GE(producer_registers(c), 24);
    EXPECT_LE(consumer_registers(c), 256);
  }
  // Every accepted config fits its registers and, with two CTAs, the SM's shared memory.
  for (int d : {64, 128}) {
    for (int n : {64, 128}) {
      for (int s : {2, 3, 4}) {
        for (int c : {1, 2}) {
          if (check(d, n, s, c) != kOk) continue;
          EXPECT_LE(sm90_attn::register_estimate(d, n), consumer_registers(c));
          EXPECT_LE(c * (shared_bytes(d, n, s) + kReservedSharedPerCta), kSharedPerSm);
          EXPECT_LE(shared_bytes(d, n, s), sm90_attn::kMaxSharedBytes);
        }
      }
    }
  }
}

TEST(BlockSparseSm90Gating, SpaceRefusalsMirrorTheTraitsWithReasons) {
  const Registry registry = make_registry();
  const Variant& variant = sm90_variant(registry);
  const Target target = testing::hopper_target();
  int accepted = 0, refused = 0;
  for (int head_dim : {64, 128}) {
    for (int block : {16, 32, 64, 128, 256}) {
      const Batch batch = prefill_batch(head_dim, DType::bf16, block);
      for (const KernelConfig& c : space_configs(variant, batch, target)) {
        const int rule = blocksparse_sm90::check(
            head_dim, int(c.get("tile_n")), int(c.get("stages")), int(c.get("ctas_per_sm")), block);
        const Support support = variant.supports(batch, c, target);
        EXPECT_EQ(support.ok, rule == blocksparse_sm90::kOk) << c.key() << " block " << block;
        support.ok ? ++accepted : ++refused;
        if (!support.ok) {
          EXPECT_FALSE(support.reason.empty()) << c.key();
        }
      }
    }
  }
  EXPECT_GT(accepted, 20);
  EXPECT_GT(refused, 20);
  const Batch batch = prefill_batch(128);
  struct Refusal {
    KernelConfig config;
    std::string mentions;
  };
  for (const Refusal& r : std::vector<Refusal>{
           {make_config(128, 2, 1), "divide the layout's block size 64"},
           {make_config(64, 3, 2), "two CTAs per SM need"},
           {make_config(64, 5, 1), "stages must be"},
           {make_config(64, 2, 4), "ctas_per_sm must be 1 or 2"},
       }) {
    const Support s = variant.supports(batch, r.config, target);
    EXPECT_FALSE(s.ok) << r.config.key();
    EXPECT_NE(s.reason.find(r.mentions), std::string::npos) << s.reason;
  }
  const Support small_block =
      variant.supports(prefill_batch(128, DType::bf16, 32), make_config(64, 2, 1), target);
  EXPECT_NE(small_block.reason.find("64 (the query rows of a CTA)"), std::string::npos)
      << small_block.reason;
  const Support wide = variant.supports(prefill_batch(256), make_config(64, 2, 1), target);
  EXPECT_FALSE(wide.ok);
  EXPECT_NE(wide.reason.find("is not 64 or 128"), std::string::npos) << wide.reason;
  KernelConfig extra = make_config(64, 2, 2);
  extra.set("tile_m", 64);
  EXPECT_FALSE(variant.supports(batch, extra, target).ok);
}

TEST(BlockSparseSm90Gating, OnlySm90aAndTheFamilysFeatures) {
  const Registry registry = make_registry();
  const Variant& variant = sm90_variant(registry);
  const Batch batch = prefill_batch(128);
  const KernelConfig config = variant.default_config(batch, testing::hopper_target());
  EXPECT_TRUE(variant.supports(batch, config, testing::hopper_target()).ok);
  const Support ampere = variant.supports(batch, config, testing::ampere_target());
  EXPECT_FALSE(ampere.ok);
  EXPECT_NE(ampere.reason.find("needs sm_90a"), std::string::npos) << ampere.reason;
  EXPECT_FALSE(variant.supports(batch, config, Target::cpu()).ok);
  // blocksparse.mma remains for what this variant refuses.
  const Variant& mma = *registry.find("blocksparse.mma");
  EXPECT_TRUE(mma.supports(batch, mma.default_config(batch, testing::ampere_target()),
                           testing::ampere_target())
                  .ok);

  struct Feature {
    std::string name;
    std::string reason_mentions;  // empty: supported
    std::function<void(Batch&)> apply;
  };
  const std::vector<Feature> features = {
      {"non-causal", "", [](Batch& b) { b.causal = false; }},
      {"hnd", "", [](Batch& b) { b.spec.kv_cache.layout = KvLayout::hnd; }},
      {"no layout", "block-sparse layout", [](Batch& b) { b.block_sparse.reset(); }},
      {"soft-cap", "soft-cap", [](Batch& b) { b.logits_soft_cap = 30.0f; }},
      {"sliding window", "sliding window", [](Batch& b) { b.sliding_window = 16; }},
      {"sinks", "sinks", [](Batch& b) { b.sink_logits.assign(8, 1.0f); }},
      {"fp8 KV", "fp8_e4m3",
       [](Batch& b) {
         b.kv_dtype = DType::fp8_e4m3;
         b.k_scales = {0.01f};
         b.v_scales = {0.02f};
       }},
  };
  for (const Feature& feature : features) {
    Batch b = batch;
    feature.apply(b);
    const Support s = variant.supports(b, config, testing::hopper_target());
    if (feature.reason_mentions.empty()) {
      EXPECT_TRUE(s.ok) << feature.name << ": " << s.reason;
    } else {
      EXPECT_FALSE(s.ok) << feature.name;
      EXPECT_NE(s.reason.find(feature.reason_mentions), std::string::npos)
          << feature.name << ": " << s.reason;
    }
  }
}

TEST(BlockSparseSm90Gating, DefaultsAreSupportedAndNamed) {
  const Registry registry = make_registry();
  const Variant& variant = sm90_variant(registry);
  const Target target = testing::hopper_target();
  for (int head_dim : {64, 128}) {
    for (DType dtype : {DType::bf16, DType::fp16}) {
      for (int block : {64, 128, 256}) {
        const Batch batch = prefill_batch(head_dim, dtype, block);
        const Support s = variant.supports(batch, variant.default_config(batch, target), target);
        EXPECT_TRUE(s.ok) << head_dim << " " << block << ": " << s.reason;
      }
    }
  }
  const Batch batch = prefill_batch(128);
  EXPECT_EQ(variant.full_name(variant.default_config(batch, target)),
            "blocksparse.sm90_wgmma.ctas_per_sm2.st2.tn64");
  const JitProgram program = variant.programs(batch, make_config(64, 3, 1), target).front();
  EXPECT_EQ(program.kernels.at(0), "attn::blocksparse_sm90_wgmma<0, 128, 64, 3, 1, true>");
  EXPECT_EQ(program.kernels.at(1), "attn::flash_fwd_gather_kv");
  EXPECT_EQ(program.arch, "sm_90a");
}

// What row `pos` of a CTA whose tile starts at pos0 sees of key tile key0 (the kernel's decision,
// sm90_wgmma.cuh): the element mask only on diagonal-block tiles reaching mask_from, else the
// whole tile.
bool sm90_kernel_sees(bool causal, int64_t kv_len, int64_t pos0, int64_t pos, int64_t key,
                      int64_t diagonal_key0, int tile_n, int64_t key0) {
  const int64_t mask_from = causal ? std::min(kv_len, pos0 + 1) : kv_len;
  if (!(key0 >= diagonal_key0 && key0 + tile_n > mask_from)) return true;
  return key < kv_len && (!causal || key <= pos);
}

// Random batches (contexts that start anywhere in a block, lengths off every tile, GQA) and random
// Phi-3 layouts of blocks 64, 128 and 256: for each tile_n and every query row and head, the keys
// the walk and the kernel's mask decision let through are exactly key_visible's, each once.
TEST(BlockSparseSm90Walk, KernelMaskSeesExactlyTheVisibleKeys) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 24; ++trial) {
    testing::SpecShape shape;
    shape.kv_heads = 1 + int(rng() % 2);
    shape.q_heads = shape.kv_heads * (1 + int(rng() % 3));
    const int block = std::vector<int>{64, 128, 256}[size_t(trial % 3)];
    std::vector<std::pair<int64_t, int64_t>> sequences;
    for (int s = 0; s < 1 + int(rng() % 3); ++s) {
      sequences.push_back({std::vector<int64_t>{0, 0, 1, 17, 64, 100, 300}[rng() % 7],
                           std::vector<int64_t>{1, 2, 63, 65, 100, 200, 513}[rng() % 7]});
    }
    const bool causal = trial % 4 != 0;
    WorkloadSpec spec = testing::make_spec(shape, sequences, "bs-sm90-walk");
    spec.mask.block_sparse =
        phi3_layout(block, int(1 + rng() % 4), int(1 + rng() % 4), int(rng() % 3));
    Batch batch = generate_batch(spec);
    batch.causal = causal;
    const BlockSparseLayout& layout = *batch.block_sparse;
    for (int tile_n : {64, 128}) {
      if (block % tile_n != 0) continue;
      const std::vector<int32_t> schedule =
          blocksparse_mma_schedule(batch, blocksparse_sm90::kTileM, tile_n);
      int64_t rows = 0;
      for (size_t c = 0; c < schedule.size() / 2; ++c) {
        const int s = schedule[2 * c];
        const int64_t pos0 = int64_t(schedule[2 * c + 1]) * blocksparse_sm90::kTileM;
        const int64_t kv_len = batch.kv_lens[size_t(s)], context = batch.context_lens[size_t(s)];
        const int64_t last = std::min(pos0 + blocksparse_sm90::kTileM, kv_len) - 1;
        const int q_block = int(pos0 / block);
        rows += last + 1 - std::max(pos0, context);
        for (int h = 0; h < layout.num_heads; ++h) {
          const blocksparse_mma::TileWalk walk = blocksparse_mma::tile_walk(
              layout.crow.data() + size_t(h) * size_t(layout.num_blocks + 1) + size_t(q_block),
              layout.col.data() + size_t(h) * size_t(layout.max_nnz), q_block, block, tile_n,
              int(causal ? last + 1 : kv_len));
          for (int64_t pos = std::max(pos0, context); pos <= last; ++pos) {
            std::set<int64_t> seen, visible;
            for (int n = 0; n < walk.tiles; ++n) {
              const int64_t key0 = blocksparse_mma::tile_key0(walk, n, tile_n);
              for (int64_t key = key0; key < key0 + tile_n; ++key) {
                if (sm90_kernel_sees(causal, kv_len, pos0, pos, key, int64_t(q_block) * block,
                                     tile_n, key0)) {
                  EXPECT_TRUE(seen.insert(key).second);
                }
              }
            }
            for (int64_t key = 0; key < kv_len; ++key) {
              if (key_visible(batch, s, h, pos - context, key)) visible.insert(key);
            }
            ASSERT_EQ(seen, visible) << "trial " << trial << " tile_n " << tile_n << " seq " << s
                                     << " pos " << pos << " head " << h;
          }
        }
      }
      EXPECT_EQ(rows, batch.total_q);
    }
  }
}

// Every accepted config, bf16 and fp16, head dims 64 and 128, causal and not (blocks of 128 so
// both tile sizes are accepted), compiled by NVRTC for sm_90a: ptxas reports registers and no
// spills, no stack frame, no ignored setmaxnreg and no serialised wgmma. ATTN_TEST_VERBOSE=1
// prints ptxas' report.
TEST(BlockSparseSm90Compile, EveryAcceptedConfigCompilesForSm90aWithoutSpills) {
  const fs::path dir = fs::temp_directory_path() /
                       ("attn-blocksparse-sm90-jit-" +
                        std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  fs::remove_all(dir);
  JitCompiler jit(JitOptions{dir.string(), /*use_cache=*/false});
  const Registry registry = make_registry();
  const Variant& variant = sm90_variant(registry);
  const Target target = testing::hopper_target();
  struct Job {
    std::string what;
    std::future<CompiledProgram> compiled;
  };
  std::vector<Job> jobs;
  std::vector<Batch> batches;  // programs() reads the batch; keep them alive
  batches.reserve(8);
  for (int head_dim : {64, 128}) {
    for (DType dtype : {DType::bf16, DType::fp16}) {
      for (bool causal : {true, false}) {
        batches.push_back(prefill_batch(head_dim, dtype, 128, causal));
        const Batch& batch = batches.back();
        int accepted = 0;
        for (const KernelConfig& config : space_configs(variant, batch, target)) {
          if (!variant.supports(batch, config, target)) continue;
          ++accepted;
          JitProgram program = variant.programs(batch, config, target).front();
          program.options.push_back("--ptxas-options=-v");
          jobs.push_back({program.name, jit.compile_async(program)});
        }
        EXPECT_EQ(accepted, head_dim == 64 ? 11 : 6) << head_dim;
      }
    }
  }
  const std::regex spills("([1-9][0-9]*) bytes (spill stores|spill loads|stack frame)");
  for (Job& job : jobs) {
    try {
      const CompiledProgram compiled = job.compiled.get();
      EXPECT_EQ(compiled.lowered_names.size(), 2u) << job.what;
      EXPECT_NE(compiled.log.find("registers"), std::string::npos) << job.what << compiled.log;
      EXPECT_FALSE(std::regex_search(compiled.log, spills)) << job.what << ":\n" << compiled.log;
      EXPECT_EQ(compiled.log.find("Performance Loss"), std::string::npos)
          << job.what << ": ptxas serialises wgmma or ignores setmaxnreg:\n"
          << compiled.log;
      if (std::getenv("ATTN_TEST_VERBOSE")) std::cout << job.what << "\n" << compiled.log << "\n";
    } catch (const CompileError& error) {
      ADD_FAILURE() << job.what << ": " << error.what() << "\n" << error.log();
    }
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace attn
