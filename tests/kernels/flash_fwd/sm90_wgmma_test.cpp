// flash_fwd.sm90_wgmma on the CPU: the traits reject invalid configs with a reason before any
// compile; check() refuses every arch but sm_90a and the batch features the family does not
// define; the index maps the kernel uses (accumulator layout, register A fragments, wgmma
// descriptor offsets over TMA's 128-byte swizzle) agree with a model of the PTX ISA's layouts;
// and every config of the space the traits accept compiles through NVRTC for sm_90a, for every
// head dim and both dtypes, without spills or serialised wgmma.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <future>
#include <iostream>
#include <regex>
#include <set>

#include "kernels/device/device_info.hpp"
#include "kernels/flash_fwd/flash_fwd_variants.hpp"
#include "kernels/flash_fwd/sm90_wgmma_traits.hpp"
#include "kernels/jit/jit_compiler.hpp"
#include "kernels/registry.hpp"
#include "tests/kernels/compile_jobs.hpp"
#include "tests/target_fixtures.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

Target hopper() {
  return testing::hopper_target();
}

// v_head_dim: V's width where narrower than Q and K's (0: as wide).
Batch prefill_batch(int q_heads, int kv_heads, int head_dim, DType dtype = DType::bf16,
                    bool causal = true, int v_head_dim = 0) {
  testing::SpecShape shape;
  shape.q_heads = q_heads;
  shape.kv_heads = kv_heads;
  shape.head_dim = head_dim;
  shape.dtype = dtype;
  WorkloadSpec spec = testing::make_spec(shape, {{0, 100}, {7, 33}, {0, 1}});
  spec.mask.causal = causal;
  if (v_head_dim > 0) spec.model.v_head_dim = v_head_dim;
  return generate_batch(spec);
}

KernelConfig make_config(int tile_m, int tile_n, int stages, int consumers) {
  return KernelConfig{
      {"tile_m", tile_m}, {"tile_n", tile_n}, {"stages", stages}, {"consumers", consumers}};
}

const Variant& sm90_variant(const Registry& registry) {
  const Variant* variant = registry.find("flash_fwd.sm90_wgmma");
  EXPECT_NE(variant, nullptr);
  return *variant;
}

// Every (tile_m, tile_n, stages, consumers) of the variant's space.
std::vector<KernelConfig> space_configs(const Variant& variant, const Batch& batch,
                                        const Target& target) {
  const auto space = variant.space(batch, target);
  EXPECT_EQ(space.size(), 4u);
  std::vector<KernelConfig> out;
  for (int64_t m : space[0].values) {
    for (int64_t n : space[1].values) {
      for (int64_t s : space[2].values) {
        for (int64_t c : space[3].values)
          out.push_back(make_config(int(m), int(n), int(s), int(c)));
      }
    }
  }
  return out;
}

