// prefix_prefill.sm90_wgmma on the CPU: the traits reject invalid configs (tiles, page sizes, GQA
// groups) with a reason before any compile; check() refuses every arch but sm_90a and the
// features this variant leaves to prefix_prefill.sm80_mma, with reasons; and every config of the
// space the traits accept compiles through NVRTC for sm_90a, for every head dim, both dtypes and
// page boxes smaller than and equal to the key tile, without spills, stack frames or serialised
// wgmma. (The index maps the kernel shares with flash_fwd.sm90_wgmma are checked against the PTX
// ISA's layouts in tests/kernels/flash_fwd/sm90_wgmma_test.cpp.)
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <future>
#include <iostream>
#include <regex>

#include "kernels/device/device_info.hpp"
#include "kernels/jit/jit_compiler.hpp"
#include "kernels/prefix_prefill/sm90_wgmma_traits.hpp"
#include "kernels/registry.hpp"
#include "tests/kernels/compile_jobs.hpp"
#include "tests/kernels/every_config_cases.hpp"
#include "tests/kernels/fp8_batch.hpp"
#include "tests/target_fixtures.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

Target hopper() {
  return testing::hopper_target();
}

// v_head_dim: V's width where narrower than Q and K's (0: as wide).
Batch prefill_batch(int q_heads, int kv_heads, int head_dim, int page_size = 16,
                    DType dtype = DType::bf16, KvLayout layout = KvLayout::nhd, int v_head_dim = 0,
                    bool kv_fp8 = false) {
  testing::SpecShape shape;
  shape.q_heads = q_heads;
  shape.kv_heads = kv_heads;
  shape.head_dim = head_dim;
  shape.page_size = page_size;
  shape.dtype = dtype;
  shape.layout = layout;
  WorkloadSpec spec = testing::make_spec(shape, {{0, 7}, {40, 1}, {300, 65}}, "prefill-test");
  if (v_head_dim > 0) spec.model.v_head_dim = v_head_dim;
  if (kv_fp8) {
    spec.model.kv_dtype = DType::fp8_e4m3;
    spec.model.kv_scale = KvScaleGranularity::per_head;
  }
  return generate_batch(spec);
}

KernelConfig make_config(int tile_m, int tile_n, int stages, int consumers) {
  return KernelConfig{
      {"tile_m", tile_m}, {"tile_n", tile_n}, {"stages", stages}, {"consumers", consumers}};
}

const Variant& sm90_variant(const Registry& registry) {
  const Variant* variant = registry.find("prefix_prefill.sm90_wgmma");
  EXPECT_NE(variant, nullptr);
  return *variant;
}

