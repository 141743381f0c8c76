// The blocksparse family on the CPU: the traits' rules; the variants' gating (features, configs,
// block sizes) with reasons; the host-side walks the kernels run checked key by key against
// workloads/visibility's key_visible (blocksparse.sm80_mma's tile walk, emulated with the kernel's
// own element mask, and blocksparse.sm80_mma_decode's per-CTA tile list with head bits) on random
// layouts, contexts and lengths; the work model; the CPU reference variant; and a seeded sample of
// accepted configs compiled by NVRTC for sm_80 and sm_90a without spills, 16-bit and fp8 caches
// (fp8's own gating, bytes and reference: fp8_test.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <iostream>
#include <random>
#include <regex>
#include <set>

#include "base/dtype.hpp"
#include "kernels/blocksparse/blocksparse_variants.hpp"
#include "kernels/blocksparse/sm80_mma_decode_traits.hpp"
#include "kernels/blocksparse/sm80_mma_traits.hpp"
#include "kernels/device/device_info.hpp"
#include "kernels/jit/jit_compiler.hpp"
#include "kernels/reference/paged_attention_reference.hpp"
#include "kernels/registry.hpp"
#include "tests/kernels/blocksparse/cpu_reference_check.hpp"
#include "tests/kernels/every_config_cases.hpp"
#include "tests/test_support.hpp"
#include "workloads/visibility.hpp"

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

BlockSparseSpec phi3_layout(int block_size, int local, int stride, int sliding = 1,
                            bool homo = false) {
  BlockSparseSpec b;
  b.block_size = block_size;
  b.local_blocks = local;
  b.vertical_stride = stride;
  b.head_sliding_step = sliding;
  b.homo_head = homo;
  return b;
}

Batch sparse_batch(const testing::SpecShape& shape,
                   const std::vector<std::pair<int64_t, int64_t>>& sequences,
                   const BlockSparseSpec& layout) {
  WorkloadSpec spec = testing::make_spec(shape, sequences, "blocksparse-test");
  spec.mask.block_sparse = layout;
  return generate_batch(spec);
}

// v_head_dim 0: V as wide as Q and K.
Batch prefill_batch(int q_heads, int kv_heads, int head_dim, DType dtype = DType::bf16,
                    int block_size = 64, int v_head_dim = 0) {
  testing::SpecShape shape;
  shape.q_heads = q_heads;
  shape.kv_heads = kv_heads;
  shape.head_dim = head_dim;
  shape.dtype = dtype;
  WorkloadSpec spec = testing::make_spec(shape, {{0, 300}, {70, 33}, {0, 1}}, "blocksparse-test");
  spec.mask.block_sparse = phi3_layout(block_size, 2, 3);
  if (v_head_dim != 0) spec.model.v_head_dim = v_head_dim;
  return generate_batch(spec);
}

// The batch over an fp8 e4m3 cache (the generator's codes and scales), Q of its dtype.
Batch with_fp8_cache(Batch batch, KvScaleGranularity scale = KvScaleGranularity::per_tensor) {
  batch.spec.model.kv_dtype = DType::fp8_e4m3;
  batch.spec.model.kv_scale = scale;
  return generate_batch(batch.spec);
}

Batch decode_batch(int q_heads, int kv_heads, int head_dim, DType dtype = DType::bf16,
                   int block_size = 64) {
  testing::SpecShape shape;
  shape.q_heads = q_heads;
  shape.kv_heads = kv_heads;
  shape.head_dim = head_dim;
  shape.dtype = dtype;
  return sparse_batch(shape, {{300, 1}, {63, 1}, {0, 1}, {1000, 1}}, phi3_layout(block_size, 2, 3));
}

// A random lower-triangular layout over num_blocks blocks for `heads` heads, each block kept with
// probability `density` (rows may be empty; the diagonal too may be dropped).
BlockSparseLayout random_layout(std::mt19937_64& rng, int heads, int num_blocks, int block_size,
                                double density) {
  BlockSparseLayout layout;
  layout.block_size = block_size;
  layout.num_heads = heads;
  layout.num_blocks = num_blocks;
  std::bernoulli_distribution keep(density);
  std::vector<std::vector<int32_t>> cols(static_cast<size_t>(heads));
  layout.crow.assign(size_t(heads) * size_t(num_blocks + 1), 0);
  for (int h = 0; h < heads; ++h) {
    for (int i = 0; i < num_blocks; ++i) {
      for (int j = 0; j <= i; ++j) {
        if (keep(rng)) cols[size_t(h)].push_back(j);
      }
      layout.crow[size_t(h) * size_t(num_blocks + 1) + size_t(i) + 1] =
          int32_t(cols[size_t(h)].size());
    }
    layout.max_nnz = std::max(layout.max_nnz, int(cols[size_t(h)].size()));
  }
  layout.col.assign(size_t(heads) * size_t(layout.max_nnz), -1);
  for (int h = 0; h < heads; ++h) {
    std::copy(cols[size_t(h)].begin(), cols[size_t(h)].end(),
              layout.col.begin() + ptrdiff_t(h) * layout.max_nnz);
  }
  return layout;
}

KernelConfig mma_config(int tile_m, int tile_n, int warps, int stages) {
  return KernelConfig{{"tile_m", tile_m}, {"tile_n", tile_n}, {"warps", warps}, {"stages", stages}};
}

KernelConfig decode_config(int tile_n, int warps, int stages) {
  return KernelConfig{{"tile_n", tile_n}, {"warps", warps}, {"stages", stages}};
}

