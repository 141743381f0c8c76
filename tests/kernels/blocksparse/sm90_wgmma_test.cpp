// blocksparse.sm90_wgmma on the CPU: the traits' rules (tiles, consumers, Q buffers, shared memory
// and registers at one or two CTAs per SM, the layout's block); check() refusing every arch but
// sm_90a, the features the family does not define and block sizes the 64-row warpgroups cannot
// walk, each with a reason; the work plan (items heaviest first, entries the union of the
// consumers' walks) with the kernel's mask decision emulated on it and compared key by key with
// key_visible; and every accepted config compiled by NVRTC for sm_90a, both dtypes, head dims 64
// and 128, causal and not, with no spills, no stack frame, no ignored setmaxnreg and no serialised
// wgmma.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <future>
#include <iostream>
#include <limits>
#include <random>
#include <regex>
#include <set>
#include <tuple>

#include "kernels/blocksparse/blocksparse_variants.hpp"
#include "kernels/blocksparse/sm80_mma_traits.hpp"
#include "kernels/blocksparse/sm90_wgmma_traits.hpp"
#include "kernels/jit/jit_compiler.hpp"
#include "kernels/registry.hpp"
#include "tests/kernels/compile_jobs.hpp"
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

// v_head_dim: V's width where narrower than Q and K's (0: as wide).
// fp8: an fp8 e4m3 cache with per-head scales.
Batch prefill_batch(int head_dim, DType dtype = DType::bf16, int block_size = 64,
                    bool causal = true, int v_head_dim = 0, bool fp8 = false) {
  testing::SpecShape shape;
  shape.q_heads = 8;
  shape.kv_heads = 2;
  shape.head_dim = head_dim;
  shape.dtype = dtype;
  WorkloadSpec spec = testing::make_spec(shape, {{0, 300}, {70, 33}, {0, 1}}, "bs-sm90-test");
  if (v_head_dim > 0) spec.model.v_head_dim = v_head_dim;
  if (fp8) {
    spec.model.kv_dtype = DType::fp8_e4m3;
    spec.model.kv_scale = KvScaleGranularity::per_head;
  }
  spec.mask.block_sparse = phi3_layout(block_size, 2, 3);
  Batch batch = generate_batch(spec);
  batch.causal = causal;  // workloads with a layout are causal; the kernel also runs non-causal
  return batch;
}

KernelConfig make_config(int tile_n, int stages, int ctas_per_sm, int consumers) {
  return KernelConfig{{"tile_n", tile_n},
                      {"stages", stages},
                      {"ctas_per_sm", ctas_per_sm},
                      {"consumers", consumers}};
}

const Variant& sm90_variant(const Registry& registry) {
  const Variant* variant = registry.find("blocksparse.sm90_wgmma");
  EXPECT_NE(variant, nullptr);
  return *variant;
}

std::vector<KernelConfig> space_configs(const Variant& variant, const Batch& batch,
                                        const Target& target) {
  const auto space = variant.space(batch, target);
  EXPECT_EQ(space.size(), 4u);
  std::vector<KernelConfig> out;
  for (int64_t n : space[0].values) {
    for (int64_t s : space[1].values) {
      for (int64_t c : space[2].values) {
        for (int64_t w : space[3].values)
          out.push_back(make_config(int(n), int(s), int(c), int(w)));
      }
    }
  }
  return out;
}