TEST(FlashFwdSm90Traits, RulesNameTheFirstBrokenConstraint) {
  using namespace flash_fwd::sm90_wgmma;
  EXPECT_EQ(check(128, 128, 128, 2, 2), kOk);
  EXPECT_EQ(check(64, 64, 64, 3, 1), kOk);
  EXPECT_EQ(check(256, 128, 64, 2, 2), kOk);
  // Head dims 80, 96 and 192 too, and 192 with a V of 128 (the last argument): no other.
  EXPECT_EQ(check(96, 128, 64, 2, 2), kOk);
  EXPECT_EQ(check(80, 128, 192, 2, 2), kOk);  // 40 O + 96 S + 48 P + overhead <= 240
  EXPECT_EQ(check(192, 128, 112, 2, 2), kOk);
  EXPECT_EQ(check(192, 128, 128, 2, 2), kSharedMemory);
  EXPECT_EQ(check(192, 128, 128, 2, 2, 128), kOk);  // V stages of 128 columns fit
  EXPECT_EQ(check(112, 128, 64, 2, 2), kHeadDim);
  EXPECT_EQ(check(128, 128, 64, 2, 2, 64), kHeadDim);
  EXPECT_EQ(check(256, 128, 64, 2, 2, 128), kHeadDim);
  EXPECT_EQ(check(128, 256, 64, 2, 4), kConsumers);
  EXPECT_EQ(check(128, 64, 64, 2, 0), kConsumers);
  // Three consumers (192 rows) have 160 registers each: 128 keys at head_dim 64 and 80 at 128
  // (estimates 168 and 164, 8 over: ptxas compiled them without a spill), not 144 or 96.
  EXPECT_EQ(check(64, 192, 128, 2, 3), kOk);
  EXPECT_EQ(check(64, 192, 144, 2, 3), kRegisters);
  EXPECT_EQ(check(128, 192, 80, 3, 3), kOk);
  EXPECT_EQ(check(128, 192, 96, 2, 3), kRegisters);
  EXPECT_EQ(check(256, 192, 64, 2, 3), kRegisters);
  EXPECT_EQ(check(64, 128, 128, 2, 3), kTileM);
  EXPECT_EQ(check(128, 128, 64, 2, 1), kTileM);  // one warpgroup owns 64 rows
  EXPECT_EQ(check(128, 64, 64, 2, 2), kTileM);
  // Key tiles: any multiple of 16 from 64 to 256 (FlashAttention-3's 176 and 192 among them),
  // where the registers allow.
  EXPECT_EQ(check(128, 128, 96, 2, 2), kOk);
  EXPECT_EQ(check(64, 128, 192, 2, 2), kOk);
  EXPECT_EQ(check(256, 128, 80, 2, 2), kOk);
  EXPECT_EQ(check(128, 128, 72, 2, 2), kTileN);  // not a whole number of k16 steps of P V
  EXPECT_EQ(check(128, 128, 48, 2, 2), kTileN);
  EXPECT_EQ(check(64, 128, 272, 2, 2), kTileN);      // over wgmma's N of 256
  EXPECT_EQ(check(128, 128, 176, 2, 2), kOk);        // 64 O + 88 S + 44 P + overhead <= 240
  EXPECT_EQ(check(128, 64, 176, 2, 1), kRegisters);  // one consumer keeps a margin of 8
  EXPECT_EQ(check(64, 128, 240, 2, 2), kRegisters);  // 32 O + 120 S + 60 P + overhead > 240
  EXPECT_EQ(check(128, 128, 192, 2, 2), kRegisters);
  EXPECT_EQ(check(128, 128, 256, 2, 2), kSharedMemory);  // before the registers
  EXPECT_EQ(check(128, 128, 64, 1, 2), kStages);
  EXPECT_EQ(check(128, 128, 64, 5, 2), kStages);
  EXPECT_EQ(check(256, 128, 64, 3, 2), kSharedMemory);  // 64 KiB of Q + 6 x 32 KiB
  EXPECT_EQ(check(128, 128, 128, 4, 2), kSharedMemory);
  // head_dim 256 with 128 keys per stage: shared memory refuses it first (64 KiB per K or V
  // stage), and the registers would not fit either (128 O + 64 S + 32 P + overhead > 240).
  EXPECT_EQ(check(256, 64, 128, 2, 1), kSharedMemory);
  EXPECT_GT(register_estimate(256, 128), kConsumerRegisters);
  EXPECT_LE(register_estimate(128, 128), kConsumerRegisters);
  // Shared memory: alignment slack, two Q buffers, stages x (K + V), full and empty barriers of
  // each Q buffer, 4 x stages K/V barriers, and a 32-byte item slot per Q buffer.
  EXPECT_EQ(barrier_bytes(2, 2), (2 * 2 + 4 * 2) * 8 + 2 * 32);
  EXPECT_EQ(barrier_bytes(3, 1), (2 * 1 + 4 * 3) * 8 + 1 * 32);
  EXPECT_EQ(shared_bytes(128, 128, 128, 2),
            1024 + 2 * 128 * 128 * 2 + 4 * 128 * 128 * 2 + barrier_bytes(2, 2));
  // One Q buffer where a second would not fit: 128 rows x 128 dims with three stages of 128 keys
  // (225 KiB with one buffer), 128 rows x 256 dims.
  EXPECT_EQ(q_buffers(128, 128, 128, 2), 2);
  EXPECT_EQ(q_buffers(128, 128, 128, 3), 1);
  EXPECT_EQ(shared_bytes(128, 128, 128, 3),
            1024 + 128 * 128 * 2 + 6 * 128 * 128 * 2 + barrier_bytes(3, 1));
  EXPECT_EQ(q_buffers(256, 128, 64, 2), 1);
  EXPECT_EQ(q_buffers(64, 128, 128, 4), 2);
  EXPECT_EQ(q_buffers(256, 64, 64, 2), 2);
  // Row sums on the tensor cores at head dim 64 only: O gains the 4 registers of the ones' 8
  // columns, which hold the rows' sums, and the ones take 16 rows of 128 bytes after the V stages.
  EXPECT_TRUE(tensor_row_sums(64));
  EXPECT_FALSE(tensor_row_sums(128));
  EXPECT_FALSE(tensor_row_sums(256));
  EXPECT_EQ(ones_bytes(64), 16 * 128);
  EXPECT_EQ(ones_bytes(128), 0);
  EXPECT_EQ(sm90_attention::output_registers(64, true), 36);
  EXPECT_EQ(sm90_attention::output_registers(128), 64);
  // Half key tiles under a causal mask at head dim 64, of whole 32-key halves.
  EXPECT_TRUE(halves_last_tile(64, 128, true));
  EXPECT_TRUE(halves_last_tile(64, 64, true));
  EXPECT_FALSE(halves_last_tile(64, 80, true));
  EXPECT_FALSE(halves_last_tile(64, 128, false));
  EXPECT_FALSE(halves_last_tile(128, 128, true));
  // The last key tile's keys in whole k16 steps: 1024 keys end on 144 of 176 (and 64 of 80),
  // 4096 on 48 of 176, 16384 on 16 of 176; a tile that divides the keys ends whole.
  EXPECT_EQ(last_tile_keys(1024, 176), 144);
  EXPECT_EQ(last_tile_keys(1024, 80), 64);
  EXPECT_EQ(last_tile_keys(4096, 176), 48);
  EXPECT_EQ(last_tile_keys(16384, 176), 16);
  EXPECT_EQ(last_tile_keys(1024, 128), 128);
  EXPECT_EQ(last_tile_keys(176, 176), 176);
  EXPECT_EQ(last_tile_keys(177, 176), 16);
  EXPECT_EQ(last_tile_keys(1, 176), 16);
  EXPECT_EQ(last_tile_keys(100, 128), 112);
  // Narrowed without a causal mask at head dim 128 over tiles wider than 64 keys only.
  EXPECT_TRUE(narrows_last_tile(128, 176, false));
  EXPECT_TRUE(narrows_last_tile(128, 80, false));
  EXPECT_FALSE(narrows_last_tile(128, 64, false));
  EXPECT_FALSE(narrows_last_tile(128, 176, true));
  EXPECT_FALSE(narrows_last_tile(64, 128, false));
  EXPECT_FALSE(narrows_last_tile(256, 80, false));
  // Shared rows' scratch: three consumers at head dim 64, two warpgroups' partials of 36 O
  // values (the sums among them) and 2 maxima per thread; none elsewhere.
  EXPECT_EQ(sm90_attention::partial_floats(64, true), 38);
  EXPECT_EQ(sm90_attention::partial_floats(128), 64 + 4);
  EXPECT_EQ(shared_rows_scratch_bytes(64, 192), 2 * 38 * 128 * 4);
  EXPECT_EQ(shared_rows_scratch_bytes(64, 128), 0);
  EXPECT_EQ(shared_rows_scratch_bytes(128, 192), 0);
  EXPECT_EQ(shared_bytes(64, 192, 128, 4), 1024 + 2 * 192 * 64 * 2 + 8 * 128 * 64 * 2 + 16 * 128 +
                                               barrier_bytes(4, 2) + 2 * 38 * 128 * 4);
  // The default at head dim 64 keeps its two Q buffers and four stages beside the ones.
  EXPECT_EQ(q_buffers(64, 192, 128, 4), 2);
  EXPECT_LE(shared_bytes(64, 192, 128, 4), kMaxSharedBytes);
  // Stacked heads: two or three consumers at head dim 64 under a causal mask; a stack is the
  // item whose rows are all the last warpgroup's, and takes up to `consumers` q heads from its
  // first.
  EXPECT_TRUE(stacks_heads(64, 192, true));
  EXPECT_TRUE(stacks_heads(64, 128, true));
  EXPECT_FALSE(stacks_heads(64, 192, false));
  EXPECT_FALSE(stacks_heads(64, 64, true));
  EXPECT_FALSE(stacks_heads(128, 128, true));
  EXPECT_TRUE(stacked_item(-128, 3));
  EXPECT_FALSE(stacked_item(-64, 3));
  EXPECT_TRUE(stacked_item(-64, 2));
  EXPECT_FALSE(stacked_item(0, 2));
  EXPECT_EQ(stacked_heads(0, 8, 3), 3);
  EXPECT_EQ(stacked_heads(6, 8, 3), 2);
  EXPECT_EQ(stacked_heads(4, 5, 2), 1);
  EXPECT_EQ(kSlotHeads, kSlotInts - 1);
  EXPECT_EQ(threads(1), 256);
  EXPECT_EQ(threads(2), 384);
  EXPECT_EQ(threads(3), 512);
  // The persistent split fits the register file at one CTA per SM: 65536 / 384 rounded down to a
  // multiple of 8 is 168 per thread at launch with two consumers. The producer walks work items:
  // it keeps more than the non-persistent 24.
  EXPECT_EQ(128 * producer_registers(2) + 2 * 128 * consumer_registers(2), 384 * 168);
  EXPECT_LE(128 * producer_registers(1) + 128 * consumer_registers(1), 65536);
  EXPECT_LE(consumer_registers(1), kConsumerRegisters);
  // Three: 65536 / 512 = 128 at launch, FlashAttention-3's 32 / 160 split.
  EXPECT_EQ(128 * producer_registers(3) + 3 * 128 * consumer_registers(3), 65536);
  // Two consumers take FlashAttention-3's 24 / 240 split; one keeps the persistent kernels'.
  EXPECT_EQ(producer_registers(2), kProducerRegisters);
  EXPECT_EQ(consumer_registers(2), kConsumerRegisters);
  EXPECT_EQ(producer_registers(1), sm90_persistent::producer_registers(1));
  for (int c : {1, 2, 3}) {
    EXPECT_EQ(producer_registers(c) % 8, 0);
    EXPECT_EQ(consumer_registers(c) % 8, 0);
  }
  // Every accepted config keeps its tiles 1024-byte aligned (the swizzle period) and fits.
  for (int d : {64, 80, 96, 128, 192, 256}) {
    for (int c : {1, 2, 3}) {
      for (int n = 64; n <= 256; n += 16) {
        for (int s : {2, 3, 4}) {
          if (check(d, 64 * c, n, s, c) != kOk) continue;
          EXPECT_EQ(q_bytes(d, 64 * c) % 1024, 0);
          EXPECT_EQ(kv_tile_bytes(d, n) % 1024, 0);
          EXPECT_LE(register_estimate(d, n), register_limit(c));
          EXPECT_LE(shared_bytes(d, 64 * c, n, s), kMaxSharedBytes);
          // Two Q buffers exactly where the second fits; the barriers stay 8-byte aligned after
          // the 1024-byte aligned tiles.
          const int buffers = q_buffers(d, 64 * c, n, s);
          const int scratch = shared_rows_scratch_bytes(d, 64 * c) + ones_bytes(d);
          const int one =
              sm90_attention::tile_bytes(d, 64 * c, n, s) + barrier_bytes(s, 1) + scratch;
          const int two = one + q_bytes(d, 64 * c) + barrier_bytes(s, 2) - barrier_bytes(s, 1);
          EXPECT_EQ(buffers, two <= kMaxSharedBytes ? 2 : 1)
              << d << " " << c << " " << n << " " << s;
          EXPECT_EQ(shared_bytes(d, 64 * c, n, s), buffers == 2 ? two : one);
          EXPECT_EQ((shared_bytes(d, 64 * c, n, s) - barrier_bytes(s, buffers) - scratch) % 1024,
                    0);
        }
      }
    }
  }
}