TEST(BlockSparseTraits, RulesNameTheFirstBrokenConstraint) {
  using namespace blocksparse::sm80_mma;
  EXPECT_EQ(check(128, 64, 64, 4, 2), kOk);
  EXPECT_EQ(check(64, 32, 32, 1, 3), kOk);
  EXPECT_EQ(check(256, 64, 64, 4, 2), kHeadDim);  // flash_fwd runs 256
  EXPECT_EQ(check(112, 64, 64, 4, 2), kHeadDim);
  EXPECT_EQ(check(80, 64, 64, 4, 2), kOk);
  EXPECT_EQ(check(96, 64, 64, 4, 2), kOk);
  EXPECT_EQ(check(192, 64, 64, 4, 2), kOk);
  EXPECT_EQ(check(192, 128, 64, 64, 4, 2), kOk);  // V narrower than Q/K
  EXPECT_EQ(check(128, 64, 64, 64, 4, 2), kOk);
  EXPECT_EQ(check(128, 192, 64, 64, 4, 2), kVHeadDim);  // V wider than K
  EXPECT_EQ(check(128, 112, 64, 64, 4, 2), kVHeadDim);
  // A narrower V is held to the register rule of V as wide as K (32-row warps at (192, 128)
  // spilled under its own estimate).
  EXPECT_EQ(check(192, 128, 32, 32, 1, 2), kRegisters);
  EXPECT_EQ(check(192, 128, 64, 32, 2, 3), kRegisters);
  EXPECT_EQ(check(192, 128, 64, 64, 4, 2), check(192, 64, 64, 4, 2));
  EXPECT_EQ(check(128, 64, 64, 3, 2), kWarps);
  EXPECT_EQ(check(128, 64, 64, 4, 5), kStages);
  EXPECT_EQ(check(128, 64, 64, 4, 1), kStages);  // flash_fwd.sm80_mma's split pipeline: not here
  EXPECT_EQ(check(128, 128, 64, 4, 1), kStages);
  EXPECT_EQ(check(128, 64, 64, 8, 2), kTileM);
  EXPECT_EQ(check(128, 64, 48, 4, 2), kTileN);
  EXPECT_EQ(check(128, 128, 64, 4, 2), kRegisters);
  EXPECT_EQ(check_block(64, 64, 64), kOk);
  EXPECT_EQ(check_block(64, 32, 16), kOk);
  EXPECT_EQ(check_block(64, 128, 64), kBlockSize);  // a query tile over two block rows
  EXPECT_EQ(check_block(64, 64, 128), kBlockSize);  // a key tile over two block columns
  EXPECT_EQ(check_block(48, 16, 16), kOk);
  // flash_fwd.sm80_mma's rows: swizzled (unpadded) at head_dim 128, padded at 64.
  EXPECT_EQ(shared_bytes(128, 64, 64, 2), (64 + 2 * 2 * 64) * 128 * 2);
  EXPECT_EQ(shared_bytes(64, 64, 64, 2), (64 + 2 * 2 * 64) * 72 * 2);
  // An fp8 cache: the stages hold codes (a byte each), one converted 16-bit K and V tile follows;
  // no split pipeline; flash_fwd.sm80_mma's fp8 register limit on this family's estimate.
  EXPECT_EQ(shared_bytes(128, 128, 64, 64, 2, true), 64 * 128 * 2 + 2 * 64 * 256 + 64 * 256 * 2);
  EXPECT_EQ(shared_bytes(64, 64, 64, 64, 3, true), 64 * 72 * 2 + 3 * 64 * 128 + 64 * 144 * 2);
  EXPECT_EQ(check(128, 128, 64, 64, 4, 2, true), kOk);
  EXPECT_EQ(check(192, 128, 64, 32, 4, 4, true), kOk);
  EXPECT_EQ(check(128, 128, 64, 64, 4, 1, true), kStages);
  EXPECT_EQ(max_register_estimate(true), flash_fwd::sm80_mma::kMaxRegisterEstimateKvFp8);
  EXPECT_EQ(max_register_estimate(false), kMaxRegisterEstimate);
  // 32-row warps over 32 keys at head dim 128: estimate 228, under 255, over the fp8 limit.
  EXPECT_EQ(register_estimate(128, 64, 32, 2), 228);
  EXPECT_EQ(check(128, 128, 64, 32, 2, 2, false), kOk);
  EXPECT_EQ(check(128, 128, 64, 32, 2, 2, true), kRegisters);

  using namespace blocksparse::sm80_mma_decode;
  EXPECT_EQ(blocksparse::sm80_mma_decode::check(128, 64, 4, 3), blocksparse::sm80_mma_decode::kOk);
  EXPECT_EQ(blocksparse::sm80_mma_decode::check(64, 16, 1, 2), blocksparse::sm80_mma_decode::kOk);
  EXPECT_EQ(blocksparse::sm80_mma_decode::check(256, 64, 4, 3),
            blocksparse::sm80_mma_decode::kHeadDim);
  EXPECT_EQ(blocksparse::sm80_mma_decode::check(72, 64, 4, 3),
            blocksparse::sm80_mma_decode::kHeadDim);
  // 80, 96, 192: rows copied by a power-of-two group of lanes, some idle.
  for (int d : {80, 96, 192}) {
    EXPECT_EQ(blocksparse::sm80_mma_decode::check(d, 64, 4, 3), blocksparse::sm80_mma_decode::kOk)
        << d;
  }
  EXPECT_EQ(copy_lanes(64), 8);
  EXPECT_EQ(copy_lanes(80), 16);
  EXPECT_EQ(copy_lanes(96), 16);
  EXPECT_EQ(copy_lanes(128), 16);
  EXPECT_EQ(copy_lanes(192), 32);
  EXPECT_EQ(blocksparse::sm80_mma_decode::check(128, 64, 3, 3),
            blocksparse::sm80_mma_decode::kWarps);
  EXPECT_EQ(blocksparse::sm80_mma_decode::check(128, 64, 4, 1),
            blocksparse::sm80_mma_decode::kStages);
  EXPECT_EQ(blocksparse::sm80_mma_decode::check(128, 32, 4, 2),
            blocksparse::sm80_mma_decode::kTileN);  // 8 per warp
  EXPECT_EQ(blocksparse::sm80_mma_decode::check(128, 256, 4, 2),
            blocksparse::sm80_mma_decode::kTileN);
  EXPECT_EQ(blocksparse::sm80_mma_decode::check(128, 128, 1, 4),
            blocksparse::sm80_mma_decode::kSharedMemory);
  EXPECT_EQ(blocksparse::sm80_mma_decode::check_block(64, 128),
            blocksparse::sm80_mma_decode::kBlockSize);
  // fp8: codes in the stages, then the converted K and V tile, the merge reusing both.
  EXPECT_EQ(stage_bytes(128, 64, true), 2 * 64 * 128);
  EXPECT_EQ(converted_bytes(128, 64, true), 2 * 64 * 136 * 2);
  EXPECT_EQ(converted_bytes(128, 64, false), 0);
  EXPECT_EQ(blocksparse::sm80_mma_decode::shared_bytes(128, 64, 4, 3, true),
            3 * 2 * 64 * 128 + 2 * 64 * 136 * 2 + 16 * 136 * 2);
  EXPECT_EQ(blocksparse::sm80_mma_decode::check(128, 64, 4, 3, true),
            blocksparse::sm80_mma_decode::kOk);
  EXPECT_EQ(blocksparse::sm80_mma_decode::check(128, 64, 4, 1, true),
            blocksparse::sm80_mma_decode::kStages);
  // The fp8 register limit: 64 keys per warp at head dim 192 (estimate 248) spilled.
  EXPECT_EQ(blocksparse::sm80_mma_decode::register_estimate(192, 64, 1), 248);
  EXPECT_EQ(blocksparse::sm80_mma_decode::check(192, 64, 1, 2, false),
            blocksparse::sm80_mma_decode::kOk);
  EXPECT_EQ(blocksparse::sm80_mma_decode::check(192, 64, 1, 2, true),
            blocksparse::sm80_mma_decode::kRegisters);
  EXPECT_EQ(blocksparse::sm80_mma_decode::check(192, 64, 4, 2, true),
            blocksparse::sm80_mma_decode::kOk);
  // The merge area fits in the stage area or enlarges it.
  EXPECT_EQ(blocksparse::sm80_mma_decode::shared_bytes(128, 16, 1, 2),
            blocksparse::sm80_mma_decode::merge_bytes(128, 1) > 2 * stage_bytes(128, 16)
                ? merge_bytes(128, 1) + 16 * 136 * 2
                : 2 * stage_bytes(128, 16) + 16 * 136 * 2);
}