TEST(BlockSparseSm90Traits, RulesNameTheFirstBrokenConstraint) {
  using namespace blocksparse::sm90_wgmma;
  // (head_dim, tile_n, stages, consumers, ctas_per_sm[, block_size])
  EXPECT_EQ(check(128, 64, 2, 1, 2), kOk);
  EXPECT_EQ(check(128, 64, 4, 1, 1), kOk);
  EXPECT_EQ(check(128, 128, 2, 1, 1), kOk);
  EXPECT_EQ(check(64, 64, 4, 1, 2), kOk);
  EXPECT_EQ(check(64, 128, 3, 1, 2), kOk);
  EXPECT_EQ(check(128, 64, 4, 2, 1), kOk);
  EXPECT_EQ(check(128, 128, 2, 2, 1), kOk);
  // The consumer's head dims (sm90_attention::head_dims_allowed): 80, 96, 192 and 256 too, and
  // 192 with a V of 128 (the last argument), no other narrower V.
  EXPECT_EQ(check(256, 64, 2, 1, 1), kOk);
  EXPECT_EQ(check(256, 128, 2, 1, 1), sm90_attention::kSharedMemory);  // 32 + 4 x 64 KiB
  EXPECT_EQ(check(96, 64, 2, 1, 1), kOk);
  EXPECT_EQ(check(80, 128, 2, 2, 1), kOk);  // 80 dims take two whole column blocks
  EXPECT_EQ(check(80, 128, 4, 2, 1), sm90_attention::kSharedMemory);
  EXPECT_EQ(check(192, 64, 2, 2, 1), kOk);
  EXPECT_EQ(check(192, 128, 2, 1, 1, 0, 128), kOk);
  EXPECT_EQ(check(112, 64, 2, 1, 1), sm90_attention::kHeadDim);
  EXPECT_EQ(check(128, 64, 2, 1, 1, 0, 64), sm90_attention::kHeadDim);
  EXPECT_EQ(check(256, 64, 2, 1, 1, 0, 128), sm90_attention::kHeadDim);
  EXPECT_EQ(check(128, 64, 2, 3, 1), sm90_attention::kConsumers);
  EXPECT_EQ(check(128, 32, 2, 1, 1), sm90_attention::kTileN);
  EXPECT_EQ(check(128, 64, 5, 1, 1), sm90_attention::kStages);
  EXPECT_EQ(check(128, 64, 2, 1, 3), kCtasPerSm);
  EXPECT_EQ(check(128, 64, 2, 1, 0), kCtasPerSm);
  EXPECT_EQ(check(128, 64, 2, 2, 2), kTwoCtaConsumers);
  // Two CTAs at head_dim 128: 2 x (97 KiB + 1 KiB) fits 228 KiB with two Q buffers; three
  // stages (113 KiB with one) do not, nor 128-key tiles (145 KiB).
  EXPECT_EQ(check(128, 64, 3, 1, 2), kTwoCtaShared);
  EXPECT_EQ(check(128, 128, 2, 1, 2), kTwoCtaShared);
  EXPECT_EQ(check(64, 128, 4, 1, 2), kTwoCtaShared);
  // 128-key tiles at head_dim 128 with two consumers: four stages (257 KiB) exceed the block's.
  EXPECT_EQ(check(128, 128, 4, 2, 1), sm90_attention::kSharedMemory);
  EXPECT_EQ(check(128, 64, 2, 1, 2, 64), kOk);
  EXPECT_EQ(check(128, 64, 2, 1, 2, 128), kOk);
  EXPECT_EQ(check(128, 64, 4, 2, 1, 64), kOk);         // two consumers in adjacent block rows
  EXPECT_EQ(check(128, 128, 2, 1, 1, 64), kOk);        // a key tile gathers two blocks of 64
  EXPECT_EQ(check(128, 64, 2, 1, 1, 32), kBlockSize);  // 64 rows over two block rows
  EXPECT_EQ(check(128, 64, 2, 2, 1, 96), kBlockSize);

  // Q buffers: two wherever they fit the CTA's budget (half the SM's with two CTAs).
  EXPECT_EQ(q_buffers(128, 64, 4, 2, 1), 2);
  EXPECT_EQ(q_buffers(128, 64, 2, 1, 2), 2);
  EXPECT_EQ(q_buffers(128, 128, 3, 2, 1), 1);
  EXPECT_EQ(shared_bytes(128, 64, 2, 1, 2),
            1024 + 2 * 64 * 128 * 2 + 4 * 64 * 128 * 2 + (2 * 2 + 4 * 2) * 8 + 2 * 16);
  EXPECT_EQ(shared_bytes(128, 128, 3, 2, 1),
            1024 + 128 * 128 * 2 + 6 * 128 * 128 * 2 + (2 + 4 * 3) * 8 + 16);
  EXPECT_EQ(shared_budget(1), sm90_attention::kMaxSharedBytes);
  EXPECT_EQ(shared_budget(2), kSharedPerSm / 2 - kReservedSharedPerCta);
  EXPECT_EQ(threads(1), 256);
  EXPECT_EQ(threads(2), 384);
  EXPECT_EQ(tile_m(2), 128);

  // The setmaxnreg split fits a CTA's share of the register file: 168 per thread at launch with
  // two consumers, 128 with two CTAs of one, 256 with one CTA of one.
  EXPECT_EQ(launch_registers(2, 1), 168);
  EXPECT_EQ(launch_registers(1, 2), 128);
  EXPECT_EQ(launch_registers(1, 1), 256);
  EXPECT_EQ(128 * (producer_registers(1, 2) + consumer_registers(1, 2)), 256 * 128);
  EXPECT_EQ(128 * (producer_registers(2, 1) + 2 * consumer_registers(2, 1)), 384 * 168);
  for (const auto& [w, c] : std::vector<std::pair<int, int>>{{1, 1}, {1, 2}, {2, 1}}) {
    EXPECT_TRUE(register_split_fits(w, c)) << w << " " << c;
    EXPECT_EQ(producer_registers(w, c) % 8, 0);
    EXPECT_EQ(consumer_registers(w, c) % 8, 0);
    EXPECT_GE(producer_registers(w, c), 32);  // the producer walks the work items
    EXPECT_LE(consumer_registers(w, c), 256);
  }
  // Every accepted config fits its registers and its share of the SM's shared memory, and every
  // head dim has some.
  for (const auto& [d, v] : std::vector<std::pair<int, int>>{
           {64, 64}, {80, 80}, {96, 96}, {128, 128}, {192, 192}, {256, 256}, {192, 128}}) {
    int accepted = 0;
    for (int n : {64, 128}) {
      for (int s : {2, 3, 4}) {
        for (int c : {1, 2}) {
          for (int w : {1, 2}) {
            if (check(d, n, s, w, c, 0, v) != kOk) continue;
            ++accepted;
            EXPECT_LE(sm90_attention::register_estimate(d, n, v), consumer_registers(w, c));
            EXPECT_LE(c * (shared_bytes(d, n, s, w, c, v) + kReservedSharedPerCta), kSharedPerSm);
            EXPECT_LE(shared_bytes(d, n, s, w, c, v), sm90_attention::kMaxSharedBytes);
          }
        }
      }
    }
    EXPECT_GT(accepted, 0) << d << " " << v;
  }
  // A V of 128 beside Q and K of 192 takes V stages of two column blocks, not three: 8 KiB less
  // per stage of 64 keys (two Q buffers either way).
  EXPECT_EQ(q_buffers(192, 64, 2, 2, 1), 2);
  EXPECT_EQ(q_buffers(192, 64, 2, 2, 1, 128), 2);
  EXPECT_EQ(shared_bytes(192, 64, 2, 2, 1) - shared_bytes(192, 64, 2, 2, 1, 128), 2 * 64 * 64 * 2);
  // The entry encoding.
  EXPECT_EQ(entry_key0(640 * kEntryScale + 3), 640);
  EXPECT_TRUE(entry_kept_by(640 * kEntryScale + 2, 1));
  EXPECT_FALSE(entry_kept_by(640 * kEntryScale + 2, 0));
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
        const int rule = blocksparse::sm90_wgmma::check(
            head_dim, int(c.get("tile_n")), int(c.get("stages")), int(c.get("consumers")),
            int(c.get("ctas_per_sm")), block);
        const Support support = variant.check(batch, c, target);
        EXPECT_EQ(support.ok, rule == blocksparse::sm90_wgmma::kOk)
            << c.key() << " block " << block;
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
           {make_config(64, 3, 2, 1), "two CTAs per SM need"},
           {make_config(64, 5, 1, 1), "stages must be"},
           {make_config(64, 2, 4, 1), "ctas_per_sm must be 1 or 2"},
           {make_config(64, 2, 2, 2), "ctas_per_sm must be 1 with consumers 2"},
       }) {
    const Support s = variant.check(batch, r.config, target);
    EXPECT_FALSE(s.ok) << r.config.key();
    EXPECT_NE(s.reason.find(r.mentions), std::string::npos) << s.reason;
  }
  const Support small_block =
      variant.check(prefill_batch(128, DType::bf16, 32), make_config(64, 2, 1, 1), target);
  EXPECT_NE(small_block.reason.find("64 (the query rows of a consumer warpgroup, and the keys"),
            std::string::npos)
      << small_block.reason;
  // Head dim 256 in 64-key tiles; 128-key tiles need more shared memory than a block has.
  EXPECT_TRUE(variant.check(prefill_batch(256), make_config(64, 2, 1, 1), target).ok);
  const Support wide = variant.check(prefill_batch(256), make_config(128, 2, 1, 1), target);
  EXPECT_FALSE(wide.ok);
  EXPECT_NE(wide.reason.find("shared memory"), std::string::npos) << wide.reason;
  KernelConfig extra = make_config(64, 2, 2, 1);
  extra.set("tile_m", 64);
  EXPECT_FALSE(variant.check(batch, extra, target).ok);
}