// The kernel's query tiles end at their sequence's last row (QueryTilesFrom::end), so a sequence's
// one partial tile is its top one: under a causal mask it sees the fewest keys. 1024 rows in
// tiles of 192 over key tiles of 128: from the start the tiles see 2, 3, 5, 6, 8 and 8 key tiles
// (the last holds 64 rows), from the end 8, 7, 5, 4, 2 and 1 (the first holds 64 rows). With
// cached keys the mask's offset (kv_len - q_len) moves every tile's keys alike. Non-causal
// tiles see every key either way. The schedule lists the heaviest first in both.
TEST(FlashFwdSm90Traits, QueryTilesFromTheEndPutThePartialTileAtTheTop) {
  testing::SpecShape shape;
  shape.q_heads = shape.kv_heads = 1;
  shape.head_dim = 64;
  for (const bool causal : {true, false}) {
    WorkloadSpec spec = testing::make_spec(shape, {{0, 1024}, {100, 1024}});
    spec.mask.causal = causal;
    const Batch batch = generate_batch(spec);
    const int64_t start = flash_fwd_key_tiles(batch, 192, 128, QueryTilesFrom::start);
    const int64_t end = flash_fwd_key_tiles(batch, 192, 128, QueryTilesFrom::end);
    // The second sequence's 1124 keys (9 key tiles): from the end tile m's last row sees
    // 1124 - 192 m keys, from the start tile m's sees min(1024, 192 (m + 1)) + 100.
    EXPECT_EQ(start, causal ? (2 + 3 + 5 + 6 + 8 + 8) + (3 + 4 + 6 + 7 + 9 + 9) : 6 * 8 + 6 * 9);
    EXPECT_EQ(end, causal ? (8 + 7 + 5 + 4 + 2 + 1) + (9 + 8 + 6 + 5 + 3 + 2) : 6 * 8 + 6 * 9);
    const std::vector<int32_t> schedule =
        flash_fwd_tile_schedule(batch, 192, 128, QueryTilesFrom::end);
    ASSERT_EQ(schedule.size(), 2u * 12u);
    if (causal) {
      // (sequence, tile): the second sequence's bottom tile sees the most keys, the first
      // sequence's top tile (64 rows, one key tile) the fewest.
      EXPECT_EQ(schedule[0], 1);
      EXPECT_EQ(schedule[1], 0);
      EXPECT_EQ(schedule[22], 0);
      EXPECT_EQ(schedule[23], 5);
    }
  }
}

