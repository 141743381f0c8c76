// flash_fwd.sm80_mma on the CPU: the traits reject invalid configs with a reason before any
// compile, the variant declines the batch features the family does not define, and a seeded
// sample of the configs the traits accept compiles through NVRTC for sm_80 and sm_90a, causal and
// not, spilling at most a few loop invariants (ATTN_TEST_EXHAUSTIVE=1 compiles them all).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <future>
#include <iostream>
#include <random>
#include <regex>
#include <vector>

#include "kernels/device/device_info.hpp"
#include "kernels/flash_fwd/sm80_mma_traits.hpp"
#include "kernels/jit/jit_compiler.hpp"
#include "kernels/registry.hpp"
#include "tests/kernels/fp8_batch.hpp"
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

// v_head_dim 0: V as wide as Q and K.
Batch prefill_batch(int q_heads, int kv_heads, int head_dim, DType dtype = DType::bf16,
                    bool causal = true, int v_head_dim = 0) {
  testing::SpecShape shape;
  shape.q_heads = q_heads;
  shape.kv_heads = kv_heads;
  shape.head_dim = head_dim;
  shape.dtype = dtype;
  WorkloadSpec spec = testing::make_spec(shape, {{0, 100}, {7, 33}, {0, 1}});
  spec.mask.causal = causal;
  if (v_head_dim != 0) spec.model.v_head_dim = v_head_dim;
  return generate_batch(spec);
}

// The (head_dim, v_head_dim) pairs the variant runs: every head dim with V as wide, and the
// narrower Vs of DeepSeek-V3's prefill (192, 128) and of (128, 64).
const std::vector<std::pair<int, int>> kDimPairs = {{64, 64},   {80, 80},   {96, 96},   {128, 128},
                                                    {192, 192}, {256, 256}, {192, 128}, {128, 64}};

KernelConfig make_config(int tile_m, int tile_n, int warps, int stages) {
  return KernelConfig{{"tile_m", tile_m}, {"tile_n", tile_n}, {"warps", warps}, {"stages", stages}};
}

const Variant& sm80_variant(const Registry& registry) {
  const Variant* variant = registry.find("flash_fwd.sm80_mma");
  EXPECT_NE(variant, nullptr);
  return *variant;
}

// Every (tile_m, tile_n, warps, stages) of the variant's space.
std::vector<KernelConfig> space_configs(const Variant& variant, const Batch& batch,
                                        const Target& target) {
  const auto space = variant.space(batch, target);
  EXPECT_EQ(space.size(), 4u);
  std::vector<KernelConfig> out;
  for (int64_t m : space[0].values) {
    for (int64_t n : space[1].values) {
      for (int64_t w : space[2].values) {
        for (int64_t s : space[3].values)
          out.push_back(make_config(int(m), int(n), int(w), int(s)));
      }
    }
  }
  return out;
}

// The swizzled layout's ldmatrix addresses: for every lane's fragment offset as the kernel builds
// them (row lane % 16 or the K pattern, chunk swizzled by the row), whole rows further on and a k16
// step's XOR, fragment_address (the XOR before the rows are added) names the element that the XOR
// of the whole sum names, and so does frag_at's GROUPED_STEPS form (four XORed low steps, the
// step's group of four as an immediate 64 elements each) for every step.
TEST(FlashFwdSm80Traits, FragmentAddressesXorTheStepBeforeAddingWholeRows) {
  for (int head_dim : {128, 256}) {
    ASSERT_TRUE(sm80_attention::swizzled(head_dim));
    const int row = sm80_attention::row_elements(head_dim);
    const std::vector<unsigned short> buffer(96 * row + 256);
    const unsigned short* tile = buffer.data();
    for (int lane = 0; lane < 32; ++lane) {
      const int frags[3] = {
          (lane % 16) * row + sm80_attention::swizzled_chunk(head_dim, lane, lane / 16) * 8,
          ((lane / 16) * 8 + lane % 8) * row +
              sm80_attention::swizzled_chunk(head_dim, lane, (lane / 8) % 2) * 8,
          (16 + lane % 16) * row + sm80_attention::swizzled_chunk(head_dim, lane, lane / 16) * 8};
      for (int frag : frags) {
        for (int rows = 0; rows < 64 * row; rows += 16 * row) {
          for (int dp = 0; dp < head_dim / 16; ++dp) {
            const long want = long((frag + rows) ^ (16 * dp));
            const auto got = head_dim == 128
                                 ? sm80_attention::fragment_address<128>(tile, frag, rows, 16 * dp)
                                 : sm80_attention::fragment_address<256>(tile, frag, rows, 16 * dp);
            EXPECT_EQ(long(got - tile), want)
                << head_dim << " " << lane << " " << rows << " " << dp;
            const int low_step = frag ^ (16 * (dp % 4));
            EXPECT_EQ(long(low_step + rows + 64 * (dp / 4)), want)
                << head_dim << " " << lane << " " << rows << " " << dp;
          }
        }
      }
    }
  }
}