TEST(BlockSparseGating, SpaceRefusalsMirrorTheTraitsWithReasons) {
  const Registry registry = make_registry();
  const Variant& mma = *registry.find("blocksparse.sm80_mma");
  const Variant& decode = *registry.find("blocksparse.sm80_mma_decode");
  int accepted = 0, refused = 0;
  for (int head_dim : {64, 128}) {
    for (int block : {16, 32, 64, 128}) {
      const Batch prefill = prefill_batch(8, 2, head_dim, DType::bf16, block);
      const Batch dec = decode_batch(8, 2, head_dim, DType::bf16, block);
      for (const Target& target : {hopper(), ampere()}) {
        for (const KernelConfig& c : testing::space_configs(mma, prefill, target)) {
          const int m = int(c.get("tile_m")), n = int(c.get("tile_n")), w = int(c.get("warps")),
                    s = int(c.get("stages"));
          EXPECT_EQ(block % m, 0);  // the space lists only tiles that divide the block
          EXPECT_EQ(block % n, 0);
          int rule = blocksparse::sm80_mma::check(head_dim, m, n, w, s);
          if (rule == blocksparse::sm80_mma::kOk)
            rule = blocksparse::sm80_mma::check_block(block, m, n);
          const bool fits =
              blocksparse::sm80_mma::shared_bytes(head_dim, m, n, s) <= target.max_shared_per_block;
          const Support support = mma.check(prefill, c, target);
          EXPECT_EQ(support.ok, rule == blocksparse::sm80_mma::kOk && fits)
              << c.key() << " " << block;
          support.ok ? ++accepted : ++refused;
          if (!support.ok) {
            EXPECT_FALSE(support.reason.empty());
          }
        }
        for (const KernelConfig& c : testing::space_configs(decode, dec, target)) {
          const int n = int(c.get("tile_n")), w = int(c.get("warps")), s = int(c.get("stages"));
          const int rule = blocksparse::sm80_mma_decode::check(head_dim, n, w, s);
          const bool fits = blocksparse::sm80_mma_decode::shared_bytes(head_dim, n, w, s) <=
                            target.max_shared_per_block;
          const Support support = decode.check(dec, c, target);
          EXPECT_EQ(support.ok, rule == blocksparse::sm80_mma_decode::kOk && fits)
              << c.key() << " " << block;
          support.ok ? ++accepted : ++refused;
        }
      }
    }
  }
  EXPECT_GT(accepted, 50);
  EXPECT_GT(refused, 0);
  // Off-space tiles are refused with the block rule's reason.
  const Batch batch = prefill_batch(8, 2, 128);
  const Support wide = mma.check(batch, mma_config(128, 64, 8, 2), hopper());
  EXPECT_FALSE(wide.ok);
  EXPECT_NE(wide.reason.find("divide the layout's block size 64"), std::string::npos)
      << wide.reason;
  const Support wide_n = decode.check(decode_batch(8, 2, 128), decode_config(128, 4, 2), hopper());
  EXPECT_NE(wide_n.reason.find("divide the layout's block size"), std::string::npos)
      << wide_n.reason;
  KernelConfig extra = mma_config(64, 64, 4, 2);
  extra.set("num_splits", 0);
  EXPECT_FALSE(mma.check(batch, extra, hopper()).ok);
}