TEST(PrefixPrefillSm90Traits, RulesNameTheFirstBrokenConstraint) {
  using namespace prefix_prefill::sm90_wgmma;
  // The tile rules are flash_fwd.sm90_wgmma's.
  EXPECT_EQ(check(128, 128, 128, 2, 2), sm90_attention::kOk);
  // Head dims 80, 96 and 192 (and 192 with a V of 128, the last argument) too, no others.
  EXPECT_EQ(check(96, 128, 64, 2, 2), kOk);
  EXPECT_EQ(check(80, 128, 128, 3, 2), kOk);
  EXPECT_EQ(check(192, 128, 64, 2, 2), kOk);
  EXPECT_EQ(check(192, 128, 128, 2, 2, 0, 0, 128), kOk);
  EXPECT_EQ(check(112, 128, 64, 2, 2), sm90_attention::kHeadDim);
  EXPECT_EQ(check(128, 128, 64, 2, 2, 0, 0, 64), sm90_attention::kHeadDim);
  // One consumer keeps 16 registers of margin: 192 dims over 128 keys spilled (estimate 232),
  // a V of 128 there fits (200).
  EXPECT_EQ(check(192, 64, 128, 2, 1), sm90_attention::kRegisters);
  EXPECT_EQ(check(192, 64, 128, 2, 1, 0, 0, 128), kOk);
  // Interleaved tiles where both rows are whole column blocks.
  EXPECT_TRUE(interleaves(192, 128));
  EXPECT_TRUE(interleaves(256));
  EXPECT_FALSE(interleaves(80));
  EXPECT_FALSE(interleaves(96));
  EXPECT_EQ(check(128, 192, 64, 2, 3), sm90_attention::kConsumers);
  EXPECT_EQ(check(128, 128, 64, 2, 1), sm90_attention::kTileM);
  EXPECT_EQ(check(128, 128, 96, 2, 2), sm90_attention::kTileN);
  EXPECT_EQ(check(128, 128, 64, 1, 2), sm90_attention::kStages);
  EXPECT_EQ(check(256, 128, 64, 3, 2), sm90_attention::kSharedMemory);
  EXPECT_EQ(check(256, 64, 128, 2, 1), sm90_attention::kSharedMemory);
  // Pages under 64 keys that no TMA box tiles are copied with cp.async, key by key: any size.
  // Pages a box tiles (multiples of 8 that divide the key tile) and larger pages are TMA boxes.
  for (int page : {1, 2, 4, 5, 24, 31, 48, 63}) {
    EXPECT_TRUE(copies_context(box_tokens(page, 64), 64)) << page;
    EXPECT_TRUE(copies_context(box_tokens(page, 128), 128)) << page;
    EXPECT_EQ(check(128, 128, 64, 2, 2, page), kOk) << page;
    EXPECT_EQ(check(128, 128, 128, 2, 2, page), kOk) << page;
  }
  for (int page : {8, 16, 32}) {
    EXPECT_FALSE(copies_context(box_tokens(page, 64), 64)) << page;
    EXPECT_FALSE(copies_context(box_tokens(page, 128), 128)) << page;
    EXPECT_EQ(check(128, 128, 128, 2, 2, page), kOk) << page;
  }
  for (int page : {64, 128, 256, 512}) {
    EXPECT_FALSE(copies_context(box_tokens(page, 64), 64)) << page;
    EXPECT_EQ(check(128, 128, 64, 2, 2, page), kOk) << page;
  }
  EXPECT_EQ(check(128, 128, 64, 2, 2, 96), kPageSize);    // a box of 64 does not tile 96
  EXPECT_EQ(check(128, 128, 128, 2, 2, 96), kPageSize);   // a box of 96 does not tile 128
  EXPECT_EQ(check(128, 128, 128, 2, 2, 192), kPageSize);  // 192 keys hold 1.5 tiles of 128
  EXPECT_EQ(check(128, 128, 64, 2, 2, 192), kOk);         // ... and 3 of 64
  EXPECT_EQ(box_tokens(16, 128), 16);
  EXPECT_EQ(box_tokens(256, 128), 128);
  // A CTA holds whole GQA groups: one token of the group at least.
  EXPECT_EQ(check(128, 64, 64, 2, 1, 16, 64), kOk);
  EXPECT_EQ(check(128, 64, 64, 2, 1, 16, 65), kGroup);
  EXPECT_EQ(check(128, 128, 64, 2, 2, 16, 128), kOk);
  // Shared memory: flash_fwd's layout with a second Q buffer where it fits, each buffer's full and
  // empty barrier, v_zeroed and the items' indices.
  EXPECT_EQ(q_buffers(128, 128, 128, 2), 2);
  EXPECT_EQ(shared_bytes(128, 128, 128, 2),
            1024 + 2 * 128 * 128 * 2 + 4 * 128 * 128 * 2 + 13 * 8 + 2 * 16);
  EXPECT_EQ(q_buffers(128, 128, 128, 3), 1);
  EXPECT_EQ(shared_bytes(128, 128, 128, 3), 1024 + 128 * 128 * 2 + 6 * 128 * 128 * 2 + 15 * 8 + 16);
  EXPECT_LE(shared_bytes(128, 128, 128, 3), sm90_attention::kMaxSharedBytes);
  // An fp8 cache adds its staging buffer (two parts of tile_n x head_dim codes; K's rows are the
  // wider at 192x128), so three stages of 128 keys no longer fit at head dim 128, and takes any
  // page size (its tiles are copied key by key, never TMA boxes).
  for (auto [head_dim, v_head_dim] : {std::pair{128, 0}, {80, 0}, {192, 128}}) {
    const int buffers = q_buffers(head_dim, 128, 64, 2, v_head_dim, true);
    EXPECT_EQ(shared_bytes(head_dim, 128, 64, 2, v_head_dim, true),
              1024 + buffers * sm90_attention::q_bytes(head_dim, 128) +
                  2 * sm90_attention::kv_tile_bytes(head_dim, 64) +
                  2 * sm90_attention::kv_tile_bytes(v_head_dim ? v_head_dim : head_dim, 64) +
                  fp8_staging_bytes(head_dim, 128, 64, 2, v_head_dim) + (2 * buffers + 8 + 1) * 8 +
                  16 * buffers)
        << head_dim;
  }
  // As many staging slots (2 to 4 parts of tile_n x head_dim codes) as fit beside two Q buffers.
  EXPECT_EQ(fp8_staging_slots(128, 128, 64, 2), 4);
  EXPECT_EQ(fp8_staging_bytes(128, 128, 64, 2), 4 * 64 * 128 + 65 * 4 + 4);
  EXPECT_EQ(q_buffers(128, 128, 64, 2, 0, true), 2);
  EXPECT_EQ(fp8_staging_slots(128, 128, 128, 2), 2);  // 2 x 32 KB Q + 128 KB of K/V + 32 KB
  EXPECT_EQ(q_buffers(128, 128, 128, 2, 0, true), 2);
  for (int head_dim : {64, 80, 96, 128, 192, 256}) {
    for (int tile_n : {64, 128}) {
      for (int stages : {2, 3, 4}) {
        const int slots = fp8_staging_slots(head_dim, 128, tile_n, stages);
        EXPECT_GE(slots, kMinFp8StagingSlots);
        EXPECT_LE(slots, kMaxFp8StagingSlots);
        // One more slot would cost the second Q buffer (or there is none to lose).
        if (slots < kMaxFp8StagingSlots && q_buffers(head_dim, 128, tile_n, stages, 0, true) == 2) {
          EXPECT_EQ(sm90_persistent::q_buffers(
                        head_dim, 128, tile_n, stages,
                        kOwnBarriers + ((slots + 1) * fp8_part_bytes(head_dim, tile_n) +
                                        fp8_page_entry_bytes(tile_n)) /
                                           8),
                    1)
              << head_dim << " " << tile_n << " " << stages;
        }
      }
    }
  }
  EXPECT_EQ(check(128, 128, 128, 3, 2, 0, 0, 0, true), sm90_attention::kSharedMemory);
  EXPECT_EQ(check(128, 128, 128, 2, 2, 96, 0, 0, true), kOk);  // kPageSize without fp8
  EXPECT_EQ(check(96, 128, 64, 2, 2, 5, 0, 0, true), kOk);
  EXPECT_EQ(check(192, 64, 64, 2, 1, 16, 0, 128, true), kOk);
  // The register split fits the register file at one CTA per SM, in multiples of 8; with two
  // consumers the producer takes 16 registers from them (32 when it copies pages), which still
  // hold their arrays in every head dim (its largest tile_n).
  for (int consumers : {1, 2}) {
    for (bool copies : {false, true}) {
      EXPECT_LE(128 * producer_registers(consumers, copies) +
                    consumers * 128 * consumer_registers(consumers, copies),
                128 * (1 + consumers) * (consumers == 2 ? 168 : 256));
      EXPECT_EQ(producer_registers(consumers, copies) % 8, 0);
      EXPECT_EQ(consumer_registers(consumers, copies) % 8, 0);
      for (auto [head_dim, tile_n] : {std::pair{64, 128}, {128, 128}, {256, 64}})
        EXPECT_GE(consumer_registers(consumers, copies),
                  sm90_attention::register_estimate(head_dim, tile_n));
    }
  }
  EXPECT_EQ(consumer_registers(1), sm90_attention::kConsumerRegisters);
  // An fp8 cache's producer: 72 registers with two consumers where their arrays leave them 16 of
  // margin beside the 216 (register_estimate 200: head dim 128 over 128 keys), else 56 beside
  // 224 (256 over 64 keys: 216), 96 with one consumer; the split fits the register file.
  for (int estimate :
       {sm90_attention::register_estimate(128, 128), sm90_attention::register_estimate(256, 64)}) {
    const bool wide = estimate <= kFp8WideProducerEstimate;
    EXPECT_EQ(producer_registers(2, true, true, estimate), wide ? 72 : 56);
    EXPECT_EQ(consumer_registers(2, true, true, estimate), wide ? 216 : 224);
    EXPECT_LE(128 * producer_registers(2, true, true, estimate) +
                  256 * consumer_registers(2, true, true, estimate),
              384 * 168);
    EXPECT_GE(consumer_registers(2, true, true, estimate), estimate + (wide ? 16 : 8));
  }
  EXPECT_TRUE(fp8_wide_producer(2, true, sm90_attention::register_estimate(128, 128)));
  EXPECT_FALSE(fp8_wide_producer(2, true, sm90_attention::register_estimate(256, 64)));
  EXPECT_EQ(producer_registers(1, true, true, 0), 96);
  EXPECT_EQ(fp8_part_keys(128), 64);
  EXPECT_EQ(fp8_part_keys(64), 64);
}