// The accumulator map covers a 64 x N tile exactly once over the 128 threads, and the register A
// fragments packed from the score accumulators hold the elements the PTX ISA's m64k16 A layout
// wants: per warp, the mma.m16n8k16 A layout (register x: row l / 4 + 8 (x % 2), columns
// 8 (x / 2) + 2 (l % 4) + {0, 1} of the k16 slice).
TEST(FlashFwdSm90Layout, AccumulatorAndRegisterAFragmentsFollowThePtxLayouts) {
  using namespace flash_fwd::sm90_wgmma;
  for (int n : {64, 80, 128, 176, 192, 256}) {
    std::set<std::pair<int, int>> seen;
    for (int tid = 0; tid < 128; ++tid) {
      for (int i = 0; i < n / 2; ++i) {
        const int row = accumulator_row(tid, i), col = accumulator_column(tid, i);
        ASSERT_GE(row, 0);
        ASSERT_LT(row, 64);
        ASSERT_GE(col, 0);
        ASSERT_LT(col, n);
        EXPECT_TRUE(seen.insert({row, col}).second) << "tid " << tid << " i " << i;
        if (i % 2 == 1) {  // the pair a 32-bit store or pack writes: same row, next column
          EXPECT_EQ(row, accumulator_row(tid, i - 1));
          EXPECT_EQ(col, accumulator_column(tid, i - 1) + 1);
        }
      }
    }
    EXPECT_EQ(seen.size(), size_t(64 * n));
  }
  for (int tid = 0; tid < 128; ++tid) {
    const int warp = tid / 32, lane = tid % 32;
    for (int kk = 0; kk < 128 / 16; ++kk) {
      for (int x = 0; x < 4; ++x) {
        for (int half = 0; half < 2; ++half) {
          const int i = a_fragment_accumulator(kk, x, half);
          const int want_row = warp * 16 + lane / 4 + 8 * (x % 2);
          const int want_key = 16 * kk + 8 * (x / 2) + 2 * (lane % 4) + half;
          EXPECT_EQ(accumulator_row(tid, i), want_row) << tid << " " << kk << " " << x;
          EXPECT_EQ(accumulator_column(tid, i), want_key) << tid << " " << kk << " " << x;
        }
      }
    }
  }
}

// Where TMA's CU_TENSOR_MAP_SWIZZLE_128B puts element (row, col) of a box of 64 16-bit columns
// written at a 1024-byte aligned address: 128-byte rows, the 16-byte chunk index XORed with
// row % 8 (address bits 4..6 with bits 7..9).
int tma_swizzled_offset(int row, int col) {
  const int linear = row * 128 + col * 2;
  return linear ^ (((linear >> 7) & 7) << 4);
}
// Where wgmma reads element `e` of a canonical 128-byte-swizzle operand from a descriptor (start,
// LBO, SBO), per CUTLASS's GmmaDescriptor layouts, in bytes; the swizzle is applied to the
// resulting address (the start offsets used here keep the tile's base 1024-byte aligned).
//   K-major:  element (mn, k): start + (mn % 8) x 128 + (mn / 8) x SBO + 2k      (k < 16)
//   MN-major: element (k, mn): start + 2 (mn % 64) + (mn / 64) x LBO + (k % 8) x 128 + (k / 8) x
//   SBO
int swizzle(int address) {
  return address ^ (((address >> 7) & 7) << 4);
}
int k_major_read(int start, int sbo, int mn, int k) {
  return swizzle(start + (mn % 8) * 128 + (mn / 8) * sbo + 2 * k);
}
int mn_major_read(int start, int lbo, int sbo, int k, int mn) {
  return swizzle(start + 2 * (mn % 64) + (mn / 64) * lbo + (k % 8) * 128 + (k / 8) * sbo);
}