// At head_dim 192 (three 128-byte groups) fragment_address names, for every fragment offset of
// the kernel, whole rows further on and every k16 step, the element of the logical chunk the step
// reaches, where swizzled_chunk placed it in its row (the step's group added, its part within the
// group XORed); the same for the power-of-two widths.
TEST(FlashFwdSm80Traits, FragmentAddressesFindTheSwizzledChunkOfEveryStep) {
  for (int head_dim : {128, 192, 256}) {
    ASSERT_TRUE(sm80_attention::swizzled(head_dim));
    const int row = sm80_attention::row_elements(head_dim);
    ASSERT_EQ(row, head_dim);
    const std::vector<unsigned short> buffer(96 * row + 256);
    const unsigned short* tile = buffer.data();
    for (int lane = 0; lane < 32; ++lane) {
      // (row, logical chunk) of the three fragment patterns (Q, K, V).
      const int rows_chunks[3][2] = {{lane % 16, lane / 16},
                                     {(lane / 16) * 8 + lane % 8, (lane / 8) % 2},
                                     {lane % 16, lane / 16}};
      for (const auto& rc : rows_chunks) {
        const int r = rc[0], c = rc[1];
        const int frag = r * row + sm80_attention::swizzled_chunk(head_dim, r, c) * 8;
        for (int rows = 0; rows < 64; rows += 16) {
          for (int ks = 0; ks < head_dim / 16; ++ks) {
            const long want =
                long((r + rows) * row +
                     sm80_attention::swizzled_chunk(head_dim, r + rows, c + 2 * ks) * 8);
            const unsigned short* got =
                head_dim == 128
                    ? sm80_attention::fragment_address<128>(tile, frag, rows * row, 16 * ks)
                : head_dim == 192
                    ? sm80_attention::fragment_address<192>(tile, frag, rows * row, 16 * ks)
                    : sm80_attention::fragment_address<256>(tile, frag, rows * row, 16 * ks);
            EXPECT_EQ(long(got - tile), want)
                << head_dim << " " << lane << " " << rows << " " << ks;
          }
        }
      }
    }
  }
  // Padded widths (64, 80, 96): the step is added.
  for (int head_dim : {64, 80, 96}) {
    EXPECT_FALSE(sm80_attention::swizzled(head_dim));
    EXPECT_EQ(sm80_attention::row_elements(head_dim), head_dim + 8);
  }
  const unsigned short* base = nullptr;
  EXPECT_EQ(sm80_attention::fragment_address<80>(base, 88, 176, 64) - base, 88 + 176 + 64);
  EXPECT_EQ(sm80_attention::fragment_address<96>(base, 104, 208, 80) - base, 104 + 208 + 80);
}

// The copy pattern's threads per row: a power of two, the row's chunks rounded up.
TEST(FlashFwdSm80Traits, CopySlotsRoundTheRowsChunksUpToAPowerOfTwo) {
  using sm80_attention::copy_slots;
  EXPECT_EQ(copy_slots(64), 8);
  EXPECT_EQ(copy_slots(80), 16);
  EXPECT_EQ(copy_slots(96), 16);
  EXPECT_EQ(copy_slots(128), 16);
  EXPECT_EQ(copy_slots(192), 32);
  EXPECT_EQ(copy_slots(256), 32);
  for (int d : {64, 128, 256}) EXPECT_TRUE(sm80_attention::power_of_two_chunks(d)) << d;
  for (int d : {80, 96, 192}) EXPECT_FALSE(sm80_attention::power_of_two_chunks(d)) << d;
}