TEST(BlockSparseSm90Gating, OnlySm90aAndTheFamilysFeatures) {
  const Registry registry = make_registry();
  const Variant& variant = sm90_variant(registry);
  const Batch batch = prefill_batch(128);
  const KernelConfig config = variant.default_config(batch, testing::hopper_target());
  EXPECT_TRUE(variant.check(batch, config, testing::hopper_target()).ok);
  const Support ampere = variant.check(batch, config, testing::ampere_target());
  EXPECT_FALSE(ampere.ok);
  EXPECT_NE(ampere.reason.find("needs sm_90a"), std::string::npos) << ampere.reason;
  EXPECT_FALSE(variant.check(batch, config, Target::cpu()).ok);
  // blocksparse.sm80_mma remains for what this variant refuses.
  const Variant& mma = *registry.find("blocksparse.sm80_mma");
  EXPECT_TRUE(mma.check(batch, mma.default_config(batch, testing::ampere_target()),
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
      {"no layout", "dense causal attention", [](Batch& b) { b.block_sparse.reset(); }},
      {"soft-cap", "soft-cap", [](Batch& b) { b.logits_soft_cap = 30.0f; }},
      {"sliding window", "sliding window", [](Batch& b) { b.sliding_window = 16; }},
      {"sinks", "sinks", [](Batch& b) { b.sink_logits.assign(8, 1.0f); }},
      // Through the pass that converts the gathered codes to 16-bit before the kernel.
      {"fp8 KV", "",
       [](Batch& b) {
         b.kv_dtype = DType::fp8_e4m3;
         b.k_scales = {0.01f};
         b.v_scales = {0.02f};
       }},
  };
  for (const Feature& feature : features) {
    Batch b = batch;
    feature.apply(b);
    const Support s = variant.check(b, config, testing::hopper_target());
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
        const Support s = variant.check(batch, variant.default_config(batch, target), target);
        EXPECT_TRUE(s.ok) << head_dim << " " << block << ": " << s.reason;
      }
    }
  }
  const Batch batch = prefill_batch(128);
  EXPECT_EQ(variant.full_name(variant.default_config(batch, target)),
            "blocksparse.sm90_wgmma.c2.ctas_per_sm1.st2.tn128");
  const JitProgram program = variant.programs(batch, make_config(64, 3, 1, 2), target).front();
  EXPECT_EQ(program.kernels.at(0), "attn::blocksparse_sm90_wgmma<0, 128, 128, 64, 3, 2, 1, true>");
  EXPECT_EQ(program.kernels.at(1), "attn::flash_fwd_gather_kv");
  EXPECT_EQ(program.arch, "sm_90a");
}