// Head dims 80, 96 and 192 and a V narrower than Q/K: blocksparse.sm80_mma (not the decode
// variant) accepts exactly what its traits accept, names the rule it refuses by, and its defaults
// are accepted on every target; the kernel's name carries a narrower V's width.
TEST(BlockSparseGating, NewHeadDimsAndNarrowVFollowTheTraits) {
  const Registry registry = make_registry();
  const Variant& mma = *registry.find("blocksparse.sm80_mma");
  DeviceInfo small = {};  // sm_86: 99 KiB per block
  small.cc_major = 8;
  small.cc_minor = 6;
  small.max_shared_per_block_optin = 99 * 1024;
  int accepted = 0;
  for (const auto& [head_dim, v_head_dim] :
       std::vector<std::pair<int, int>>{{80, 80}, {96, 96}, {192, 192}, {192, 128}, {128, 64}}) {
    for (int block : {32, 64}) {
      const Batch prefill = prefill_batch(8, 2, head_dim, DType::bf16, block, v_head_dim);
      for (const Target& target : {hopper(), ampere()}) {
        for (const KernelConfig& c : testing::space_configs(mma, prefill, target)) {
          const int m = int(c.get("tile_m")), n = int(c.get("tile_n")), w = int(c.get("warps")),
                    s = int(c.get("stages"));
          int rule = blocksparse::sm80_mma::check(head_dim, v_head_dim, m, n, w, s);
          if (rule == blocksparse::sm80_mma::kOk)
            rule = blocksparse::sm80_mma::check_block(block, m, n);
          const bool fits = blocksparse::sm80_mma::shared_bytes(head_dim, v_head_dim, m, n, s) <=
                            target.max_shared_per_block;
          const Support support = mma.check(prefill, c, target);
          EXPECT_EQ(support.ok, rule == blocksparse::sm80_mma::kOk && fits)
              << c.key() << " d" << head_dim << "x" << v_head_dim << " " << block << ": "
              << support.reason;
          if (support.ok) ++accepted;
        }
        for (const Target& t : {target, Target::cuda(small)}) {
          const Support d = mma.check(prefill, mma.default_config(prefill, t), t);
          EXPECT_TRUE(d.ok) << head_dim << "x" << v_head_dim << " " << t.arch << ": " << d.reason;
        }
      }
    }
  }
  EXPECT_GT(accepted, 50);
  const Batch narrow = prefill_batch(8, 2, 192, DType::bf16, 64, 128);
  EXPECT_EQ(mma.programs(narrow, mma_config(64, 32, 2, 3), hopper()).front().kernels.at(0),
            "attn::blocksparse_sm80_mma<0, 192, 64, 32, 2, 3, true, 128>");
  const Support wide = mma.check(prefill_batch(8, 2, 256), mma_config(64, 64, 4, 2), hopper());
  EXPECT_FALSE(wide.ok);
}

TEST(BlockSparseGating, DefaultsAreSupportedAndNamed) {
  const Registry registry = make_registry();
  const Variant& mma = *registry.find("blocksparse.sm80_mma");
  const Variant& decode = *registry.find("blocksparse.sm80_mma_decode");
  DeviceInfo small = {};  // sm_86: 99 KiB per block
  small.cc_major = 8;
  small.cc_minor = 6;
  small.max_shared_per_block_optin = 99 * 1024;
  for (int head_dim : {64, 128}) {
    for (DType dtype : {DType::bf16, DType::fp16}) {
      for (int block : {16, 32, 64, 128, 256}) {
        for (const Target& target : {hopper(), ampere(), Target::cuda(small)}) {
          const Batch prefill = prefill_batch(8, 2, head_dim, dtype, block);
          const Support a = mma.check(prefill, mma.default_config(prefill, target), target);
          EXPECT_TRUE(a.ok) << head_dim << " " << block << " " << target.arch << ": " << a.reason;
          const Batch dec = decode_batch(8, 2, head_dim, dtype, block);
          const Support b = decode.check(dec, decode.default_config(dec, target), target);
          EXPECT_TRUE(b.ok) << head_dim << " " << block << " " << target.arch << ": " << b.reason;
        }
      }
    }
  }
  const Batch prefill = prefill_batch(32, 8, 128);
  EXPECT_EQ(mma.full_name(mma.default_config(prefill, hopper())),
            "blocksparse.sm80_mma.st2.tm64.tn64.w4");
  const Batch dec = decode_batch(32, 8, 128);
  EXPECT_EQ(decode.full_name(decode.default_config(dec, hopper())),
            "blocksparse.sm80_mma_decode.st3.tn64.w4");
  const JitProgram program = mma.programs(prefill, mma_config(64, 32, 2, 3), hopper()).front();
  EXPECT_EQ(program.kernels.at(0), "attn::blocksparse_sm80_mma<0, 128, 64, 32, 2, 3, true>");
  EXPECT_EQ(program.kernels.at(1), "attn::flash_fwd_gather_kv");
  const JitProgram d = decode.programs(dec, decode_config(32, 2, 4), ampere()).front();
  EXPECT_EQ(d.kernels.at(0), "attn::blocksparse_sm80_mma_decode<0, 128, 32, 2, 4>");
  EXPECT_EQ(d.arch, "sm_80");
}