TEST(FlashFwdSm80Traits, RulesNameTheFirstBrokenConstraint) {
  using namespace flash_fwd::sm80_mma;
  using namespace sm80_attention;
  EXPECT_EQ(check(128, 128, 64, 8, 2), kOk);
  EXPECT_EQ(check(128, 128, 32, 4, 2), kOk);
  EXPECT_EQ(check(112, 128, 64, 8, 2), kHeadDim);
  EXPECT_EQ(check(96, 128, 64, 8, 2), kOk);
  EXPECT_EQ(check(80, 128, 64, 8, 2), kOk);
  EXPECT_EQ(check(192, 64, 64, 4, 1), kOk);
  EXPECT_EQ(check(192, 128, 64, 64, 4, 1), kOk);         // DeepSeek-V3's prefill: V 128
  EXPECT_EQ(check(128, 64, 128, 64, 8, 2), kOk);         // V 64
  EXPECT_EQ(check(128, 192, 128, 64, 8, 2), kVHeadDim);  // V wider than K
  EXPECT_EQ(check(128, 112, 128, 64, 8, 2), kVHeadDim);  // not a head dim
  EXPECT_EQ(check(128, 96, 64, 3, 2), kWarps);
  EXPECT_EQ(check(128, 128, 64, 8, 1), kOk);  // the split K / V pipeline
  EXPECT_EQ(check(128, 128, 64, 8, 0), kStages);
  EXPECT_EQ(check(128, 128, 64, 8, 5), kStages);
  EXPECT_EQ(check(128, 64, 64, 8, 2), kTileM);    // 8 rows per warp: less than one m16 tile
  EXPECT_EQ(check(128, 256, 64, 4, 2), kTileM);   // 64 rows per warp
  EXPECT_EQ(check(128, 128, 48, 8, 2), kTileN);   // not a whole number of k16 slices of P
  EXPECT_EQ(check(128, 128, 256, 8, 2), kTileN);  // over 128
  EXPECT_EQ(check(256, 256, 128, 8, 4), kSharedMemory);
  // 32 rows x (128 + 64): admitted (estimate 260; ptxas spills about 100 bytes, and it is the
  // fastest non-causal config at head_dim 128); 32 rows x (128 + 128) is not.
  EXPECT_EQ(check(128, 128, 64, 4, 1), kOk);
  EXPECT_EQ(register_estimate(128, 128, 64, 4), kMaxRegisterEstimate);
  EXPECT_EQ(check(128, 128, 128, 4, 2), kRegisters);
  EXPECT_EQ(check(256, 128, 32, 4, 2), kRegisters);  // 32 rows x 256 accumulators
  // Shared memory: Q plus stages x (K + V) tiles (stages 1: one K and one V tile), of rows padded
  // by 16 bytes at head_dim 64 and unpadded (swizzled) at 128 and 256.
  EXPECT_EQ(shared_bytes(64, 128, 64, 2), (128 + 2 * 2 * 64) * 72 * 2);
  EXPECT_EQ(shared_bytes(128, 128, 64, 2), (128 + 2 * 2 * 64) * 128 * 2);
  EXPECT_EQ(shared_bytes(256, 128, 64, 1), (128 + 2 * 64) * 256 * 2);
  // 80 and 96 padded, 192 swizzled; a narrower V's buffers are its own width.
  EXPECT_EQ(shared_bytes(80, 128, 64, 2), (128 + 2 * 2 * 64) * 88 * 2);
  EXPECT_EQ(shared_bytes(96, 128, 64, 2), (128 + 2 * 2 * 64) * 104 * 2);
  EXPECT_EQ(shared_bytes(192, 64, 64, 1), (64 + 2 * 64) * 192 * 2);
  EXPECT_EQ(shared_bytes(192, 128, 64, 64, 1), ((64 + 64) * 192 + 64 * 128) * 2);
  EXPECT_EQ(shared_bytes(128, 64, 128, 64, 2), ((128 + 2 * 64) * 128 + 2 * 64 * 72) * 2);
  // The accumulator is V's width: with a narrower V, Q's fragments fit beside it (16 rows x 192
  // dims over 8 warps: 96 + 6 + 64 + 48 = 214 registers), where at V 192 they do not (200 + 48).
  EXPECT_EQ(accumulator_registers(128, 128, 64, 8), 96);
  EXPECT_EQ(register_estimate(192, 128, 128, 64, 8), 214);
  EXPECT_TRUE(q_in_registers(192, 128, 128, 64, 8));
  EXPECT_FALSE(q_in_registers(192, 128, 64, 8));
  EXPECT_EQ(register_estimate(128, 128, 128, 64, 4), register_estimate(128, 128, 64, 4));
  // Q stays in registers when it fits beside the accumulators, never past the estimate limit.
  EXPECT_TRUE(q_in_registers(128, 128, 64, 8));
  EXPECT_FALSE(q_in_registers(128, 128, 32, 4));
  EXPECT_FALSE(q_in_registers(256, 128, 64, 8));
  for (int d : {64, 80, 96, 128, 192, 256}) {
    for (int w : {1, 2, 4, 8}) {
      for (int rows : {16, 32}) {
        for (int n : {16, 32, 64, 128}) {
          if (check(d, rows * w, n, w, 2) != kOk) continue;
          EXPECT_LE(register_estimate(d, rows * w, n, w), kMaxRegisterEstimate);
          EXPECT_EQ(m_frags(rows * w, w), rows / 16);
        }
      }
    }
  }
}