// The kernel's descriptors read, for every k16 step, the Q, K and V elements the math needs from
// where TMA put them: Q (A, [rows][dims] K-major) and K (B of S = Q K^T, [keys][dims] K-major) in
// column blocks of 64 dims; V (B of O = P V, [keys][dims], MN-major with the transpose bit).
TEST(FlashFwdSm90Layout, DescriptorOffsetsReadWhatTmaWrote) {
  using namespace flash_fwd::sm90_wgmma;
  // At 80 and 96 the K-major steps cover the real dims only (5 and 6) and P V's N = head_dim
  // columns reach into the second block as far as the row (the rest is TMA's zero fill).
  for (int head_dim : {64, 80, 96, 128, 192, 256}) {
    for (int tile_n : {64, 80, 96, 128, 160, 176, 192}) {
      const int blocks = column_blocks(head_dim);
      // Element (row, dim) of a [blocks][rows][64] tile as TMA wrote it.
      auto tma = [&](int rows, int row, int dim) {
        return (dim / 64) * rows * kBlockRowBytes + tma_swizzled_offset(row, dim % 64);
      };
      for (int kk = 0; kk < head_dim / 16; ++kk) {
        // K: keys (N) x 16 dims of step kk.
        const int k_start = k_major_step_offset(kk, tile_n);
        for (int key = 0; key < tile_n; ++key) {
          for (int k = 0; k < 16; ++k) {
            ASSERT_EQ(k_major_read(k_start, kSwizzleAtomBytes, key, k),
                      tma(tile_n, key, 16 * kk + k))
                << "K d" << head_dim << " n" << tile_n << " kk " << kk << " key " << key;
          }
        }
        // Q of the second warpgroup of a 128-row tile: its rows start 64 rows into each block.
        const int q_start = 64 * kBlockRowBytes + k_major_step_offset(kk, 128);
        for (int row = 0; row < 64; ++row) {
          for (int k = 0; k < 16; ++k) {
            ASSERT_EQ(k_major_read(q_start, kSwizzleAtomBytes, row, k),
                      tma(128, 64 + row, 16 * kk + k))
                << "Q d" << head_dim << " kk " << kk << " row " << row;
          }
        }
      }
      for (int kk = 0; kk < tile_n / 16; ++kk) {
        const int v_start = mn_major_step_offset(kk);
        for (int k = 0; k < 16; ++k) {
          for (int dim = 0; dim < head_dim; ++dim) {
            ASSERT_EQ(mn_major_read(v_start, v_leading_bytes(tile_n), kSwizzleAtomBytes, k, dim),
                      tma(tile_n, 16 * kk + k, dim))
                << "V d" << head_dim << " n" << tile_n << " kk " << kk << " key " << k;
          }
        }
      }
      EXPECT_EQ(blocks, (head_dim + 63) / 64);
      // Every operand start keeps the swizzle phase: K-major steps move within a 128-byte row,
      // MN-major steps by whole 1024-byte atoms.
      for (int kk = 0; kk < tile_n / 16; ++kk) EXPECT_EQ(mn_major_step_offset(kk) % 1024, 0);
    }
  }
}

// Interleaved K and V tiles (prefix_prefill.sm90_wgmma's paged context: one TMA box per page
// brings [keys / 8][blocks][8][64], every column block of each 8-key group side by side) are read
// by the descriptors of interleaved_k_step_offset / interleaved_v_step_offset with SBO
// interleaved_group_bytes (and LBO one atom for V) exactly where the boxes put each key and dim.
TEST(FlashFwdSm90Layout, InterleavedDescriptorsReadWhatPageBoxesWrote) {
  using namespace sm90_attention;
  for (int head_dim : {64, 128, 192, 256}) {
    for (int tile_n : {64, 128}) {
      const int blocks = column_blocks(head_dim);
      // Element (key, dim) as a box of 8-key groups wrote it: group, column block, then the
      // swizzled [8][64] atom.
      auto written = [&](int key, int dim) {
        return (key / 8) * blocks * kSwizzleAtomBytes + (dim / 64) * kSwizzleAtomBytes +
               tma_swizzled_offset(key % 8, dim % 64);
      };
      for (int kk = 0; kk < head_dim / 16; ++kk) {
        const int start = interleaved_k_step_offset(kk);
        for (int key = 0; key < tile_n; ++key) {
          for (int k = 0; k < 16; ++k) {
            ASSERT_EQ(k_major_read(start, interleaved_group_bytes(head_dim), key, k),
                      written(key, 16 * kk + k))
                << "K d" << head_dim << " n" << tile_n << " kk " << kk << " key " << key;
          }
        }
      }
      for (int kk = 0; kk < tile_n / 16; ++kk) {
        const int start = interleaved_v_step_offset(kk, head_dim);
        EXPECT_EQ(start % 1024, 0);
        for (int k = 0; k < 16; ++k) {
          for (int dim = 0; dim < head_dim; ++dim) {
            ASSERT_EQ(
                mn_major_read(start, kSwizzleAtomBytes, interleaved_group_bytes(head_dim), k, dim),
                written(16 * kk + k, dim))
                << "V d" << head_dim << " n" << tile_n << " kk " << kk << " key " << k;
            ASSERT_EQ(swizzle(interleaved_offset(16 * kk + k, dim, head_dim)),
                      written(16 * kk + k, dim));
          }
        }
      }
    }
  }
}

