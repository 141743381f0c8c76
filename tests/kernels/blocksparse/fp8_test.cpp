// The blocksparse family over fp8 e4m3 caches on the CPU: the sm80 variants accept exactly the
// configs their traits accept with an fp8 cache (codes in the stages, the fp8 register limit) and
// say why they refuse the others; their defaults are accepted and their kernels named with the fp8
// argument; blocksparse.sm90_wgmma reads fp8 through the conversion pass in its program; every
// variant's byte count is the fp8
// rows plus the scales; the CPU reference dequantises as the dense oracle does.
#include <gtest/gtest.h>

#include <algorithm>

#include <cmath>

#include "base/dtype.hpp"
#include "kernels/blocksparse/blocksparse_variants.hpp"
#include "kernels/blocksparse/sm80_mma_decode_traits.hpp"
#include "kernels/blocksparse/sm80_mma_traits.hpp"
#include "kernels/reference/paged_attention_reference.hpp"
#include "kernels/registry.hpp"
#include "tests/kernels/blocksparse/cpu_reference_check.hpp"
#include "tests/kernels/every_config_cases.hpp"
#include "tests/target_fixtures.hpp"
#include "tests/test_support.hpp"
#include "workloads/traffic.hpp"

namespace attn {
namespace {

// A block-sparse batch (Phi-3's layout parameters) over a 16-bit or an fp8 cache; decode: one
// query token per sequence.
Batch fp8_sparse_batch(bool decode, int head_dim, DType dtype, bool fp8,
                       KvScaleGranularity scale = KvScaleGranularity::per_tensor,
                       int block_size = 64, int v_head_dim = 0) {
  testing::SpecShape shape;
  shape.q_heads = 8;
  shape.kv_heads = 2;
  shape.head_dim = head_dim;
  shape.dtype = dtype;
  shape.page_size = 16;
  const std::vector<std::pair<int64_t, int64_t>> sequences =
      decode ? std::vector<std::pair<int64_t, int64_t>>{{300, 1}, {63, 1}, {0, 1}, {1000, 1}}
             : std::vector<std::pair<int64_t, int64_t>>{{0, 300}, {70, 33}, {0, 1}};
  WorkloadSpec spec = testing::make_spec(shape, sequences, "blocksparse-fp8");
  BlockSparseSpec layout;
  layout.block_size = block_size;
  layout.local_blocks = 2;
  layout.vertical_stride = 3;
  spec.mask.block_sparse = layout;
  if (v_head_dim != 0) spec.model.v_head_dim = v_head_dim;
  if (fp8) {
    spec.model.kv_dtype = DType::fp8_e4m3;
    spec.model.kv_scale = scale;
  }
  return generate_batch(spec);
}

TEST(BlockSparseFp8Gating, PrefillAcceptsExactlyWhatItsTraitsAcceptWithAnFp8Cache) {
  const Registry registry = make_registry();
  const Variant& mma = *registry.find("blocksparse.sm80_mma");
  int accepted = 0, refused_only_for_fp8 = 0;
  for (const auto& [head_dim, v_head_dim] : std::vector<std::pair<int, int>>{
           {64, 64}, {80, 80}, {96, 96}, {128, 128}, {192, 192}, {192, 128}, {128, 64}}) {
    for (int block : {32, 64}) {
      const Batch batch = fp8_sparse_batch(false, head_dim, DType::bf16, true,
                                           KvScaleGranularity::per_tensor, block, v_head_dim);
      for (const Target& target : {testing::hopper_target(), testing::ampere_target()}) {
        for (const KernelConfig& c : testing::space_configs(mma, batch, target)) {
          const int m = int(c.get("tile_m")), n = int(c.get("tile_n")), w = int(c.get("warps")),
                    s = int(c.get("stages"));
          int rule = blocksparse::sm80_mma::check(head_dim, v_head_dim, m, n, w, s, true);
          if (rule == blocksparse::sm80_mma::kOk)
            rule = blocksparse::sm80_mma::check_block(block, m, n);
          const bool fits = blocksparse::sm80_mma::shared_bytes(
                                head_dim, v_head_dim, m, n, s, true) <= target.max_shared_per_block;
          const Support support = mma.check(batch, c, target);
          EXPECT_EQ(support.ok, rule == blocksparse::sm80_mma::kOk && fits)
              << c.key() << " d" << head_dim << "x" << v_head_dim << ": " << support.reason;
          if (support.ok) {
            ++accepted;
          } else {
            EXPECT_FALSE(support.reason.empty());
          }
          if (rule == blocksparse::sm80_mma::kRegisters &&
              blocksparse::sm80_mma::check(head_dim, v_head_dim, m, n, w, s, false) ==
                  blocksparse::sm80_mma::kOk) {
            ++refused_only_for_fp8;
            EXPECT_NE(
                support.reason.find(
                    "limit " + std::to_string(blocksparse::sm80_mma::max_register_estimate(true))),
                std::string::npos)
                << support.reason;
          }
        }
      }
    }
  }
  EXPECT_GT(accepted, 100);
  EXPECT_GT(refused_only_for_fp8, 0);  // the fp8 register limit refuses what 16-bit accepts
}

TEST(BlockSparseFp8Gating, DecodeAcceptsExactlyWhatItsTraitsAcceptWithAnFp8Cache) {
  const Registry registry = make_registry();
  const Variant& decode = *registry.find("blocksparse.sm80_mma_decode");
  int accepted = 0, refused = 0;
  for (int head_dim : {64, 80, 96, 128, 192}) {
    for (int block : {32, 64, 128}) {
      const Batch batch =
          fp8_sparse_batch(true, head_dim, DType::fp16, true, KvScaleGranularity::per_head, block);
      for (const Target& target : {testing::hopper_target(), testing::ampere_target()}) {
        for (const KernelConfig& c : testing::space_configs(decode, batch, target)) {
          const int n = int(c.get("tile_n")), w = int(c.get("warps")), s = int(c.get("stages"));
          int rule = blocksparse::sm80_mma_decode::check(head_dim, n, w, s, true);
          if (rule == blocksparse::sm80_mma_decode::kOk)
            rule = blocksparse::sm80_mma_decode::check_block(block, n);
          const bool fits = blocksparse::sm80_mma_decode::shared_bytes(head_dim, n, w, s, true) <=
                            target.max_shared_per_block;
          const Support support = decode.check(batch, c, target);
          EXPECT_EQ(support.ok, rule == blocksparse::sm80_mma_decode::kOk && fits)
              << c.key() << " d" << head_dim << ": " << support.reason;
          support.ok ? ++accepted : ++refused;
          if (!support.ok) {
            EXPECT_FALSE(support.reason.empty());
          }
        }
      }
    }
  }
  EXPECT_GT(accepted, 100);
  EXPECT_GT(refused, 0);
}

TEST(BlockSparseFp8Gating, DefaultsAreAcceptedAndKernelsNamedForFp8) {
  const Registry registry = make_registry();
  const Variant& mma = *registry.find("blocksparse.sm80_mma");
  const Variant& decode = *registry.find("blocksparse.sm80_mma_decode");
  DeviceInfo small = {};  // sm_86: 99 KiB per block
  small.cc_major = 8;
  small.cc_minor = 6;
  small.max_shared_per_block_optin = 99 * 1024;
  for (int head_dim : {64, 80, 96, 128, 192}) {
    for (DType dtype : {DType::bf16, DType::fp16}) {
      for (KvScaleGranularity scale :
           {KvScaleGranularity::per_tensor, KvScaleGranularity::per_head}) {
        for (int block : {32, 64, 256}) {
          for (const Target& target :
               {testing::hopper_target(), testing::ampere_target(), Target::cuda(small)}) {
            const Batch prefill = fp8_sparse_batch(false, head_dim, dtype, true, scale, block);
            const Support a = mma.check(prefill, mma.default_config(prefill, target), target);
            EXPECT_TRUE(a.ok) << head_dim << " " << block << " " << target.arch << ": " << a.reason;
            const Batch dec = fp8_sparse_batch(true, head_dim, dtype, true, scale, block);
            const Support b = decode.check(dec, decode.default_config(dec, target), target);
            EXPECT_TRUE(b.ok) << head_dim << " " << block << " " << target.arch << ": " << b.reason;
          }
        }
      }
    }
  }
  const Target hopper = testing::hopper_target();
  // Blocks of 16 leave one prefill config (16 x 16 over one warp): at head dim 192 its estimate
  // (Q in registers) is over the fp8 limit, so it is declined with the register rule's reason.
  const Batch d192 =
      fp8_sparse_batch(false, 192, DType::bf16, true, KvScaleGranularity::per_tensor, 16);
  const Support tight = mma.check(d192, mma.default_config(d192, hopper), hopper);
  EXPECT_FALSE(tight.ok);
  EXPECT_NE(tight.reason.find("too many registers per thread"), std::string::npos) << tight.reason;
  const KernelConfig prefill_config{{"tile_m", 64}, {"tile_n", 32}, {"warps", 4}, {"stages", 3}};
  const Batch prefill = fp8_sparse_batch(false, 128, DType::bf16, true);
  const JitProgram program = mma.programs(prefill, prefill_config, hopper).front();
  EXPECT_EQ(program.kernels.at(0),
            "attn::blocksparse_sm80_mma<0, 128, 64, 32, 4, 3, true, 128, true>");
  EXPECT_NE(program.name.find(".kv_fp8"), std::string::npos) << program.name;
  const Batch narrow =
      fp8_sparse_batch(false, 192, DType::fp16, true, KvScaleGranularity::per_head, 64, 128);
  EXPECT_EQ(mma.programs(narrow, prefill_config, hopper).front().kernels.at(0),
            "attn::blocksparse_sm80_mma<1, 192, 64, 32, 4, 3, true, 128, true>");
  const KernelConfig decode_config{{"tile_n", 32}, {"warps", 2}, {"stages", 4}};
  const Batch dec = fp8_sparse_batch(true, 128, DType::fp16, true);
  const JitProgram d = decode.programs(dec, decode_config, hopper).front();
  EXPECT_EQ(d.kernels.at(0), "attn::blocksparse_sm80_mma_decode<1, 128, 32, 2, 4, true>");
  EXPECT_NE(d.name.find(".kv_fp8"), std::string::npos) << d.name;
  // The 16-bit programs keep their names (and cache keys).
  const Batch dec16 = fp8_sparse_batch(true, 128, DType::fp16, false);
  EXPECT_EQ(decode.programs(dec16, decode_config, hopper).front().kernels.at(0),
            "attn::blocksparse_sm80_mma_decode<1, 128, 32, 2, 4>");
  EXPECT_EQ(decode.programs(dec16, decode_config, hopper).front().name.find(".kv_fp8"),
            std::string::npos);
}

// blocksparse.sm90_wgmma over an fp8 cache: accepted with either scale granularity; its program
// holds the conversion pass beside the gather and the kernel, whose name says the scales; a 16-bit
// cache's program does not.
TEST(BlockSparseFp8Gating, Sm90WgmmaReadsFp8ThroughTheConversionPass) {
  const Registry registry = make_registry();
  const Variant& sm90 = *registry.find("blocksparse.sm90_wgmma");
  const Target hopper = testing::hopper_target();
  for (KvScaleGranularity scale : {KvScaleGranularity::per_tensor, KvScaleGranularity::per_head}) {
    const Batch batch = fp8_sparse_batch(false, 128, DType::bf16, true, scale);
    const KernelConfig config = sm90.default_config(batch, hopper);
    const Support s = sm90.check(batch, config, hopper);
    EXPECT_TRUE(s.ok) << s.reason;
    const JitProgram program = sm90.programs(batch, config, hopper).front();
    ASSERT_EQ(program.kernels.size(), 3u);
    EXPECT_NE(program.kernels[0].find(", true>"), std::string::npos) << program.kernels[0];
    EXPECT_NE(program.kernels[2].find("attn::dequantize_fp8<"), std::string::npos);
    EXPECT_NE(program.name.find(".kv_fp8"), std::string::npos) << program.name;
    const Batch sixteen = fp8_sparse_batch(false, 128, DType::bf16, false);
    const KernelConfig config16 = sm90.default_config(sixteen, hopper);
    EXPECT_TRUE(sm90.check(sixteen, config16, hopper).ok);
    EXPECT_EQ(sm90.programs(sixteen, config16, hopper).front().kernels.size(), 2u);
  }
}

// The bytes each blocksparse variant reports for an fp8 cache are those its kernels read: the
// gather keeps the codes, so the visible K and V rows cost one byte an element (half of the same
// batch over a bf16 cache), plus the 4-byte scales.
TEST(BlockSparseFp8Work, BytesAreTheFp8RowsAndTheScales) {
  const Registry registry = make_registry();
  for (const bool decode : {false, true}) {
    for (KvScaleGranularity scale :
         {KvScaleGranularity::per_tensor, KvScaleGranularity::per_head}) {
      const Batch bf16 = fp8_sparse_batch(decode, 128, DType::bf16, false, scale);
      const Batch fp8 = fp8_sparse_batch(decode, 128, DType::bf16, true, scale);
      const MinimumTraffic rows = minimum_traffic(bf16, KvStorage::contiguous);
      ASSERT_GT(rows.kv_bytes, 0.0);
      const double scales = 4.0 * double(fp8.k_scales.size() + fp8.v_scales.size());
      EXPECT_EQ(scales, scale == KvScaleGranularity::per_head ? 4.0 * 2 * 2 : 4.0 * 2);
      for (const char* name : {"blocksparse.sm80_mma", "blocksparse.sm80_mma_decode",
                               "blocksparse.sm90_wgmma", "blocksparse.cpu_reference"}) {
        const Variant* variant = registry.find(name);
        ASSERT_NE(variant, nullptr) << name;
        const Work sixteen = variant->work(bf16), eight = variant->work(fp8);
        EXPECT_DOUBLE_EQ(eight.bytes, sixteen.bytes - rows.kv_bytes / 2 + scales) << name;
        EXPECT_DOUBLE_EQ(eight.unique_bytes,
                         sixteen.unique_bytes - rows.unique_kv_bytes / 2 + scales)
            << name;
        EXPECT_DOUBLE_EQ(eight.flops, sixteen.flops) << name;
        EXPECT_GT(eight.flops, 0.0) << name;
      }
    }
  }
}

// blocksparse.cpu_reference over an fp8 cache (both scale granularities, bf16 and fp16 queries)
// matches the dense oracle, which reads the same codes times their scales, on the rows the layout
// leaves something to see.
TEST(BlockSparseFp8CpuReference, DequantisesAsTheDenseOracleDoes) {
  for (DType dtype : {DType::bf16, DType::fp16}) {
    for (KvScaleGranularity scale :
         {KvScaleGranularity::per_tensor, KvScaleGranularity::per_head}) {
      for (const bool decode : {false, true}) {
        const Batch batch = fp8_sparse_batch(decode, 64, dtype, true, scale, 16);
        ASSERT_EQ(batch.kv_dtype, DType::fp8_e4m3);
        const std::vector<float> expected =
            testing::expect_cpu_reference_matches_oracle(batch, size_t(batch.total_q) * 8 * 64);
        ASSERT_FALSE(expected.empty());
        const auto nonzero =
            std::count_if(expected.begin(), expected.end(), [](float e) { return e != 0.0f; });
        EXPECT_GT(nonzero, int64_t(expected.size() / 2));
      }
    }
  }
}

}  // namespace
}  // namespace attn