// Every point of the space is accepted exactly when the traits (and the device's shared memory)
// accept it, and every refusal carries a reason that names what to change.
// The row sums come from the tensor cores where that measured faster: head dims 128 and 256 over
// 4 warps; over 2 or 8 warps and at head dim 64 the softmax keeps its FADDs.
TEST(FlashFwdSm80Traits, RowSumsOnTheTensorCoresAtHeadDims128And256Over4Warps) {
  using sm80_attention::tensor_row_sums;
  EXPECT_TRUE(tensor_row_sums(128, 4));
  EXPECT_TRUE(tensor_row_sums(256, 4));
  EXPECT_FALSE(tensor_row_sums(64, 4));
  EXPECT_FALSE(tensor_row_sums(128, 8));
  EXPECT_FALSE(tensor_row_sums(256, 8));
  EXPECT_FALSE(tensor_row_sums(128, 2));
}

TEST(FlashFwdSm80Gating, SpaceRefusalsMirrorTheTraitsWithReasons) {
  const Registry registry = make_registry();
  const Variant& variant = sm80_variant(registry);
  int accepted = 0, refused = 0;
  for (const auto& [head_dim, v_head_dim] : kDimPairs) {
    const Batch batch = prefill_batch(16, 4, head_dim, DType::bf16, true, v_head_dim);
    for (const Target& target : {hopper(), ampere()}) {
      for (const KernelConfig& config : space_configs(variant, batch, target)) {
        const int m = int(config.get("tile_m")), n = int(config.get("tile_n")),
                  w = int(config.get("warps")), s = int(config.get("stages"));
        const Support support = variant.check(batch, config, target);
        const int rule = flash_fwd::sm80_mma::check(head_dim, v_head_dim, m, n, w, s);
        const bool device_fits = sm80_attention::shared_bytes(head_dim, v_head_dim, m, n, s) <=
                                 target.max_shared_per_block;
        EXPECT_EQ(support.ok, rule == flash_fwd::sm80_mma::kOk && device_fits)
            << config.key() << " d" << head_dim << " " << target.arch << ": " << support.reason;
        if (support.ok) {
          ++accepted;
          continue;
        }
        ++refused;
        const std::string& why = support.reason;
        switch (rule) {
          case flash_fwd::sm80_mma::kTileM:
            EXPECT_NE(why.find("tile_m must be"), std::string::npos) << why;
            break;
          case flash_fwd::sm80_mma::kSharedMemory:
          case flash_fwd::sm80_mma::kOk:  // the device's own limit
            EXPECT_NE(why.find("shared memory"), std::string::npos) << why;
            break;
          case flash_fwd::sm80_mma::kRegisters:
            EXPECT_NE(why.find("registers"), std::string::npos) << why;
            break;
          default:
            ADD_FAILURE() << "unexpected rule " << rule << " for " << config.key();
        }
      }
    }
  }
  EXPECT_GT(accepted, 20);
  EXPECT_GT(refused, 0);
  // Off-space values and malformed configs are refused too.
  const Batch batch = prefill_batch(16, 4, 128);
  EXPECT_FALSE(variant.check(batch, make_config(128, 64, 3, 2), hopper()).ok);
  EXPECT_FALSE(variant.check(batch, make_config(128, 64, 8, 0), hopper()).ok);
  EXPECT_FALSE(variant.check(batch, make_config(128, 48, 8, 2), hopper()).ok);
  KernelConfig extra = make_config(128, 64, 8, 2);
  extra.set("num_splits", 0);
  EXPECT_FALSE(variant.check(batch, extra, hopper()).ok);
  KernelConfig missing{{"tile_m", 128}, {"tile_n", 64}, {"warps", 8}};
  EXPECT_NE(variant.check(batch, missing, hopper()).reason.find("stages"), std::string::npos);
}