// The cp.async path writes chunk c of row r where TMA's CU_TENSOR_MAP_SWIZZLE_128B puts it: the
// byte address within a 1024-byte aligned block has bits 4..6 XORed with bits 7..9.
TEST(PrefixPrefillSm90Traits, CopiedChunksLandWhereTheTmaSwizzlePutsThem) {
  for (int row = 0; row < 256; ++row) {
    for (int chunk = 0; chunk < 8; ++chunk) {
      const int linear = row * 128 + chunk * 16;
      const int tma = linear ^ (((linear >> 7) & 7) << 4);
      EXPECT_EQ(prefix_prefill::sm90_wgmma::swizzled_chunk_offset(row, chunk), tma)
          << row << " " << chunk;
    }
  }
  // In the interleaved tiles (the layout the page boxes write) chunk c of key r lands where TMA's
  // swizzle puts dims 8c .. 8c + 7 of that key.
  for (int head_dim : {64, 128, 192, 256}) {
    for (int row = 0; row < 128; ++row) {
      for (int chunk = 0; chunk < head_dim / 8; ++chunk) {
        const int linear = sm90_attention::interleaved_offset(row, chunk * 8, head_dim);
        const int tma = linear ^ (((linear >> 7) & 7) << 4);
        EXPECT_EQ(prefix_prefill::sm90_wgmma::interleaved_chunk_offset(row, chunk, head_dim), tma)
            << head_dim << " " << row << " " << chunk;
      }
    }
  }
  // Column-block-major tiles (head dims 80 and 96): chunk c of key r in block c / 8 of tile_n
  // rows, where TMA's swizzle puts it; interleaved ones as interleaved_chunk_offset.
  for (int head_dim : {80, 96}) {
    for (int tile_n : {64, 128}) {
      for (int row = 0; row < tile_n; ++row) {
        for (int chunk = 0; chunk < head_dim / 8; ++chunk) {
          const int linear = (chunk / 8) * tile_n * 128 + row * 128 + (chunk % 8) * 16;
          const int tma = linear ^ (((linear >> 7) & 7) << 4);
          EXPECT_EQ(
              prefix_prefill::sm90_wgmma::tile_chunk_offset(row, chunk, head_dim, tile_n, false),
              tma)
              << head_dim << " " << row << " " << chunk;
        }
      }
    }
  }
  EXPECT_EQ(prefix_prefill::sm90_wgmma::tile_chunk_offset(17, 20, 192, 128, true),
            prefix_prefill::sm90_wgmma::interleaved_chunk_offset(17, 20, 192));
  // A row's 8 chunks fill its 128 bytes exactly once (conflict-free 16-byte stores).
  for (int row = 0; row < 8; ++row) {
    int seen = 0;
    for (int chunk = 0; chunk < 8; ++chunk)
      seen |=
          1 << ((prefix_prefill::sm90_wgmma::swizzled_chunk_offset(row, chunk) - row * 128) / 16);
    EXPECT_EQ(seen, 0xff) << row;
  }
}