TEST(BlockSparseGating, FeaturesAreSupportedOrRefusedWithAReason) {
  const Registry registry = make_registry();
  const Target gpu = hopper();
  struct Feature {
    std::string name;
    std::string reason_mentions;  // empty: supported
    std::function<void(Batch&)> apply;
  };
  const std::vector<Feature> features = {
      {"plain", "", [](Batch&) {}},
      {"non-causal", "", [](Batch& b) { b.causal = false; }},
      {"hnd", "", [](Batch& b) { b.spec.kv_cache.layout = KvLayout::hnd; }},
      {"fp16", "", [](Batch& b) { b.dtype = b.kv_dtype = b.spec.model.dtype = DType::fp16; }},
      {"no layout", "dense causal attention", [](Batch& b) { b.block_sparse.reset(); }},
      {"soft-cap", "soft-cap", [](Batch& b) { b.logits_soft_cap = 30.0f; }},
      {"sliding window", "sliding window", [](Batch& b) { b.sliding_window = 16; }},
      {"sinks", "sinks", [](Batch& b) { b.sink_logits.assign(8, 1.0f); }},
      {"explicit mask", "explicit", [](Batch& b) { b.explicit_mask = ExplicitMask{}; }},
      // fp8 e4m3 caches, per-tensor and per-head scales: the sm80 variants and the reference.
      {"fp8 KV", "",
       [](Batch& b) {
         b.kv_dtype = DType::fp8_e4m3;
         b.k_scales = {0.01f};
         b.v_scales = {0.02f};
       }},
      {"fp8 KV per head", "",
       [](Batch& b) {
         b.kv_dtype = DType::fp8_e4m3;
         b.spec.model.kv_scale = KvScaleGranularity::per_head;
         b.k_scales = {0.01f, 0.03f};
         b.v_scales = {0.02f, 0.04f};
       }},
      {"fp8 KV fp16 queries", "",
       [](Batch& b) {
         b.dtype = b.spec.model.dtype = DType::fp16;
         b.kv_dtype = DType::fp8_e4m3;
         b.k_scales = {0.01f};
         b.v_scales = {0.02f};
       }},
  };
  for (const bool decode_shape : {false, true}) {
    const Batch plain = decode_shape ? decode_batch(8, 2, 128) : prefill_batch(8, 2, 128);
    for (const char* name : {"blocksparse.sm80_mma", "blocksparse.sm80_mma_decode"}) {
      const Variant& variant = *registry.find(name);
      const bool wrong_shape = !decode_shape && std::string(name) == "blocksparse.sm80_mma_decode";
      for (const Feature& feature : features) {
        Batch batch = plain;
        feature.apply(batch);
        const Support s = variant.check(batch, variant.default_config(batch, gpu), gpu);
        if (feature.reason_mentions.empty() && !wrong_shape) {
          EXPECT_TRUE(s.ok) << name << " " << feature.name << ": " << s.reason;
        } else {
          EXPECT_FALSE(s.ok) << name << " " << feature.name << " was accepted";
          const std::string want =
              wrong_shape ? "blocksparse.sm80_mma runs prefill" : feature.reason_mentions;
          if (!wrong_shape || feature.reason_mentions.empty()) {
            EXPECT_NE(s.reason.find(want), std::string::npos) << feature.name << ": " << s.reason;
          }
        }
      }
    }
    const Variant& cpu = *registry.find("blocksparse.cpu_reference");
    for (const Feature& feature : features) {
      Batch batch = plain;
      feature.apply(batch);
      EXPECT_EQ(cpu.check(batch, {}, Target::cpu()).ok, feature.reason_mentions.empty())
          << feature.name;
    }
  }
  // GQA: decode holds at most 16 q heads per kv head in the M rows; mma any group.
  const Batch big_group = decode_batch(40, 2, 64);
  const Variant& decode = *registry.find("blocksparse.sm80_mma_decode");
  const Support s = decode.check(big_group, decode.default_config(big_group, gpu), gpu);
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.reason.find("GQA group of 20"), std::string::npos) << s.reason;
  const Variant& mma = *registry.find("blocksparse.sm80_mma");
  EXPECT_TRUE(mma.check(big_group, mma.default_config(big_group, gpu), gpu).ok);
}