// What row `pos` of consumer warpgroup w (first position pos_w) sees of the 64 keys of plan entry
// `entry` (the kernel's decision, sm90_wgmma.cuh): nothing of a run its block row does not keep;
// the element mask on kept runs reaching mask_from; else the whole run.
bool sm90_kernel_sees(bool causal, int64_t kv_len, int64_t pos_w, int w, int64_t pos, int64_t key,
                      int32_t entry) {
  if (!blocksparse::sm90_wgmma::entry_kept_by(entry, w)) return false;
  const int64_t mask_from = causal ? std::min(kv_len, pos_w + 1) : kv_len;
  if (blocksparse::sm90_wgmma::entry_key0(entry) + blocksparse::sm90_wgmma::kEntryKeys <= mask_from)
    return true;
  return key < kv_len && (!causal || key <= pos);
}

// Random batches (contexts that start anywhere in a block, lengths off every tile, GQA) and random
// Phi-3 layouts of blocks 64, 128 and 256, at one and two consumers and each tile_n: the plan
// lists every (position tile with a new token, q head) once, heaviest tiles first with their heads
// adjacent; each item's entries increase by key, in whole key tiles, are tagged with the consumers
// that keep them (untagged: only the padding of the last tile, which repeats the last real
// entry's keys), and each consumer's tile count ends at the tile of its last kept entry; for every
// query row and head, the keys the plan and the kernel's mask decision let through are exactly
// key_visible's, each once.
TEST(BlockSparseSm90Plan, KernelMaskSeesExactlyTheVisibleKeys) {
  using namespace blocksparse::sm90_wgmma;
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
    for (int consumers : {1, 2}) {
      const int rows = tile_m(consumers);
      for (int tile_n : {64, 128}) {
        const int per_tile = entries_per_tile(tile_n);
        SCOPED_TRACE("trial " + std::to_string(trial) + " consumers " + std::to_string(consumers) +
                     " tile_n " + std::to_string(tile_n));
        const BlockSparseSm90Plan plan = blocksparse_sm90_plan(batch, consumers, tile_n);
        std::set<std::tuple<int, int, int>> listed;
        int64_t covered_rows = 0, previous_weight = std::numeric_limits<int64_t>::max();
        int64_t weight = 0;  // entries of the current tile, summed over its heads
        int32_t next_entry = 0;
        for (int64_t i = 0; i < plan.num_items(); ++i) {
          const int32_t* item = plan.items.data() + i * kItemInts;
          const int s = item[kItemSeq], t = item[kItemTile], h = item[kItemQHead];
          ASSERT_TRUE(listed.insert({s, t, h}).second) << "item listed twice";
          // The heads of a tile are adjacent, in order; tiles come heaviest first.
          EXPECT_EQ(h, int(i % batch.spec.model.num_q_heads));
          if (h == 0) weight = 0;
          const int n_entries = item[kItemTiles] * per_tile;
          weight += n_entries;
          if (h == batch.spec.model.num_q_heads - 1) {
            EXPECT_LE(weight, previous_weight);
            previous_weight = weight;
          }
          EXPECT_EQ(item[kItemFirstEntry], next_entry);
          next_entry += n_entries;
          const int32_t* entries = plan.entries.data() + item[kItemFirstEntry];
          int real = 0;  // entries before the padding
          int kept_last_tile = 0;
          for (int n = 0; n < n_entries; ++n) {
            const int bits = entries[n] % kEntryScale;
            EXPECT_LT(bits, 1 << consumers);
            if (bits == 0) {  // padding: the last real entry's keys, in the last tile only
              ASSERT_GT(n, 0);
              EXPECT_EQ(entry_key0(entries[n]), entry_key0(entries[n - 1]));
              EXPECT_EQ(n / per_tile, item[kItemTiles] - 1);
              continue;
            }
            EXPECT_EQ(real, n) << "a kept entry after the padding";
            ++real;
            if (n > 0) {
              EXPECT_GT(entry_key0(entries[n]), entry_key0(entries[n - 1]));
            }
            for (int w = 0; w < consumers; ++w) {
              if (entry_kept_by(entries[n], w)) {
                EXPECT_LT(n / per_tile, item[kItemConsumerTiles + w]);
                kept_last_tile = std::max(kept_last_tile, n / per_tile + 1);
              }
            }
          }
          EXPECT_EQ(kept_last_tile, item[kItemTiles]);
          EXPECT_LT(n_entries - real, per_tile);
          const int64_t kv_len = batch.kv_lens[size_t(s)], context = batch.context_lens[size_t(s)];
          for (int w = 0; w < consumers; ++w) {
            const int my_entries = item[kItemConsumerTiles + w] * per_tile;
            EXPECT_LE(my_entries, n_entries);
            const int64_t pos_w = int64_t(t) * rows + int64_t(w) * kRowsPerConsumer;
            const int64_t last = std::min(pos_w + kRowsPerConsumer, kv_len) - 1;
            if (h == 0 && last >= std::max(pos_w, context))
              covered_rows += last + 1 - std::max(pos_w, context);
            for (int64_t pos = std::max(pos_w, context); pos <= last; ++pos) {
              std::set<int64_t> seen, visible;
              for (int n = 0; n < my_entries; ++n) {
                const int64_t key0 = entry_key0(entries[n]);
                for (int64_t key = key0; key < key0 + kEntryKeys; ++key) {
                  if (sm90_kernel_sees(causal, kv_len, pos_w, w, pos, key, entries[n])) {
                    EXPECT_TRUE(seen.insert(key).second);
                  }
                }
              }
              for (int64_t key = 0; key < kv_len; ++key) {
                if (key_visible(batch, s, h, pos - context, key)) visible.insert(key);
              }
              ASSERT_EQ(seen, visible) << "seq " << s << " pos " << pos << " head " << h;
            }
          }
        }
        EXPECT_EQ(size_t(next_entry), plan.entries.size());
        EXPECT_EQ(covered_rows, batch.total_q);
        // Every (position tile with a new token, q head) is listed.
        int64_t expected_items = 0;
        for (int s = 0; s < batch.num_seqs; ++s) {
          if (batch.query_lens[size_t(s)] == 0) continue;
          const int64_t first = batch.context_lens[size_t(s)] / rows;
          const int64_t end = (batch.kv_lens[size_t(s)] + rows - 1) / rows;
          expected_items += (end - first) * batch.spec.model.num_q_heads;
        }
        EXPECT_EQ(plan.num_items(), expected_items);
      }
    }
  }
}