// Every point of the space is accepted exactly when the traits (and the device's shared memory)
// accept it, and every refusal carries a reason that names what to change.
TEST(PrefixPrefillSm90Gating, SpaceRefusalsMirrorTheTraitsWithReasons) {
  const Registry registry = make_registry();
  const Variant& variant = sm90_variant(registry);
  int accepted = 0;
  for (int head_dim : {64, 128, 256}) {
    for (int page : {16, 24, 192}) {
      const Batch batch = prefill_batch(12, 4, head_dim, page);
      for (const KernelConfig& config : testing::space_configs(variant, batch, hopper())) {
        const int m = int(config.get("tile_m")), n = int(config.get("tile_n")),
                  s = int(config.get("stages")), c = int(config.get("consumers"));
        const Support support = variant.check(batch, config, hopper());
        const int rule = prefix_prefill::sm90_wgmma::check(head_dim, m, n, s, c, page, 3);
        EXPECT_EQ(support.ok, rule == sm90_attention::kOk)
            << config.key() << " d" << head_dim << " page " << page << ": " << support.reason;
        if (support.ok) {
          ++accepted;
          continue;
        }
        const std::string& why = support.reason;
        switch (rule) {
          case sm90_attention::kTileM:
            EXPECT_NE(why.find("tile_m must be"), std::string::npos) << why;
            break;
          case sm90_attention::kSharedMemory:
            EXPECT_NE(why.find("shared memory"), std::string::npos) << why;
            break;
          case sm90_attention::kRegisters:
            EXPECT_NE(why.find("registers"), std::string::npos) << why;
            break;
          case prefix_prefill::sm90_wgmma::kPageSize:
            EXPECT_NE(why.find("page size " + std::to_string(page)), std::string::npos) << why;
            break;
          default:
            ADD_FAILURE() << "unexpected rule " << rule << " for " << config.key();
        }
      }
    }
  }
  // Pages 16 (TMA boxes) and 24 (copied): flash_fwd.sm90_wgmma's 8 + 8 + 3; page 192: tile_n 64
  // only.
  EXPECT_EQ(accepted, 2 * (8 + 8 + 3) + (4 + 4 + 3));
  const Batch batch = prefill_batch(12, 4, 128);
  KernelConfig extra = make_config(128, 64, 2, 2);
  extra.set("warps", 4);
  EXPECT_FALSE(variant.check(batch, extra, hopper()).ok);
  KernelConfig missing{{"tile_m", 128}, {"tile_n", 64}, {"stages", 2}};
  EXPECT_NE(variant.check(batch, missing, hopper()).reason.find("consumers"), std::string::npos);
  DeviceInfo small;
  small.cc_major = 9;
  small.max_shared_per_block_optin = 100 * 1024;
  const Support big = variant.check(batch, make_config(128, 128, 2, 2), Target::cuda(small));
  EXPECT_FALSE(big.ok);
  EXPECT_NE(big.reason.find("this device allows"), std::string::npos) << big.reason;
  // GQA groups beyond tile_m.
  const Batch wide = prefill_batch(80, 1, 64);
  const Support group = variant.check(wide, make_config(64, 64, 2, 1), hopper());
  EXPECT_FALSE(group.ok);
  EXPECT_NE(group.reason.find("GQA group 80"), std::string::npos) << group.reason;
  EXPECT_TRUE(variant.check(wide, make_config(128, 64, 2, 2), hopper()).ok);
}