// Every point of the space is accepted exactly when the traits (and the device's shared memory)
// accept it, and every refusal carries a reason that names what to change.
TEST(FlashFwdSm90Gating, SpaceRefusalsMirrorTheTraitsWithReasons) {
  const Registry registry = make_registry();
  const Variant& variant = sm90_variant(registry);
  int accepted = 0, refused = 0;
  for (int head_dim : {64, 128, 256}) {
    const Batch batch = prefill_batch(16, 4, head_dim);
    const Target target = hopper();
    for (const KernelConfig& config : space_configs(variant, batch, target)) {
      const int m = int(config.get("tile_m")), n = int(config.get("tile_n")),
                s = int(config.get("stages")), c = int(config.get("consumers"));
      const Support support = variant.check(batch, config, target);
      const int rule = flash_fwd::sm90_wgmma::check(head_dim, m, n, s, c);
      EXPECT_EQ(support.ok, rule == flash_fwd::sm90_wgmma::kOk)
          << config.key() << " d" << head_dim << ": " << support.reason;
      if (support.ok) {
        ++accepted;
        continue;
      }
      ++refused;
      const std::string& why = support.reason;
      switch (rule) {
        case flash_fwd::sm90_wgmma::kTileM:
          EXPECT_NE(why.find("tile_m must be"), std::string::npos) << why;
          break;
        case flash_fwd::sm90_wgmma::kSharedMemory:
          EXPECT_NE(why.find("shared memory"), std::string::npos) << why;
          break;
        case flash_fwd::sm90_wgmma::kRegisters:
          EXPECT_NE(why.find("registers"), std::string::npos) << why;
          break;
        default:
          ADD_FAILURE() << "unexpected rule " << rule << " for " << config.key();
      }
    }
  }
  // Key tiles of 64, 80, 128, 176 and 192 keys, 1 to 3 consumers, 2 or 3 stages. head_dim 64: all
  // 20 of one and two consumers, and 64 to 128 keys of three (6). head_dim 128: 192 keys never fit
  // the registers, 176 keys only with two consumers and two stages; three consumers 64 and 80
  // keys (4). head_dim 256: 64 keys but 128 rows x 3 stages, 80 keys in 2 stages; none of three.
  EXPECT_EQ(accepted, (20 + 6) + (13 + 4) + 5);
  EXPECT_GT(refused, 0);
  const Batch batch = prefill_batch(16, 4, 128);
  KernelConfig extra = make_config(128, 64, 2, 2);
  extra.set("warps", 4);
  EXPECT_FALSE(variant.check(batch, extra, hopper()).ok);
  KernelConfig missing{{"tile_m", 128}, {"tile_n", 64}, {"stages", 2}};
  EXPECT_NE(variant.check(batch, missing, hopper()).reason.find("consumers"), std::string::npos);
  // A device with less shared memory per block than the config needs.
  DeviceInfo small;
  small.cc_major = 9;
  small.max_shared_per_block_optin = 100 * 1024;
  const Support big = variant.check(batch, make_config(128, 128, 2, 2), Target::cuda(small));
  EXPECT_FALSE(big.ok);
  EXPECT_NE(big.reason.find("this device allows"), std::string::npos) << big.reason;
}

TEST(FlashFwdSm90Gating, OnlySm90aAndTheDefaultIsSupportedEverywhereElse) {
  const Registry registry = make_registry();
  const Variant& variant = sm90_variant(registry);
  for (int head_dim : {64, 128, 256}) {
    for (DType dtype : {DType::bf16, DType::fp16}) {
      for (bool causal : {true, false}) {
        const Batch batch = prefill_batch(8, 1, head_dim, dtype, causal);
        const KernelConfig config = variant.default_config(batch, hopper());
        const Support support = variant.check(batch, config, hopper());
        EXPECT_TRUE(support.ok) << head_dim << ": " << support.reason;
        const Support ampere = variant.check(batch, config, testing::ampere_target());
        EXPECT_FALSE(ampere.ok);
        EXPECT_NE(ampere.reason.find("sm_90a"), std::string::npos) << ampere.reason;
        EXPECT_FALSE(variant.check(batch, config, Target::cpu()).ok);
      }
    }
  }
  // GQA of any ratio.
  for (int group : {1, 3, 5, 7, 16, 40}) {
    const Batch batch = prefill_batch(2 * group, 2, 64);
    EXPECT_TRUE(variant.check(batch, variant.default_config(batch, hopper()), hopper()).ok)
        << group;
  }
  const Batch batch = prefill_batch(16, 16, 128);
  EXPECT_EQ(variant.full_name(variant.default_config(batch, hopper())),
            "flash_fwd.sm90_wgmma.c2.st3.tm128.tn128");  // short sequences: 3 stages
}