// What a row of blocksparse.sm80_mma's tile sees: the kernel's element mask, applied only on tiles
// of the diagonal block; tiles of earlier kept blocks are seen whole.
bool mma_kernel_sees(bool causal, int64_t kv_len, int64_t pos, int64_t key, int64_t diagonal_key0,
                     int tile_n, int64_t key0) {
  if (key0 < diagonal_key0) return true;
  (void)tile_n;
  return key < kv_len && (!causal || key <= pos);
}

// Random batches (contexts, lengths off every tile, GQA) and random layouts (the parameter family
// with random block sizes, and random lower-triangular ones with empty rows): for every config
// tile size pair, every query row and head, the keys the kernel's walk and mask let through are
// exactly key_visible's, each at most once, and the schedule lists every new token's tile once.
TEST(BlockSparseWalk, MmaTileWalkVisitsExactlyTheVisibleKeys) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 40; ++trial) {
    testing::SpecShape shape;
    shape.kv_heads = std::uniform_int_distribution<int>(1, 2)(rng);
    shape.q_heads = shape.kv_heads * std::uniform_int_distribution<int>(1, 3)(rng);
    const int block = std::vector<int>{16, 32, 64, 128}[size_t(trial % 4)];
    std::vector<std::pair<int64_t, int64_t>> sequences;
    const int seqs = std::uniform_int_distribution<int>(1, 3)(rng);
    for (int s = 0; s < seqs; ++s) {
      sequences.push_back({std::vector<int64_t>{0, 0, 1, 17, 64, 100, 129}[rng() % 7],
                           std::vector<int64_t>{1, 2, 15, 63, 65, 100, 200, 257}[rng() % 8]});
    }
    // Workloads with a layout are causal (validation); the kernel also runs non-causal batches,
    // so some trials switch causality off after generation.
    const bool causal = trial % 5 != 0;
    Batch batch = sparse_batch(
        shape, sequences,
        phi3_layout(block, int(1 + rng() % 4), int(1 + rng() % 4), int(rng() % 3), rng() % 4 == 0));
    batch.causal = causal;
    if (trial % 2 == 1) {
      batch.block_sparse = random_layout(rng, shape.q_heads, batch.block_sparse->num_blocks, block,
                                         0.1 + 0.2 * double(rng() % 4));
    }
    const BlockSparseLayout& layout = *batch.block_sparse;
    for (int tile_m : {16, 32, 64, 128}) {
      for (int tile_n : {16, 32, 64, 128}) {
        if (block % tile_m != 0 || block % tile_n != 0) continue;
        const std::vector<int32_t> schedule = blocksparse_mma_schedule(batch, tile_m, tile_n);
        std::set<std::pair<int, int64_t>> rows_covered;  // (seq, query index)
        for (size_t c = 0; c < schedule.size() / 2; ++c) {
          const int s = schedule[2 * c];
          const int64_t pos0 = int64_t(schedule[2 * c + 1]) * tile_m;
          const int64_t kv_len = batch.kv_lens[size_t(s)];
          const int64_t context = batch.context_lens[size_t(s)];
          const int64_t last = std::min(pos0 + tile_m, kv_len) - 1;
          const int q_block = int(pos0 / block);
          for (int h = 0; h < layout.num_heads; ++h) {
            const blocksparse::sm80_mma::TileWalk walk = blocksparse::sm80_mma::tile_walk(
                layout.crow.data() + size_t(h) * size_t(layout.num_blocks + 1) + size_t(q_block),
                layout.col.data() + size_t(h) * size_t(layout.max_nnz), q_block, block, tile_n,
                int(causal ? last + 1 : kv_len));
            for (int64_t pos = std::max(pos0, context); pos <= last; ++pos) {
              const int64_t q_index = pos - context;
              if (h == 0) {
                EXPECT_TRUE(rows_covered.insert({s, q_index}).second) << "row listed twice";
              }
              std::set<int64_t> seen;
              int64_t previous_key0 = -1;
              for (int n = 0; n < walk.tiles; ++n) {
                const int64_t key0 = blocksparse::sm80_mma::tile_key0(walk, n, tile_n);
                EXPECT_GT(key0, previous_key0);  // increasing, so no key twice
                previous_key0 = key0;
                for (int64_t key = key0; key < key0 + tile_n; ++key) {
                  if (mma_kernel_sees(causal, kv_len, pos, key, int64_t(q_block) * block, tile_n,
                                      key0)) {
                    EXPECT_TRUE(seen.insert(key).second);
                  }
                }
              }
              std::set<int64_t> visible;
              for (int64_t key = 0; key < kv_len; ++key) {
                if (key_visible(batch, s, h, q_index, key)) visible.insert(key);
              }
              ASSERT_EQ(seen, visible) << "trial " << trial << " tile " << tile_m << "x" << tile_n
                                       << " seq " << s << " pos " << pos << " head " << h;
            }
          }
        }
        EXPECT_EQ(int64_t(rows_covered.size()), batch.total_q);
      }
    }
  }
}