TEST(PrefixPrefillSm90Gating, OnlySm90aAndTheDefaultIsSupportedForEveryShape) {
  const Registry registry = make_registry();
  const Variant& variant = sm90_variant(registry);
  for (int head_dim : {64, 128, 256}) {
    for (DType dtype : {DType::bf16, DType::fp16}) {
      for (int page : {8, 16, 32, 64, 128, 256}) {
        for (KvLayout layout : {KvLayout::nhd, KvLayout::hnd}) {
          const Batch batch = prefill_batch(8, 2, head_dim, page, dtype, layout);
          const KernelConfig config = variant.default_config(batch, hopper());
          const Support support = variant.check(batch, config, hopper());
          EXPECT_TRUE(support.ok) << head_dim << " page " << page << ": " << support.reason;
          const Support ampere = variant.check(batch, config, testing::ampere_target());
          EXPECT_FALSE(ampere.ok);
          EXPECT_NE(ampere.reason.find("sm_90a"), std::string::npos) << ampere.reason;
          EXPECT_FALSE(variant.check(batch, config, Target::cpu()).ok);
        }
      }
    }
  }
  // GQA of any ratio up to the rows of a CTA.
  for (int group : {1, 3, 5, 7, 16, 40, 128}) {
    const Batch batch = prefill_batch(2 * group, 2, 64);
    EXPECT_TRUE(variant.check(batch, variant.default_config(batch, hopper()), hopper()).ok)
        << group;
  }
  // Decode-like batches (query_len x group <= 64 rows) start from one consumer warpgroup.
  testing::SpecShape shape;
  const Batch decode = generate_batch(testing::make_decode_spec(shape, {5, 300}));
  EXPECT_EQ(variant.full_name(variant.default_config(decode, hopper())),
            "prefix_prefill.sm90_wgmma.c1.st2.tm64.tn128");
  const Batch batch = prefill_batch(32, 8, 128);
  EXPECT_EQ(variant.full_name(variant.default_config(batch, hopper())),
            "prefix_prefill.sm90_wgmma.c2.st3.tm128.tn128");
}