TEST(FlashFwdSm80Gating, DefaultConfigIsSupportedForEveryHeadDimDtypeAndDevice) {
  const Registry registry = make_registry();
  const Variant& variant = sm80_variant(registry);
  DeviceInfo small = {};  // sm_86: 99 KiB per block
  small.cc_major = 8;
  small.cc_minor = 6;
  small.max_shared_per_block_optin = 99 * 1024;
  for (const auto& [head_dim, v_head_dim] : kDimPairs) {
    for (DType dtype : {DType::bf16, DType::fp16}) {
      for (const Target& target : {hopper(), ampere(), Target::cuda(small)}) {
        const Batch batch = prefill_batch(8, 1, head_dim, dtype, true, v_head_dim);
        const KernelConfig config = variant.default_config(batch, target);
        const Support support = variant.check(batch, config, target);
        EXPECT_TRUE(support.ok) << head_dim << "x" << v_head_dim << " " << target.arch << ": "
                                << support.reason;
      }
    }
  }
  // The label names the config, so the full name is the JIT program and database key.
  const Batch batch = prefill_batch(16, 16, 128);  // causal, short sequences
  EXPECT_EQ(variant.full_name(variant.default_config(batch, hopper())),
            "flash_fwd.sm80_mma.st1.tm64.tn64.w4");
  EXPECT_EQ(variant.full_name(variant.default_config(
                prefill_batch(16, 16, 128, DType::bf16, /*causal=*/false), hopper())),
            "flash_fwd.sm80_mma.st1.tm128.tn64.w4");
  // Head dim 256: 64 x 64 over 4 warps on sequences of up to 2048 keys (4096 without a mask),
  // 128 x 64 over 8 beyond.
  EXPECT_EQ(variant.full_name(variant.default_config(prefill_batch(8, 8, 256), hopper())),
            "flash_fwd.sm80_mma.st1.tm64.tn64.w4");
  testing::SpecShape shape;
  shape.q_heads = 8;
  shape.kv_heads = 8;
  shape.head_dim = 256;
  auto default_name = [&](std::vector<std::pair<int64_t, int64_t>> sequences, bool causal) {
    WorkloadSpec spec = testing::make_spec(shape, sequences);
    spec.mask.causal = causal;
    return variant.full_name(variant.default_config(generate_batch(spec), hopper()));
  };
  EXPECT_EQ(default_name({{0, 100}, {2000, 49}}, true), "flash_fwd.sm80_mma.st1.tm128.tn64.w8");
  EXPECT_EQ(default_name({{0, 100}, {2000, 49}}, false), "flash_fwd.sm80_mma.st1.tm64.tn64.w4");
  EXPECT_EQ(default_name({{0, 4096}}, false), "flash_fwd.sm80_mma.st1.tm64.tn64.w4");
  EXPECT_EQ(default_name({{0, 4097}}, false), "flash_fwd.sm80_mma.st1.tm128.tn64.w8");
}

struct Feature {
  std::string name;
  std::string reason_mentions;  // empty: supported
  std::function<void(Batch&)> apply;
};