// blocksparse.sm80_mma_decode's tile list: per (sequence, kv head) CTA and q head of the group, the
// keys of the tiles whose bit is set, below kv_len, are exactly key_visible's; every CTA once.
TEST(BlockSparseWalk, DecodePlanListsExactlyTheVisibleKeysPerHead) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 30; ++trial) {
    testing::SpecShape shape;
    shape.kv_heads = std::uniform_int_distribution<int>(1, 3)(rng);
    shape.q_heads = shape.kv_heads * std::vector<int>{1, 2, 4, 5, 16}[rng() % 5];
    const int block = std::vector<int>{16, 32, 64, 128}[size_t(trial % 4)];
    std::vector<int64_t> contexts;
    for (int s = 0; s < 4; ++s) contexts.push_back(int64_t(rng() % 700));
    WorkloadSpec spec = testing::make_decode_spec(shape, contexts);
    spec.mask.block_sparse =
        phi3_layout(block, int(1 + rng() % 3), int(1 + rng() % 5), int(rng() % 3), rng() % 5 == 0);
    Batch batch = generate_batch(spec);
    if (trial % 3 == 2) {
      batch.block_sparse =
          random_layout(rng, shape.q_heads, batch.block_sparse->num_blocks, block, 0.3);
    }
    const int group = batch.spec.group_size();
    for (int tile_n : {16, 32, 64, 128}) {
      if (block % tile_n != 0) continue;
      const BlockSparseDecodePlan plan = blocksparse_decode_plan(batch, tile_n);
      ASSERT_EQ(plan.ctas.size(), size_t(2 * batch.num_seqs * shape.kv_heads));
      ASSERT_EQ(plan.entry_begin.size(), plan.ctas.size() / 2 + 1);
      std::set<std::pair<int, int>> ctas;
      for (size_t c = 0; c < plan.ctas.size() / 2; ++c) {
        const int s = plan.ctas[2 * c], g = plan.ctas[2 * c + 1];
        EXPECT_TRUE(ctas.insert({s, g}).second);
        const int64_t kv_len = batch.kv_lens[size_t(s)];
        for (int r = 0; r < group; ++r) {
          std::set<int64_t> seen, visible;
          for (int32_t e = plan.entry_begin[c]; e < plan.entry_begin[c + 1]; ++e) {
            const int32_t key0 = plan.entries[2 * size_t(e)];
            const int32_t heads = plan.entries[2 * size_t(e) + 1];
            EXPECT_NE(heads, 0);
            EXPECT_LT(key0, kv_len);
            EXPECT_EQ(key0 / block, (key0 + tile_n - 1) / block);  // inside one block
            if (!((heads >> r) & 1)) continue;
            for (int64_t key = key0; key < std::min<int64_t>(kv_len, key0 + tile_n); ++key)
              EXPECT_TRUE(seen.insert(key).second);
          }
          for (int64_t key = 0; key < kv_len; ++key) {
            if (key_visible(batch, s, g * group + r, 0, key)) visible.insert(key);
          }
          ASSERT_EQ(seen, visible) << "trial " << trial << " seq " << s << " head " << g * group + r
                                   << " tile " << tile_n;
        }
      }
    }
  }
}

// The work model: FLOPs from visible_pairs; K/V bytes of only the kept blocks (per kv head, the
// union over its group), which a layout that keeps everything turns into the dense count.
TEST(BlockSparseWork, CountsOnlyVisibleBlocks) {
  testing::SpecShape shape;
  shape.q_heads = 8;
  shape.kv_heads = 2;
  shape.head_dim = 128;
  const std::vector<std::pair<int64_t, int64_t>> sequences = {{0, 1000}, {200, 300}};
  const Batch dense = sparse_batch(shape, sequences, phi3_layout(64, 1000, 1));
  // Homogeneous heads: each kv head reads one pattern. With heads sliding by one block and a
  // stride of 4, the 4 q heads of a group together keep every column: K/V are read whole.
  const Batch sparse = sparse_batch(shape, sequences, phi3_layout(64, 2, 4, 1, true));
  const Batch sliding = sparse_batch(shape, sequences, phi3_layout(64, 2, 4, 1, false));
  const Work d = blocksparse_work(dense), s = blocksparse_work(sparse);
  EXPECT_DOUBLE_EQ(blocksparse_work(sliding).bytes, d.bytes);
  EXPECT_LT(blocksparse_work(sliding).flops, 0.6 * d.flops);
  const double element = 2.0;
  const double q_out = 2.0 * 1300 * 8 * 128 * element;
  const double kv_all = 2.0 * (1000 + 500) * 2 * 128 * element;
  EXPECT_DOUBLE_EQ(d.bytes, q_out + kv_all);
  EXPECT_DOUBLE_EQ(d.flops, 4.0 * 128 * double(visible_pairs(dense)));
  EXPECT_DOUBLE_EQ(s.flops, 4.0 * 128 * double(visible_pairs(sparse)));
  EXPECT_LT(s.flops, 0.6 * d.flops);
  EXPECT_LT(s.bytes, d.bytes);
  EXPECT_GT(s.bytes, q_out);
  // One decode token at the end of a 1000-token sequence, local 2 blocks, homo heads, stride 1000:
  // only the last two blocks (block 15: keys 960..999, block 14: 896..959) are read.
  testing::SpecShape one = shape;
  one.q_heads = one.kv_heads = 1;
  WorkloadSpec spec = testing::make_decode_spec(one, {999});
  spec.mask.block_sparse = phi3_layout(64, 2, 1000, 1, true);
  const Batch decode = generate_batch(spec);
  EXPECT_DOUBLE_EQ(blocksparse_work(decode).bytes,
                   2.0 * 128 * element + 2.0 * (40 + 64) * 128 * element);
}