struct Feature {
  std::string name;
  std::string reason_mentions;  // empty: supported
  std::function<void(Batch&)> apply;
};

TEST(PrefixPrefillSm90Gating, FeaturesAreSupportedOrRefusedWithAReason) {
  const Batch plain = prefill_batch(12, 4, 128);
  const Registry registry = make_registry();
  const Variant& variant = sm90_variant(registry);
  const std::vector<Feature> features = {
      {"plain", "", [](Batch&) {}},
      {"non-causal", "", [](Batch& b) { b.causal = false; }},
      {"hnd", "", [](Batch& b) { b.spec.kv_cache.layout = KvLayout::hnd; }},
      {"fp16", "", [](Batch& b) { b.dtype = b.kv_dtype = b.spec.model.dtype = DType::fp16; }},
      {"soft-cap", "", [](Batch& b) { b.logits_soft_cap = 30.0f; }},
      {"sinks", "", [](Batch& b) { b.sink_logits.assign(12, 1.0f); }},
      {"window longer than every sequence", "", [](Batch& b) { b.sliding_window = 100000; }},
      {"sliding window", "sliding window", [](Batch& b) { b.sliding_window = 16; }},
      {"fp8 KV per tensor", "", [](Batch& b) { b = testing::with_fp8(b, false); }},
      {"fp8 KV per head", "", [](Batch& b) { b = testing::with_fp8(b, true); }},
      {"vllm layout", "vllm", [](Batch& b) { b.spec.kv_cache.layout = KvLayout::vllm; }},
      {"explicit mask", "explicit", [](Batch& b) { b.explicit_mask = ExplicitMask{}; }},
      {"block-sparse", "block-sparse", [](Batch& b) { b.block_sparse = BlockSparseLayout{}; }},
      {"page size 5 (copied)", "", [](Batch& b) { b.page_size = b.spec.kv_cache.page_size = 5; }},
      {"page size 1 (copied)", "", [](Batch& b) { b.page_size = b.spec.kv_cache.page_size = 1; }},
      {"page size 96", "page size 96",
       [](Batch& b) { b.page_size = b.spec.kv_cache.page_size = 96; }},
  };
  for (const Feature& feature : features) {
    Batch batch = plain;
    feature.apply(batch);
    const Support s = variant.check(batch, variant.default_config(batch, hopper()), hopper());
    if (feature.reason_mentions.empty()) {
      EXPECT_TRUE(s.ok) << feature.name << ": " << s.reason;
    } else {
      EXPECT_FALSE(s.ok) << feature.name << " was accepted";
      EXPECT_NE(s.reason.find(feature.reason_mentions), std::string::npos)
          << feature.name << ": " << s.reason;
    }
  }
}

TEST(PrefixPrefillSm90Gating, ProgramsNameTheInstantiation) {
  const Registry registry = make_registry();
  const Variant& variant = sm90_variant(registry);
  const Batch small_pages = prefill_batch(8, 2, 128, 16, DType::fp16);
  const Batch large_pages = prefill_batch(8, 2, 64, 256, DType::bf16, KvLayout::hnd);
  const KernelConfig config = make_config(64, 128, 3, 1);
  const JitProgram a = variant.programs(small_pages, config, hopper()).front();
  const JitProgram b = variant.programs(large_pages, config, hopper()).front();
  ASSERT_EQ(a.kernels.size(), 2u);
  EXPECT_EQ(a.kernels[0], "attn::prefix_prefill_sm90_wgmma<1, 128, 128, 64, 128, 3, 1, 16>");
  EXPECT_EQ(b.kernels[0], "attn::prefix_prefill_sm90_wgmma<0, 64, 64, 64, 128, 3, 1, 128>");
  EXPECT_EQ(a.kernels[1], "attn::prefix_prefill_gather");
  EXPECT_NE(a.name, b.name);
  EXPECT_EQ(a.arch, "sm_90a");
  // V's width follows the head dim and an fp8 cache comes last, in the name too.
  const Batch fp8_narrow_v =
      prefill_batch(8, 2, 192, 16, DType::bf16, KvLayout::nhd, 128, /*kv_fp8=*/true);
  const JitProgram c = variant.programs(fp8_narrow_v, make_config(64, 64, 2, 1), hopper()).front();
  EXPECT_EQ(c.kernels[0], "attn::prefix_prefill_sm90_wgmma<0, 192, 128, 64, 64, 2, 1, 16, true>");
  EXPECT_NE(c.name.find(".d192.dv128.bf16.box16.kv_fp8"), std::string::npos) << c.name;
  // With fp8_dequant=1: the 16-bit copies' tiles (one box of a whole tile, whatever the cache's
  // page size) with the scales (KV_SCALES); the kernel makes the copies itself.
  KernelConfig dequant = make_config(64, 64, 2, 1);
  dequant.set("fp8_dequant", 1);
  const JitProgram d = variant.programs(fp8_narrow_v, dequant, hopper()).front();
  ASSERT_EQ(d.kernels.size(), 2u);
  EXPECT_EQ(d.kernels[0],
            "attn::prefix_prefill_sm90_wgmma<0, 192, 128, 64, 64, 2, 1, 64, false, true>");
  EXPECT_NE(d.name.find(".dq1."), std::string::npos) << d.name;
  EXPECT_NE(d.name.find(".box64."), std::string::npos) << d.name;
  EXPECT_NE(d.name, c.name);
}