TEST(FlashFwdSm80Gating, FeaturesAreSupportedOrRefusedWithAReason) {
  const Batch plain = prefill_batch(12, 4, 128);
  const Target gpu = hopper();
  const Registry registry = make_registry();
  const Variant& variant = sm80_variant(registry);
  const Variant& cpu = *registry.find("flash_fwd.cpu_reference");
  const KernelConfig config = variant.default_config(plain, gpu);
  ASSERT_TRUE(variant.check(plain, config, gpu)) << variant.check(plain, config, gpu).reason;

  const std::vector<Feature> features = {
      {"non-causal", "", [](Batch& b) { b.causal = false; }},
      {"hnd", "", [](Batch& b) { b.spec.kv_cache.layout = KvLayout::hnd; }},
      {"fp16", "", [](Batch& b) { b.dtype = b.kv_dtype = b.spec.model.dtype = DType::fp16; }},
      {"soft-cap", "soft-cap", [](Batch& b) { b.logits_soft_cap = 30.0f; }},
      {"sliding window", "sliding window", [](Batch& b) { b.sliding_window = 16; }},
      {"sinks", "sinks", [](Batch& b) { b.sink_logits.assign(12, 1.0f); }},
      {"fp8 KV per tensor", "", [](Batch& b) { b = testing::with_fp8(b, false); }},
      {"fp8 KV per head", "", [](Batch& b) { b = testing::with_fp8(b, true); }},
      {"vllm layout", "vllm", [](Batch& b) { b.spec.kv_cache.layout = KvLayout::vllm; }},
      {"block-sparse", "block-sparse", [](Batch& b) { b.block_sparse = BlockSparseLayout{}; }},
      {"explicit mask", "explicit", [](Batch& b) { b.explicit_mask = ExplicitMask{}; }},
      {"decode batch", "decode batch",
       [](Batch& b) {
         b = generate_batch(testing::make_decode_spec(testing::SpecShape{}, {5, 300}));
       }},
  };
  for (const Feature& feature : features) {
    Batch batch = plain;
    feature.apply(batch);
    const Support s = variant.check(batch, variant.default_config(batch, gpu), gpu);
    if (feature.reason_mentions.empty()) {
      EXPECT_TRUE(s.ok) << feature.name << ": " << s.reason;
    } else {
      EXPECT_FALSE(s.ok) << feature.name << " was accepted";
      EXPECT_NE(s.reason.find(feature.reason_mentions), std::string::npos)
          << feature.name << ": " << s.reason;
    }
    // The CPU reference variant declines exactly the family's refusals (not the vllm layout,
    // which it reads).
    if (feature.name != "vllm layout") {
      EXPECT_EQ(cpu.check(batch, {}, Target::cpu()).ok, s.ok) << feature.name;
    }
  }
}

TEST(FlashFwdSm80Gating, AnyGroupSizeAndNewerGpusOnly) {
  const Registry registry = make_registry();
  const Variant& variant = sm80_variant(registry);
  for (int group : {1, 3, 5, 7, 16, 40}) {
    const Batch batch = prefill_batch(2 * group, 2, 64);
    EXPECT_TRUE(variant.check(batch, variant.default_config(batch, hopper()), hopper()).ok)
        << group;
  }
  DeviceInfo turing;
  turing.cc_major = 7;
  turing.cc_minor = 5;
  const Batch batch = prefill_batch(8, 2, 64);
  EXPECT_FALSE(variant.check(batch, make_config(64, 64, 4, 2), Target::cuda(turing)).ok);
  EXPECT_FALSE(variant.check(batch, make_config(64, 64, 4, 2), Target::cpu()).ok);
  DeviceInfo small = {};
  small.cc_major = 8;
  small.cc_minor = 6;
  small.max_shared_per_block_optin = 99 * 1024;
  const Batch d256 = prefill_batch(8, 2, 256);
  const Support big = variant.check(d256, make_config(128, 64, 8, 2), Target::cuda(small));
  EXPECT_FALSE(big.ok);
  EXPECT_NE(big.reason.find("this device allows"), std::string::npos) << big.reason;
}

// The JIT program differs by causality (a template argument) and names it.
TEST(FlashFwdSm80Gating, ProgramsNameTheInstantiation) {
  const Registry registry = make_registry();
  const Variant& variant = sm80_variant(registry);
  const Batch causal = prefill_batch(8, 2, 128, DType::fp16, true);
  const Batch full = prefill_batch(8, 2, 128, DType::fp16, false);
  const KernelConfig config = make_config(64, 64, 4, 3);
  const JitProgram a = variant.programs(causal, config, hopper()).front();
  const JitProgram b = variant.programs(full, config, hopper()).front();
  ASSERT_EQ(a.kernels.size(), 2u);
  EXPECT_EQ(a.kernels[0], "attn::flash_fwd_sm80_mma<1, 128, 64, 64, 4, 3, true>");
  EXPECT_EQ(b.kernels[0], "attn::flash_fwd_sm80_mma<1, 128, 64, 64, 4, 3, false>");
  EXPECT_EQ(a.kernels[1], "attn::flash_fwd_gather_kv");
  EXPECT_NE(a.name, b.name);
  EXPECT_EQ(a.arch, "sm_90a");
  // A narrower V: its width is the last template argument, and the program's name says it.
  const Batch narrow = prefill_batch(8, 2, 192, DType::bf16, true, 128);
  const JitProgram c = variant.programs(narrow, config, hopper()).front();
  EXPECT_EQ(c.kernels[0], "attn::flash_fwd_sm80_mma<0, 192, 64, 64, 4, 3, true, 128>");
  EXPECT_NE(c.name.find(".d192.dv128."), std::string::npos) << c.name;
  EXPECT_EQ(a.name.find(".dv"), std::string::npos) << a.name;
}