// On issue 7's layout (blocks of 64, local 16, vertical stride 8, heads sliding by 1), the two
// consumers' block rows are adjacent and keep nearly the same blocks: the union a CTA loads is
// within a few percent of one row's walk, so two consumers halve the K/V loads per query row.
TEST(BlockSparseSm90Plan, TwoConsumersShareNearlyEveryTileOnThePhi3Layout) {
  using namespace blocksparse::sm90_wgmma;
  testing::SpecShape shape;
  shape.q_heads = 4;
  shape.kv_heads = 1;
  shape.head_dim = 128;
  WorkloadSpec spec = testing::make_spec(shape, {{0, 4096}}, "bs-sm90-share");
  spec.mask.block_sparse = phi3_layout(64, 16, 8, 1);
  const Batch batch = generate_batch(spec);
  const BlockSparseSm90Plan one = blocksparse_sm90_plan(batch, 1, 64);
  const BlockSparseSm90Plan two = blocksparse_sm90_plan(batch, 2, 64);
  EXPECT_EQ(one.num_items(), 2 * two.num_items());
  int64_t kept = 0;  // the tiles the two consumers walk, each one's own
  for (int64_t i = 0; i < two.num_items(); ++i) {
    const int32_t* entries =
        two.entries.data() + two.items[size_t(i) * kItemInts + kItemFirstEntry];
    for (int n = 0; n < two.items[size_t(i) * kItemInts + kItemTiles]; ++n)  // tile_n 64: 1 each
      kept += entry_kept_by(entries[n], 0) + entry_kept_by(entries[n], 1);
  }
  EXPECT_EQ(kept, int64_t(one.entries.size()));  // the same walks, split in pairs of rows
  const double loads_per_walk = double(two.entries.size()) / double(one.entries.size());
  EXPECT_LT(loads_per_walk, 0.56) << two.entries.size() << " of " << one.entries.size();
  EXPECT_GT(loads_per_walk, 0.5);
}