// An fp8 cache adds the fp8_dequant axis (and only an fp8 cache takes it): the default converts
// once where a context tile is read by more than one query tile of 64 rows, and leaves the
// conversion to the producer where each is read about once (decode-like batches).
TEST(PrefixPrefillSm90Gating, AnFp8CacheChoosesBetweenTheProducersConversionAndConvertingOnce) {
  const Registry registry = make_registry();
  const Variant& variant = sm90_variant(registry);
  const Batch prefill = testing::with_fp8(prefill_batch(8, 2, 128), true);
  const KernelConfig chosen = variant.default_config(prefill, hopper());
  EXPECT_EQ(chosen.get("fp8_dequant"), 1);
  EXPECT_TRUE(variant.check(prefill, chosen, hopper()));
  KernelConfig converts = make_config(128, 64, 2, 2);  // room for the producer's staging
  converts.set("fp8_dequant", 0);
  EXPECT_TRUE(variant.check(prefill, converts, hopper()));
  KernelConfig neither = chosen;
  neither.set("fp8_dequant", 2);
  const Support two = variant.check(prefill, neither, hopper());
  EXPECT_FALSE(two.ok);
  EXPECT_NE(two.reason.find("fp8_dequant"), std::string::npos) << two.reason;
  bool listed = false;
  for (const ConfigAxis& axis : variant.space(prefill, hopper()))
    listed = listed || axis.name == "fp8_dequant";
  EXPECT_TRUE(listed);

  testing::SpecShape shape;
  const Batch decode =
      testing::with_fp8(generate_batch(testing::make_decode_spec(shape, {5, 300})), false);
  EXPECT_EQ(variant.default_config(decode, hopper()).get("fp8_dequant"), 0);

  // At head dim 256 the scales leave two consumers too few registers: one consumer, or the
  // producer's conversion.
  const Batch wide = testing::with_fp8(prefill_batch(8, 2, 256), true);
  KernelConfig pair = make_config(128, 64, 2, 2);
  pair.set("fp8_dequant", 1);
  const Support refused = variant.check(wide, pair, hopper());
  EXPECT_FALSE(refused.ok);
  EXPECT_NE(refused.reason.find("fp8 scales"), std::string::npos) << refused.reason;
  pair.set("fp8_dequant", 0);
  EXPECT_TRUE(variant.check(wide, pair, hopper()));
  EXPECT_TRUE(variant.check(wide, variant.default_config(wide, hopper()), hopper()));

  const Batch bf16 = prefill_batch(8, 2, 128);
  const Support extra = variant.check(bf16, chosen, hopper());
  EXPECT_FALSE(extra.ok);
  EXPECT_NE(extra.reason.find("fp8_dequant"), std::string::npos) << extra.reason;
  for (const ConfigAxis& axis : variant.space(bf16, hopper())) EXPECT_NE(axis.name, "fp8_dequant");
}