// NVRTC compiles a seeded sample of the configs the traits accept (always including each default),
// for both archs, both dtypes and causal or not, and ptxas spills at most kMaxSpillBytes (the
// register estimate in the traits keeps accepted configs in registers, but for the few it admits
// with a small spill).
TEST(FlashFwdSm80Compile, AcceptedConfigsCompileForSm80AndSm90aWithBoundedSpills) {
  const fs::path dir =
      fs::temp_directory_path() /
      ("attn-flash-fwd-jit-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  fs::remove_all(dir);
  JitCompiler jit(JitOptions{dir.string(), /*use_cache=*/false});
  const Registry registry = make_registry();
  const Variant& variant = sm80_variant(registry);
  const bool exhaustive = std::getenv("ATTN_TEST_EXHAUSTIVE") != nullptr;
  std::mt19937_64 rng(8);

  struct Job {
    std::string what;
    std::future<CompiledProgram> compiled;
  };
  std::vector<Job> jobs;
  std::vector<Batch> batches;  // programs() reads the batch; keep them alive
  batches.reserve(32);
  for (const auto& [head_dim, v_head_dim] : kDimPairs) {
    for (bool causal : {true, false}) {
      // One dtype per (head dim, causality), alternating, to keep CI time modest: the dtype
      // changes only the mma and conversion instructions, not the register allocation.
      const DType dtype = (head_dim / 64 + int(causal)) % 2 == 0 ? DType::bf16 : DType::fp16;
      batches.push_back(prefill_batch(16, 4, head_dim, dtype, causal, v_head_dim));
      const Batch& batch = batches.back();
      for (const Target& target : {ampere(), hopper()}) {
        std::vector<KernelConfig> accepted;
        for (const KernelConfig& config : space_configs(variant, batch, target)) {
          if (variant.check(batch, config, target)) accepted.push_back(config);
        }
        ASSERT_FALSE(accepted.empty());
        std::shuffle(accepted.begin(), accepted.end(), rng);
        accepted.insert(accepted.begin(), variant.default_config(batch, target));
        const size_t take = exhaustive ? accepted.size() : std::min<size_t>(2, accepted.size());
        for (size_t i = 0; i < take; ++i) {
          JitProgram program = variant.programs(batch, accepted[i], target).front();
          program.options.push_back("--ptxas-options=-v");
          jobs.push_back({program.name + " " + program.arch, jit.compile_async(program)});
        }
      }
    }
  }
  // The register rule admits a few configs that spill a little
  // (flash_fwd::sm80_mma::kMaxRegisterEstimate: loop-invariant values reloaded once per key tile,
  // where it measured fastest); nothing spills more than that.
  const std::regex spills("([0-9]+) bytes spill (stores|loads)");
  constexpr int kMaxSpillBytes = 256;
  for (Job& job : jobs) {
    try {
      const CompiledProgram compiled = job.compiled.get();
      EXPECT_EQ(compiled.lowered_names.size(), 2u) << job.what;
      EXPECT_NE(compiled.log.find("registers"), std::string::npos) << job.what << compiled.log;
      for (auto it = std::sregex_iterator(compiled.log.begin(), compiled.log.end(), spills);
           it != std::sregex_iterator(); ++it) {
        EXPECT_LE(std::stoi((*it)[1].str()), kMaxSpillBytes) << job.what << ":\n" << compiled.log;
      }
      if (std::getenv("ATTN_TEST_VERBOSE")) std::cout << job.what << "\n" << compiled.log;
    } catch (const CompileError& error) {
      ADD_FAILURE() << job.what << ": " << error.what() << "\n" << error.log();
    }
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace attn