// The reference variant through the registry equals the independent dense oracle (which applies
// key_visible to values computed from the data rule) on a small block-sparse batch.
TEST(BlockSparseCpuReference, MatchesTheDenseOracle) {
  testing::SpecShape shape;
  shape.q_heads = 4;
  shape.kv_heads = 2;
  shape.head_dim = 64;
  shape.page_size = 5;
  const Batch batch = sparse_batch(shape, {{0, 70}, {37, 20}}, phi3_layout(16, 1, 3));
  ASSERT_EQ(batch.dtype, DType::bf16);
  const std::vector<float> expected =
      testing::expect_cpu_reference_matches_oracle(batch, size_t(batch.total_q) * 4 * 64);
  ASSERT_FALSE(expected.empty());
  int zero_rows = 0;
  for (size_t i = 0; i < expected.size(); i += 64) zero_rows += int(expected[i] == 0.0f);
  EXPECT_LT(zero_rows, int(expected.size() / 64));
}

// NVRTC compiles a seeded sample of the configs each variant accepts (each default included) for
// sm_80 and sm_90a, head dims 64 and 128 (and for blocksparse.sm80_mma 80, 96, 192 and a narrower
// V), causal and not, 16-bit and fp8 caches (with an fp8 cache also the accepted config of the
// largest register estimate), and ptxas reports no spills.
// ATTN_TEST_EXHAUSTIVE=1: all of them (over 16-bit caches 318 kernels over both archs: 168 causal
// and 78 non-causal mma, 72 decode; no spills, at most 244 registers with CUDA 13.0; the fp8
// batches' configs not yet counted exhaustively).
TEST(BlockSparseCompile, AcceptedConfigsCompileForSm80AndSm90aWithoutSpills) {
  const fs::path dir =
      fs::temp_directory_path() /
      ("attn-blocksparse-jit-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  fs::remove_all(dir);
  JitCompiler jit(JitOptions{dir.string(), /*use_cache=*/false});
  const Registry registry = make_registry();
  const bool exhaustive = std::getenv("ATTN_TEST_EXHAUSTIVE") != nullptr;
  std::mt19937_64 rng(9);
  struct Job {
    std::string what;
    std::future<CompiledProgram> compiled;
  };
  std::vector<Job> jobs;
  std::vector<Batch> batches;
  batches.reserve(32);
  for (int head_dim : {64, 128}) {
    const DType dtype = head_dim == 64 ? DType::fp16 : DType::bf16;
    batches.push_back(prefill_batch(8, 2, head_dim, dtype));
    batches.push_back(decode_batch(8, 2, head_dim, dtype));
  }
  batches.push_back(prefill_batch(8, 2, 128, DType::fp16));
  batches.back().causal = false;  // the CAUSAL = false instantiation
  // Head dims 80, 96 and 192 and a V narrower than Q/K (blocksparse.sm80_mma only).
  for (const auto& [head_dim, v_head_dim] :
       std::vector<std::pair<int, int>>{{80, 80}, {96, 96}, {192, 192}, {192, 128}, {128, 64}}) {
    const DType dtype = head_dim == 96 || v_head_dim == 128 ? DType::fp16 : DType::bf16;
    batches.push_back(prefill_batch(8, 2, head_dim, dtype, 64, v_head_dim));
  }
  // fp8 caches: per-tensor and per-head scales, bf16 and fp16 queries, every head dim.
  for (const auto& [head_dim, v_head_dim] : std::vector<std::pair<int, int>>{
           {64, 64}, {80, 80}, {96, 96}, {128, 128}, {192, 192}, {192, 128}}) {
    const DType dtype = head_dim % 64 == 0 ? DType::bf16 : DType::fp16;
    const KvScaleGranularity scale =
        head_dim == 128 ? KvScaleGranularity::per_head : KvScaleGranularity::per_tensor;
    batches.push_back(with_fp8_cache(prefill_batch(8, 2, head_dim, dtype, 64, v_head_dim), scale));
    // Blocks of 128: the decode variant's 128-key tiles over one warp are in its space.
    if (head_dim == v_head_dim)
      batches.push_back(with_fp8_cache(decode_batch(8, 2, head_dim, dtype, 128), scale));
  }
  for (const Batch& batch : batches) {
    const Variant& variant = *registry.find(batch.decode_only() ? "blocksparse.sm80_mma_decode"
                                                                : "blocksparse.sm80_mma");
    for (const Target& target : {ampere(), hopper()}) {
      std::vector<KernelConfig> accepted;
      for (const KernelConfig& config : testing::space_configs(variant, batch, target)) {
        if (variant.check(batch, config, target)) accepted.push_back(config);
      }
      ASSERT_FALSE(accepted.empty());
      std::shuffle(accepted.begin(), accepted.end(), rng);
      if (batch.kv_dtype == DType::fp8_e4m3) {
        // The accepted config the register rule estimates highest first, where spills would be.
        const int d = batch.spec.model.head_dim;
        auto estimate = [&](const KernelConfig& c) {
          return batch.decode_only()
                     ? blocksparse::sm80_mma_decode::register_estimate(d, int(c.get("tile_n")),
                                                                       int(c.get("warps")))
                     : blocksparse::sm80_mma::register_estimate(
                           d, int(c.get("tile_m")), int(c.get("tile_n")), int(c.get("warps")));
        };
        std::stable_sort(accepted.begin(), accepted.end(),
                         [&](const KernelConfig& a, const KernelConfig& b) {
                           return estimate(a) > estimate(b);
                         });
      }
      accepted.insert(accepted.begin(), variant.default_config(batch, target));
      const size_t take = exhaustive ? accepted.size() : std::min<size_t>(2, accepted.size());
      for (size_t i = 0; i < take; ++i) {
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