// NVRTC compiles every config the traits accept for every head dim: at 64, 128 and 256 with pages
// of 16 keys (bf16, TMA boxes of one page), of 24 keys (bf16, the cp.async path: no box tiles
// them) and boxes of a whole key tile (fp16, page 256), and over an fp8 cache (bf16 with pages of
// 16, fp16 with pages of 5: every tile copied and converted by the producer warpgroup); at 80, 96,
// 192 and 192 with a V of 128, bf16 on pages of 16 keys, over a 16-bit and an fp8 cache.
// Every third accepted config of a batch, rotating (testing::compiles_config), and over an fp8
// cache the default tiles with fp8_dequant=1. ATTN_TEST_EXHAUSTIVE=1 compiles every config and adds
// pages of 5, 8 and 32 keys and every page for both dtypes.
// ptxas reports no spills, no stack frame and no wgmma serialisation. ATTN_TEST_VERBOSE=1 prints
// ptxas' report.
TEST(PrefixPrefillSm90Compile, EveryAcceptedConfigCompilesForSm90aWithoutSpills) {
  const fs::path dir =
      fs::temp_directory_path() /
      ("attn-prefix-sm90-jit-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  fs::remove_all(dir);
  JitCompiler jit(JitOptions{dir.string(), /*use_cache=*/false});
  const Registry registry = make_registry();
  const Variant& variant = sm90_variant(registry);
  const bool exhaustive = std::getenv("ATTN_TEST_EXHAUSTIVE") != nullptr;
  const Target target = hopper();

  struct Job {
    std::string what;
    std::future<CompiledProgram> compiled;
    size_t kernels;  // the program's
  };
  std::vector<Job> jobs;
  std::vector<Batch> batches;  // programs() reads the batch; keep them alive
  const std::vector<std::pair<int, int>> dims = {{64, 0},  {80, 0},  {96, 0},   {128, 0},
                                                 {192, 0}, {256, 0}, {192, 128}};
  batches.reserve(24 * dims.size());
  for (const auto& [head_dim, v_head_dim] : dims) {
    for (DType dtype : {DType::bf16, DType::fp16}) {
      for (int page : {5, 8, 16, 24, 32, 256}) {
        for (bool fp8 : {false, true}) {
          // Head dims 64, 128 and 256: both dtypes and two or three page sizes (an fp8 cache's
          // tiles are copied whatever the page); the others (one more column block, partly used,
          // or a narrower V) bf16 on 16-key pages, to keep CI short.
          const bool power_of_two =
              (head_dim == 64 || head_dim == 128 || head_dim == 256) && v_head_dim == 0;
          const bool sampled =
              !power_of_two ? dtype == DType::bf16 && page == 16
              : fp8 ? (dtype == DType::bf16 && page == 16) || (dtype == DType::fp16 && page == 5)
                    : (dtype == DType::bf16 && (page == 16 || page == 24)) ||
                          (dtype == DType::fp16 && page == 256);
          if (!exhaustive && !sampled) continue;
          batches.push_back(
              prefill_batch(12, 4, head_dim, page, dtype, KvLayout::nhd, v_head_dim, fp8));
          const Batch& batch = batches.back();
          // fp8_dequant=1 runs the 16-bit cache's attention kernel with two scales, and its pass:
          // the default tiles only, unless exhaustive.
          KernelConfig dequant_default = variant.default_config(batch, target);
          if (fp8) dequant_default.set("fp8_dequant", 1);
          int accepted = 0;
          size_t sampled_index = 0;  // of the configs other than fp8_dequant=1
          for (const KernelConfig& config : testing::space_configs(variant, batch, hopper())) {
            if (!variant.check(batch, config, target)) continue;
            ++accepted;
            if (fp8 && config.get("fp8_dequant") == 1) {
              if (!exhaustive && !(config == dequant_default)) continue;
            } else if (!testing::compiles_config(batches.size(), sampled_index++)) {
              continue;
            }
            JitProgram program = variant.programs(batch, config, target).front();
            program.options.push_back("--ptxas-options=-v");
            jobs.push_back({program.name, jit.compile_async(program), program.kernels.size()});
          }
          EXPECT_GT(accepted, 0);
        }
      }
    }
  }
  const std::regex spills("([1-9][0-9]*) bytes (spill stores|spill loads|stack frame)");
  for (Job& job : jobs) {
    try {
      const CompiledProgram compiled = job.compiled.get();
      EXPECT_EQ(compiled.lowered_names.size(), job.kernels) << job.what;
      EXPECT_NE(compiled.log.find("registers"), std::string::npos) << job.what << compiled.log;
      EXPECT_FALSE(std::regex_search(compiled.log, spills)) << job.what << ":\n" << compiled.log;
      EXPECT_EQ(compiled.log.find("Performance Loss"), std::string::npos)
          << job.what << ": ptxas serialises wgmma:\n"
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
