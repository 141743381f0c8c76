// mla_decode.cpu_reference: the two CPU oracles agree on latent batches, the variant takes the
// family's batches and nothing else, every variant of another family declines a latent batch by
// name, and the family's work counts the latent cache once.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/mla_decode/mla_decode_variants.hpp"
#include "kernels/problem.hpp"
#include "kernels/reference/paged_attention_reference.hpp"
#include "kernels/registry.hpp"
#include "tests/kernels/mla_decode/latent_batch.hpp"
#include "tests/target_fixtures.hpp"
#include "workloads/presets.hpp"

namespace attn {
namespace {

const char* const kLatentPresets[] = {"decode-deepseek-v3-mla-64x4096",
                                      "decode-deepseek-v3-tp8-mla-64x4096",
                                      "decode-kimi-k2-mla-64x4096",
                                      "decode-deepseek-v3-mla-speculative-64x4096",
                                      "decode-deepseek-v3-mla-fp8-128x4096",
                                      "decode-deepseek-v3-mla-fp8-64x4096",
                                      "decode-deepseek-v3-tp8-mla-fp8-64x4096"};

// The paged oracle (reads the latent pool through the page table) equals the dense one (every
// value from the data rule), whatever the page size, allocation, mask and cache dtype.
TEST(MlaDecodeCpuReference, PagedOracleEqualsDenseOracle) {
  std::vector<testing::LatentShape> shapes;
  for (int page : {1, 8, 64, 256}) {
    testing::LatentShape shape;
    shape.page_size = page;
    shapes.push_back(shape);
  }
  testing::LatentShape fp8;
  fp8.kv_dtype = "fp8_e4m3";
  shapes.push_back(fp8);
  testing::LatentShape non_causal;
  non_causal.causal = false;
  shapes.push_back(non_causal);
  testing::LatentShape wide;
  wide.kv_lora_rank = 512;
  wide.qk_rope_head_dim = 64;
  wide.sequences = {{100, 1}, {7, 2}};
  shapes.push_back(wide);
  for (const testing::LatentShape& shape : shapes) {
    const Batch batch = testing::latent_batch(shape);
    const Problem host = Problem::on_host(batch);
    const std::vector<float> paged = paged_attention_reference(host, 2);
    const std::vector<float> dense = naive_dense_attention(batch, 2);
    ASSERT_EQ(paged.size(), size_t(batch.total_q) * shape.q_heads * shape.kv_lora_rank);
    ASSERT_EQ(paged.size(), dense.size());
    double worst = 0, largest = 0;
    for (size_t i = 0; i < paged.size(); ++i) {
      ASSERT_TRUE(std::isfinite(paged[i])) << i;
      worst = std::max(worst, double(std::fabs(paged[i] - dense[i])));
      largest = std::max(largest, double(std::fabs(dense[i])));
    }
    EXPECT_LT(worst, 1e-6) << "page " << shape.page_size << " " << shape.kv_dtype;
    EXPECT_GT(largest, 0.05);
  }
}

TEST(MlaDecodeCpuReference, TakesEveryLatentPresetOnTheCpuOnly) {
  const Registry registry = make_registry();
  const Variant* reference = registry.find("mla_decode.cpu_reference");
  ASSERT_NE(reference, nullptr);
  EXPECT_EQ(reference->family(), Family::mla_decode);
  for (const char* name : kLatentPresets) {
    const Batch batch = generate_batch(load_preset(name));
    const Support cpu = reference->check(batch, {}, Target::cpu());
    EXPECT_TRUE(cpu.ok) << name << ": " << cpu.reason;
    const Support gpu = reference->check(batch, {}, testing::hopper_target());
    EXPECT_FALSE(gpu.ok) << name;
    EXPECT_EQ(gpu.reason, "runs on the CPU backend only");
  }
}

TEST(MlaDecodeCpuReference, DeclinesStandardAttentionAndLongQueries) {
  const Registry registry = make_registry();
  const Variant* reference = registry.find("mla_decode.cpu_reference");
  ASSERT_NE(reference, nullptr);
  const Support standard =
      reference->check(generate_batch(load_preset("decode-llama3-8b-64x4096")), {}, Target::cpu());
  EXPECT_FALSE(standard.ok);
  EXPECT_NE(standard.reason.find("head dim 128"), std::string::npos) << standard.reason;
  EXPECT_NE(standard.reason.find("paged_decode and prefix_prefill run standard attention"),
            std::string::npos)
      << standard.reason;

  testing::LatentShape prefill;
  prefill.sequences = {{16, kMlaDecodeMaxQueryTokens + 1}};
  const Support longer = reference->check(testing::latent_batch(prefill), {}, Target::cpu());
  EXPECT_FALSE(longer.ok);
  EXPECT_NE(longer.reason.find("up to 8 query tokens"), std::string::npos) << longer.reason;

  testing::LatentShape speculative;
  speculative.sequences = {{16, kMlaDecodeMaxQueryTokens}, {3, 1}};
  EXPECT_TRUE(reference->check(testing::latent_batch(speculative), {}, Target::cpu()).ok);
}

// The feature contract: no variant of another family runs latent attention, and each says so.
TEST(MlaDecodeCpuReference, EveryVariantOfAnotherFamilyDeclinesLatentBatches) {
  const Registry registry = make_registry();
  int declines = 0;
  for (const char* name : kLatentPresets) {
    const Batch batch = generate_batch(load_preset(name));
    for (const auto& variant : registry.variants()) {
      if (variant->family() == Family::mla_decode) continue;
      for (const Target& target :
           {Target::cpu(), testing::hopper_target(), testing::ampere_target()}) {
        const Support s = variant->check(batch, variant->default_config(batch, target), target);
        EXPECT_FALSE(s.ok) << variant->name() << " takes " << name;
        EXPECT_NE(s.reason.find("multi-head latent attention"), std::string::npos)
            << variant->name() << ": " << s.reason;
        ++declines;
      }
    }
  }
  EXPECT_GT(declines, 50);
}

// Bytes and FLOPs of a batch small enough to count by hand: 4 q heads, kv_lora_rank 64,
// qk_rope_head_dim 16, bf16, pages of 8 tokens; sequence 0: 10 cached + 1 new (11 keys, 2 pages),
// sequence 1: 20 cached + 3 new tokens (23 keys, 3 pages; the new tokens see 21, 22 and 23 keys).
TEST(MlaDecodeCpuReference, WorkCountsTheLatentCacheOncePerSequence) {
  testing::LatentShape shape;
  shape.sequences = {{10, 1}, {20, 3}};
  const Batch batch = testing::latent_batch(shape);
  const Work work = mla_decode_work(batch);
  const double q = 4 * 4 * 80 * 2;    // 4 query tokens x 4 heads x (64 + 16) x 2 bytes
  const double out = 4 * 4 * 64 * 2;  // 4 query tokens x 4 heads x 64 x 2 bytes
  const double latent = 34 * 80 * 2;  // 11 + 23 keys, one latent row each, once
  const double page_table = 5 * 4;    // 2 + 3 pages
  EXPECT_DOUBLE_EQ(work.bytes, q + out + latent + page_table);
  EXPECT_DOUBLE_EQ(work.unique_bytes, work.bytes);
  const double pairs = 4 * (11 + 21 + 22 + 23);  // q heads x keys each query token sees
  EXPECT_DOUBLE_EQ(work.flops, pairs * (2 * (64 + 16) + 2 * 64));

  testing::LatentShape fp8 = shape;
  fp8.kv_dtype = "fp8_e4m3";
  const Work fp8_work = mla_decode_work(testing::latent_batch(fp8));
  EXPECT_DOUBLE_EQ(fp8_work.bytes, q + out + latent / 2 + page_table + 4);  // + the one scale
  EXPECT_DOUBLE_EQ(fp8_work.flops, work.flops);
}

}  // namespace
}  // namespace attn