// The default at head_dim 64 is three consumers over 128 keys in four stages. With two consumers
// the key tile (and stages) is the head dim's candidate (FlashAttention-3's width and the power
// of two below) that loads the fewest keys, each tile weighted with a fixed cost: 176 at head_dim
// 128, 80 at 256. One consumer where two do not fit the device's shared memory.
TEST(FlashFwdSm90Gating, DefaultKeyTileFitsTheSequences) {
  const Registry registry = make_registry();
  const Variant& variant = sm90_variant(registry);
  auto tile_n = [&](int head_dim, int seqs, int64_t len, bool causal, const Target& target) {
    testing::SpecShape shape;
    shape.q_heads = 1;
    shape.kv_heads = 1;
    shape.head_dim = head_dim;
    WorkloadSpec spec =
        testing::make_spec(shape, std::vector<std::pair<int64_t, int64_t>>(size_t(seqs), {0, len}));
    spec.mask.causal = causal;
    const Batch batch = generate_batch(spec);
    const KernelConfig config = variant.default_config(batch, target);
    EXPECT_TRUE(variant.check(batch, config, target).ok) << config.key();
    EXPECT_EQ(int(config.get("tile_m")), 64 * int(config.get("consumers"))) << config.key();
    return int(config.get("tile_n")) + 1000 * int(config.get("stages")) +
           10000 * int(config.get("consumers"));
  };
  // Returned as 10000 x consumers + 1000 x stages + tile_n. Head dim 64: three consumers, 128
  // keys, four stages. Otherwise two consumers; short items (up to 8 key tiles per query tile)
  // take the most stages that fit.
  const Target h = hopper();
  EXPECT_EQ(tile_n(64, 4, 4096, false, h), 34128);
  EXPECT_EQ(tile_n(64, 4, 4096, true, h), 34128);
  EXPECT_EQ(tile_n(64, 1, 16384, false, h), 34128);
  EXPECT_EQ(tile_n(64, 16, 1024, false, h), 34128);
  EXPECT_EQ(tile_n(64, 16, 1024, true, h), 34128);
  EXPECT_EQ(tile_n(128, 4, 4096, false, h), 22176);
  EXPECT_EQ(tile_n(128, 4, 4096, true, h), 22176);
  EXPECT_EQ(tile_n(128, 16, 1024, false, h), 22176);  // 176 keys: three stages do not fit
  EXPECT_EQ(tile_n(128, 16, 1024, true, h), 23128);
  EXPECT_EQ(tile_n(128, 2, 100, false, h), 23128);  // one tile either way: the narrower
  EXPECT_EQ(tile_n(256, 4, 4096, false, h), 22080);
  EXPECT_EQ(tile_n(256, 16, 1024, false, h), 22080);
  EXPECT_EQ(tile_n(256, 16, 1024, true, h), 22080);  // three stages do not fit
  // 100 KiB of shared memory: 128 rows do not fit, one consumer with 64-key tiles does.
  DeviceInfo small;
  small.cc_major = 9;
  small.sm_count = 132;
  small.max_shared_per_block_optin = 100 * 1024;
  EXPECT_EQ(tile_n(128, 4, 4096, false, Target::cuda(small)), 12064);
  // Three consumers at head dim 64 do not fit either (24 KiB of Q per buffer, 32 KiB per stage);
  // two do.
  EXPECT_EQ(tile_n(64, 4, 4096, false, Target::cuda(small)) / 10000, 2);
}

struct Feature {
  std::string name;
  std::string reason_mentions;  // empty: supported
  std::function<void(Batch&)> apply;
};

TEST(FlashFwdSm90Gating, FeaturesAreSupportedOrRefusedWithAReason) {
  const Batch plain = prefill_batch(12, 4, 128);
  const Target gpu = hopper();
  const Registry registry = make_registry();
  const Variant& variant = sm90_variant(registry);
  const Variant& sm80 = *registry.find("flash_fwd.sm80_mma");
  const std::vector<Feature> features = {
      {"non-causal", "", [](Batch& b) { b.causal = false; }},
      {"hnd", "", [](Batch& b) { b.spec.kv_cache.layout = KvLayout::hnd; }},
      {"fp16", "", [](Batch& b) { b.dtype = b.kv_dtype = b.spec.model.dtype = DType::fp16; }},
      {"soft-cap", "soft-cap", [](Batch& b) { b.logits_soft_cap = 30.0f; }},
      {"sliding window", "sliding window", [](Batch& b) { b.sliding_window = 16; }},
      {"sinks", "sinks", [](Batch& b) { b.sink_logits.assign(12, 1.0f); }},
      {"fp8 KV", "",
       [](Batch& b) {
         b.kv_dtype = DType::fp8_e4m3;
         b.k_scales = {0.01f};
         b.v_scales = {0.02f};
       }},
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
    // The same batches as the sm80 variant (the same kernel semantics).
    EXPECT_EQ(sm80.check(batch, sm80.default_config(batch, gpu), gpu).ok, s.ok) << feature.name;
  }
}

TEST(FlashFwdSm90Gating, ProgramsNameTheInstantiation) {
  const Registry registry = make_registry();
  const Variant& variant = sm90_variant(registry);
  const Batch causal = prefill_batch(8, 2, 128, DType::fp16, true);
  const Batch full = prefill_batch(8, 2, 128, DType::bf16, false);
  const KernelConfig config = make_config(64, 128, 3, 1);
  const JitProgram a = variant.programs(causal, config, hopper()).front();
  const JitProgram b = variant.programs(full, config, hopper()).front();
  ASSERT_EQ(a.kernels.size(), 2u);
  // The last key tile's keys (LAST_KEYS): the batch's sequences hold 100, 40 and 1 keys, so
  // without the mask every last tile fits in 112 of 128; under it the tile is whole.
  EXPECT_EQ(a.kernels[0], "attn::flash_fwd_sm90_wgmma<1, 128, 128, 64, 128, 3, 1, true, 128>");
  EXPECT_EQ(b.kernels[0], "attn::flash_fwd_sm90_wgmma<0, 128, 128, 64, 128, 3, 1, false, 112>");
  // An fp8 cache: the scales (KV_SCALES) and the pass that converts the gathered codes first.
  Batch fp8 = full;
  fp8.kv_dtype = DType::fp8_e4m3;
  fp8.k_scales = fp8.v_scales = {0.5f};
  const JitProgram d = variant.programs(fp8, config, hopper()).front();
  ASSERT_EQ(d.kernels.size(), 3u);
  EXPECT_EQ(d.kernels[0],
            "attn::flash_fwd_sm90_wgmma<0, 128, 128, 64, 128, 3, 1, false, 112, true>");
  EXPECT_EQ(d.kernels[2], "attn::dequantize_fp8<0>");
  EXPECT_NE(d.name.find(".kv_fp8"), std::string::npos) << d.name;
  EXPECT_EQ(a.kernels[1], "attn::flash_fwd_gather_kv");
  EXPECT_NE(a.name, b.name);
  EXPECT_NE(b.name.find(".last112"), std::string::npos) << b.name;
  EXPECT_EQ(a.name.find(".last"), std::string::npos) << a.name;
  EXPECT_EQ(a.arch, "sm_90a");
  // Tiles of 80 keys end at 100 keys on 20, at 40 on 40 (48 in whole steps); tiles of 64 are
  // not narrowed (flash_fwd::sm90_wgmma::narrows_last_tile), nor are other head dims.
  EXPECT_EQ(variant.programs(full, make_config(64, 80, 3, 1), hopper()).front().kernels[0],
            "attn::flash_fwd_sm90_wgmma<0, 128, 128, 64, 80, 3, 1, false, 48>");
  EXPECT_EQ(variant.programs(full, make_config(64, 64, 3, 1), hopper()).front().kernels[0],
            "attn::flash_fwd_sm90_wgmma<0, 128, 128, 64, 64, 3, 1, false, 64>");
  const Batch full64 = prefill_batch(8, 2, 64, DType::bf16, false);
  EXPECT_EQ(variant.programs(full64, make_config(64, 128, 3, 1), hopper()).front().kernels[0],
            "attn::flash_fwd_sm90_wgmma<0, 64, 64, 64, 128, 3, 1, false, 128>");
}