// Every accepted config, bf16 and fp16, head dims 64 and 128, causal and not (blocks of 128 so
// both tile sizes are accepted), and at head dims 80, 96, 192, 256 and 192 with a V of 128 causal
// in bf16 and not in fp16, and each head dim over an fp8 cache (fp16, causal), compiled by NVRTC
// for sm_90a: ptxas reports registers and no
// spills, no stack frame, no ignored setmaxnreg and no serialised wgmma; every third accepted
// config of a batch, rotating with the batch (testing::compiles_config), unless
// ATTN_TEST_EXHAUSTIVE=1. ATTN_TEST_VERBOSE=1 prints ptxas' report.
TEST(BlockSparseSm90Compile, EveryAcceptedConfigCompilesForSm90aWithoutSpills) {
  // Accepted configs at blocks of 128 (tile_n 64 and 128, stages 2..4, 1 or 2 CTAs, 1 or 2
  // consumers): see RulesNameTheFirstBrokenConstraint for why the others are refused.
  constexpr int kAcceptedD64 = 17, kAcceptedD128 = 11;
  const fs::path dir = fs::temp_directory_path() /
                       ("attn-blocksparse-sm90-jit-" +
                        std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  fs::remove_all(dir);
  JitCompiler jit(JitOptions{dir.string(), /*use_cache=*/false});
  const Registry registry = make_registry();
  const Variant& variant = sm90_variant(registry);
  const Target target = testing::hopper_target();
  std::vector<testing::CompileJob> jobs;
  std::vector<Batch> batches;  // programs() reads the batch; keep them alive
  const std::vector<std::pair<int, int>> dims = {{64, 0},  {128, 0}, {80, 0},   {96, 0},
                                                 {192, 0}, {256, 0}, {192, 128}};
  batches.reserve(5 * dims.size());
  auto compile_accepted = [&](const Batch& batch, bool sampled) {
    const int head_dim = batch.spec.model.head_dim;
    const int accepted = testing::queue_accepted_compiles(
        variant, batch, target, space_configs(variant, batch, target), batches.size(), jit, jobs);
    if (sampled) {
      EXPECT_GT(accepted, 0) << head_dim;
    } else {
      EXPECT_EQ(accepted, head_dim == 64 ? kAcceptedD64 : kAcceptedD128) << head_dim;
    }
  };
  for (const auto& [head_dim, v_head_dim] : dims) {
    const bool sampled = head_dim != 64 && head_dim != 128;
    for (DType dtype : {DType::bf16, DType::fp16}) {
      for (bool causal : {true, false}) {
        if (sampled && causal != (dtype == DType::bf16)) continue;
        batches.push_back(prefill_batch(head_dim, dtype, 128, causal, v_head_dim));
        compile_accepted(batches.back(), sampled);
      }
    }
    // An fp8 cache (the K and V scales in the kernel, the pass beside it), causal in fp16.
    batches.push_back(prefill_batch(head_dim, DType::fp16, 128, true, v_head_dim, true));
    compile_accepted(batches.back(), true);
  }
  const std::regex spills("([1-9][0-9]*) bytes (spill stores|spill loads|stack frame)");
  for (testing::CompileJob& job : jobs) {
    try {
      const CompiledProgram compiled = job.compiled.get();
      // The gather and the kernel, and over an fp8 cache the conversion pass.
      const size_t kernels = job.what.find("fp8") != std::string::npos ? 3u : 2u;
      EXPECT_EQ(compiled.lowered_names.size(), kernels) << job.what;
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