// NVRTC compiles every config the traits accept, for every head dim (80, 96, 192 and 192 with a V
// of 128 too), over an fp8 cache at 64, 128 and 256, and both dtypes (causal for
// one of them, non-causal for the other; ATTN_TEST_EXHAUSTIVE=1 compiles both causalities of
// each), and ptxas reports no spills, no stack frame and no wgmma serialisation (which would
// silently drop the overlap of softmax and P V). Every third accepted config of a batch,
// rotating with the batch (testing::compiles_config), unless ATTN_TEST_EXHAUSTIVE=1.
// ATTN_TEST_VERBOSE=1 prints ptxas' report.
TEST(FlashFwdSm90Compile, EveryAcceptedConfigCompilesForSm90aWithoutSpills) {
  const fs::path dir =
      fs::temp_directory_path() /
      ("attn-flash-sm90-jit-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  fs::remove_all(dir);
  JitCompiler jit(JitOptions{dir.string(), /*use_cache=*/false});
  const Registry registry = make_registry();
  const Variant& variant = sm90_variant(registry);
  const bool exhaustive = std::getenv("ATTN_TEST_EXHAUSTIVE") != nullptr;
  const Target target = hopper();

  std::vector<testing::CompileJob> jobs;
  std::vector<size_t> lowered;  // each job's kernels
  std::vector<Batch> batches;   // programs() reads the batch; keep them alive
  const std::vector<std::pair<int, int>> dims = {{64, 0},  {80, 0},  {96, 0},   {128, 0},
                                                 {192, 0}, {256, 0}, {192, 128}};
  batches.reserve(5 * dims.size());
  for (const auto& [head_dim, v_head_dim] : dims) {
    for (DType dtype : {DType::bf16, DType::fp16}) {
      for (bool causal : {true, false}) {
        if (!exhaustive && causal != (dtype == DType::bf16)) continue;
        // Head dims other than 64, 128 and 256: bf16 causal only, unless exhaustive (CI time).
        const bool power_of_two =
            (head_dim == 64 || head_dim == 128 || head_dim == 256) && v_head_dim == 0;
        if (!exhaustive && !power_of_two && dtype != DType::bf16) continue;
        batches.push_back(prefill_batch(16, 4, head_dim, dtype, causal, v_head_dim));
        const Batch& batch = batches.back();
        EXPECT_GT(testing::queue_accepted_compiles(variant, batch, target,
                                                   space_configs(variant, batch, target),
                                                   batches.size(), jit, jobs),
                  0);
        lowered.resize(jobs.size(), 2);  // the kernel and the gather
      }
    }
    // An fp8 cache (the scales, KV_SCALES, and the pass before: three kernels), bf16 causal at
    // the power-of-two head dims.
    if (v_head_dim == 0 && (head_dim == 64 || head_dim == 128 || head_dim == 256)) {
      batches.push_back(prefill_batch(16, 4, head_dim, DType::bf16, true));
      Batch& fp8 = batches.back();
      fp8.kv_dtype = DType::fp8_e4m3;
      fp8.k_scales = fp8.v_scales = {0.5f};
      EXPECT_GT(
          testing::queue_accepted_compiles(
              variant, fp8, target, space_configs(variant, fp8, target), batches.size(), jit, jobs),
          0);
      lowered.resize(jobs.size(), 3);
    }
  }
  const std::regex spills("([1-9][0-9]*) bytes (spill stores|spill loads|stack frame)");
  for (size_t j = 0; j < jobs.size(); ++j) {
    testing::CompileJob& job = jobs[j];
    try {
      const CompiledProgram compiled = job.compiled.get();
      EXPECT_EQ(compiled.lowered_names.size(), lowered[j]) << job.what;
      EXPECT_NE(compiled.log.find("registers"), std::string::npos) << job.what << compiled.log;
      EXPECT_FALSE(std::regex_search(compiled.log, spills)) << job.what << ":\n" << compiled.log;
      // ptxas: "Potential Performance Loss: wgmma.mma_async instructions are serialized ...".
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
