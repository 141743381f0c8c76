// Workloads of multi-head latent attention (model.attention "mla"): what the parser accepts and
// derives, the messages it refuses with, the canonical form, and the batch the generator builds
// (the latent pool, its page table, its deterministic data and fp8 scale, its features).
#include <gtest/gtest.h>

#include <cmath>

#include "tests/workloads/test_util.hpp"
#include "workloads/batch.hpp"
#include "workloads/batch_data.hpp"
#include "workloads/batch_features.hpp"
#include "workloads/presets.hpp"
#include "workloads/workload_validation.hpp"

namespace attn {
namespace {

using nlohmann::json;

json latent_json() {
  return json::parse(R"({
    "schema_version": 2,
    "name": "latent",
    "model": {"attention": "mla", "num_q_heads": 16, "kv_lora_rank": 512, "qk_rope_head_dim": 64,
              "dtype": "bf16"},
    "kv_cache": {"page_size": 64, "layout": "NHD", "allocation": "shuffled"},
    "sequences": [{"context_len": 100, "query_len": 1, "count": 3},
                  {"context_len": 70, "query_len": 3, "count": 2}],
    "seed": 5
  })");
}

WorkloadSpec parse_latent(const json& doc) {
  return parse_workload(doc.dump(), "latent.json");
}

TEST(LatentWorkload, DerivesTheLatentRowAndTheDefaultScale) {
  const WorkloadSpec spec = parse_latent(latent_json());
  EXPECT_TRUE(spec.model.latent());
  EXPECT_EQ(spec.model.num_kv_heads, 1);
  EXPECT_EQ(spec.model.head_dim, 576);  // kv_lora_rank + qk_rope_head_dim
  EXPECT_EQ(spec.model.effective_v_head_dim(), 512);
  EXPECT_EQ(spec.model.kv_pools(), 1);
  EXPECT_FALSE(spec.model.qk_nope_head_dim.has_value());
  // The original model's q/k head: qk_nope_head_dim (128 by default) + qk_rope_head_dim.
  EXPECT_DOUBLE_EQ(spec.effective_softmax_scale(), 1.0 / std::sqrt(192.0));

  json nope = latent_json();
  nope["model"]["qk_nope_head_dim"] = 64;
  EXPECT_DOUBLE_EQ(parse_latent(nope).effective_softmax_scale(), 1.0 / std::sqrt(128.0));
  json stated = latent_json();
  stated["model"]["softmax_scale"] = 0.125;
  EXPECT_DOUBLE_EQ(parse_latent(stated).effective_softmax_scale(), 0.125);

  json explicit_shape = latent_json();  // num_kv_heads 1 and the right head_dim may be written
  explicit_shape["model"]["num_kv_heads"] = 1;
  explicit_shape["model"]["head_dim"] = 576;
  EXPECT_EQ(canonical_json(parse_latent(explicit_shape)), canonical_json(spec));
}

TEST(LatentWorkload, TheCanonicalFormRoundTripsAndLeavesOtherWorkloadsAlone) {
  json doc = latent_json();
  doc["model"]["qk_nope_head_dim"] = 128;
  const WorkloadSpec spec = parse_latent(doc);
  const std::string canonical = canonical_json(spec);
  EXPECT_EQ(canonical_json(parse_workload(canonical, "canonical")), canonical);
  const json model = json::parse(canonical)["model"];
  EXPECT_EQ(model["attention"], "mla");
  EXPECT_EQ(model["kv_lora_rank"], 512);
  EXPECT_EQ(model["qk_rope_head_dim"], 64);
  EXPECT_EQ(model["qk_nope_head_dim"], 128);
  EXPECT_TRUE(validate_workload(spec).empty());

  // A standard workload's canonical form (and so its hash and every database key) has no trace
  // of the new fields, written or defaulted.
  json standard = test::valid_workload_json();
  standard["schema_version"] = 2;
  const std::string before = canonical_json(parse_latent(standard));
  EXPECT_EQ(before.find("attention"), std::string::npos);
  EXPECT_EQ(before.find("kv_lora_rank"), std::string::npos);
  json written = standard;
  written["model"]["attention"] = "mha";
  EXPECT_EQ(content_hash(parse_latent(written)), content_hash(parse_latent(standard)));
}

struct LatentRefusal {
  const char* what;
  json model_patch;  // merged into /model; null values remove the key
  std::vector<std::string> message;
};

TEST(LatentWorkload, RefusesWhatDoesNotApplyToLatentAttentionByPointer) {
  const std::vector<LatentRefusal> cases = {
      {"two kv heads",
       {{"num_kv_heads", 2}},
       {"/model/num_kv_heads: must be absent or 1 for attention \"mla\"", "got 2"}},
      {"rank not a multiple of 64",
       {{"kv_lora_rank", 96}},
       {"/model/kv_lora_rank: must be a multiple of 64 from 64 to 1024, got 96"}},
      {"rank too large",
       {{"kv_lora_rank", 1088}},
       {"/model/kv_lora_rank: must be a multiple of 64 from 64 to 1024, got 1088"}},
      {"rank missing", {{"kv_lora_rank", nullptr}}, {"/model/kv_lora_rank", "missing"}},
      {"rope a string",
       {{"qk_rope_head_dim", "64"}},
       {"/model/qk_rope_head_dim: must be a multiple of 16 from 16 to 128, got string"}},
      {"head_dim not the row width",
       {{"head_dim", 128}},
       {"/model/head_dim: is kv_lora_rank + qk_rope_head_dim (576) for attention \"mla\"",
        "got 128"}},
      {"per-head fp8 scales",
       {{"kv_dtype", "fp8_e4m3"}, {"kv_scale", "per_head"}},
       {"/model/kv_scale: must be \"per_tensor\" for attention \"mla\""}},
      {"soft-cap", {{"logits_soft_cap", 30.0}}, {"/model/logits_soft_cap: is not supported"}},
      {"sinks", {{"attention_sinks", true}}, {"/model/attention_sinks: is not supported"}},
      {"unknown attention",
       {{"attention", "gqa"}},
       {"/model/attention: must be one of \"mha\", \"mla\", got \"gqa\""}},
  };
  for (const LatentRefusal& c : cases) {
    json doc = latent_json();
    for (const auto& [key, value] : c.model_patch.items()) {
      if (value.is_null()) {
        doc["model"].erase(key);
      } else {
        doc["model"][key] = value;
      }
    }
    const std::vector<std::string> problems = test::problems_of(doc);
    EXPECT_TRUE(test::has_problem(problems, c.message)) << c.what << ":\n"
                                                        << test::joined(problems);
  }
}

TEST(LatentWorkload, RefusesOtherLayoutsMasksAndLatentFieldsOnStandardAttention) {
  json hnd = latent_json();
  hnd["kv_cache"]["layout"] = "HND";
  EXPECT_TRUE(test::has_problem(test::problems_of(hnd),
                                {"/kv_cache/layout: must be \"NHD\" for attention \"mla\""}));
  json masked = latent_json();
  masked["mask"] = {{"explicit", {{"kind", "causal"}}}};
  EXPECT_TRUE(test::has_problem(test::problems_of(masked),
                                {"/mask/explicit: is not supported for attention \"mla\""}));
  json standard = test::valid_workload_json();
  standard["schema_version"] = 2;
  standard["model"]["qk_rope_head_dim"] = 64;
  EXPECT_TRUE(test::has_problem(test::problems_of(standard),
                                {"/model/qk_rope_head_dim: only applies to attention \"mla\""}));
  json version_one = latent_json();
  version_one["schema_version"] = 1;
  EXPECT_TRUE(test::has_problem(test::problems_of(version_one),
                                {"/model/attention: needs schema_version 2"}));
}

TEST(LatentWorkload, TheLatentPoolIsOneBufferCountedOnceAgainstTheLimit) {
  json doc = latent_json();
  doc["sequences"] = {{{"context_len", 1 << 20}, {"query_len", 1}, {"count", 40}}};
  doc["model"]["kv_lora_rank"] = 1024;
  doc["model"]["qk_rope_head_dim"] = 128;
  // 40 * (2^20 + 1) tokens, rounded up to 64-token pages, * 1152 * 2 bytes is about 90 GiB.
  EXPECT_TRUE(test::has_problem(test::problems_of(doc),
                                {"/sequences: the latent pool size in bytes (1 * ", "64 GiB"}));
  const WorkloadSpec spec = parse_latent(latent_json());
  const WorkloadTotals t = workload_totals(spec);
  EXPECT_EQ(t.kv_pool_bytes, t.num_pages * 64 * 576 * 2);
}

TEST(LatentWorkload, TheBatchHoldsOneLatentPoolThroughAPageTable) {
  const Batch batch = generate_batch(parse_latent(latent_json()));
  EXPECT_EQ(batch.num_seqs, 5);
  EXPECT_EQ(batch.total_q, 3 * 1 + 2 * 3);
  EXPECT_EQ(pool_elements(batch, DataStream::key), batch.num_pages * 64 * 576);
  EXPECT_EQ(query_elements(batch), batch.total_q * 16 * 576);
  EXPECT_EQ(output_elements(batch), batch.total_q * 16 * 512);
  // Every sequence's pages, each page once (no sharing here), the poison page apart.
  std::vector<int> seen(size_t(batch.num_pages), 0);
  for (int s = 0; s < batch.num_seqs; ++s) {
    const int64_t pages = batch.page_indptr[size_t(s) + 1] - batch.page_indptr[size_t(s)];
    EXPECT_EQ(pages, (batch.kv_lens[size_t(s)] + 63) / 64);
    for (int32_t k = batch.page_indptr[size_t(s)]; k < batch.page_indptr[size_t(s) + 1]; ++k) {
      ++seen[size_t(batch.page_indices[size_t(k)])];
    }
  }
  for (size_t p = 0; p < seen.size(); ++p) {
    EXPECT_EQ(seen[p], int32_t(p) == batch.poison_page ? 0 : 1) << p;
  }
  EXPECT_TRUE(batch.k_scales.empty());
}

TEST(LatentWorkload, GenerationIsDeterministicAndTheDataIgnoresPaging) {
  const Batch a = generate_batch(parse_latent(latent_json()));
  const Batch b = generate_batch(parse_latent(latent_json()));
  EXPECT_EQ(a.page_indices, b.page_indices);
  EXPECT_EQ(a.spec_hash, b.spec_hash);
  std::vector<uint8_t> pool_a(size_t(pool_elements(a, DataStream::key)) * 2), pool_b(pool_a.size());
  fill_kv_pool(a, DataStream::key, pool_a.data());
  fill_kv_pool(b, DataStream::key, pool_b.data());
  EXPECT_EQ(pool_a, pool_b);

  json other = latent_json();
  other["kv_cache"]["page_size"] = 1;
  other["kv_cache"]["allocation"] = "sequential";
  const Batch c = generate_batch(parse_latent(other));
  EXPECT_NE(a.num_pages, c.num_pages);
  // The same (sequence, position, dim) holds the same latent value however it is paged, and the
  // pool holds it where the page table says.
  for (int s : {0, 4}) {
    for (int64_t pos : {int64_t(0), int64_t(63), int64_t(64), a.kv_lens[size_t(s)] - 1}) {
      for (int d : {0, 511, 512, 575}) {
        const float value = stored_kv_value(a, DataStream::key, s, pos, 0, d);
        EXPECT_EQ(value, stored_kv_value(c, DataStream::key, s, pos, 0, d));
        const int64_t page = a.page_indices[size_t(a.page_indptr[size_t(s)] + pos / 64)];
        const int64_t at = pool_offset(a, DataStream::key, page, int(pos % 64), 0, d);
        EXPECT_EQ(load_as_float(pool_a.data(), size_t(at), DType::bf16), value);
      }
    }
  }
  json seeded = latent_json();
  seeded["seed"] = 6;
  EXPECT_NE(stored_kv_value(generate_batch(parse_latent(seeded)), DataStream::key, 0, 5, 0, 5),
            stored_kv_value(a, DataStream::key, 0, 5, 0, 5));
}

TEST(LatentWorkload, AnFp8LatentCacheHasOnePerTensorScale) {
  json doc = latent_json();
  doc["model"]["kv_dtype"] = "fp8_e4m3";
  const Batch batch = generate_batch(parse_latent(doc));
  ASSERT_EQ(batch.k_scales.size(), 1u);
  EXPECT_EQ(batch.v_scales, batch.k_scales);  // V is the same latent tensor
  EXPECT_GT(batch.k_scales[0], 0.0f);
  const BatchFeatures used = batch_features(batch);
  const FeatureUse* kv = used.find(feature::kKvDtype);
  ASSERT_NE(kv, nullptr);
  EXPECT_EQ(kv->value, "fp8_e4m3.per_tensor");
}

TEST(LatentWorkload, ALatentBatchReportsItsFeaturesInsteadOfAHeadDim) {
  const BatchFeatures used = batch_features(generate_batch(parse_latent(latent_json())));
  EXPECT_NE(used.find(feature::kLatentAttention), nullptr);
  ASSERT_NE(used.find(feature::kKvLoraRank), nullptr);
  EXPECT_EQ(*used.find(feature::kKvLoraRank)->number, 512);
  ASSERT_NE(used.find(feature::kQkRopeHeadDim), nullptr);
  EXPECT_EQ(*used.find(feature::kQkRopeHeadDim)->number, 64);
  EXPECT_EQ(used.find(feature::kHeadDim), nullptr);
  EXPECT_EQ(used.find(feature::kQueries)->value, "mixed");  // 1 and 3 query tokens
  const BatchFeatures standard =
      batch_features(generate_batch(parse_latent(test::valid_workload_json())));
  EXPECT_EQ(standard.find(feature::kLatentAttention), nullptr);
  EXPECT_EQ(standard.find(feature::kKvLoraRank), nullptr);
}

TEST(LatentWorkload, ThePresetsDescribeTheirModels) {
  const WorkloadSpec v3 = load_preset("decode-deepseek-v3-mla-64x4096");
  EXPECT_EQ(v3.model.num_q_heads, 128);
  EXPECT_EQ(v3.model.kv_lora_rank, 512);
  EXPECT_EQ(v3.model.qk_rope_head_dim, 64);
  EXPECT_EQ(v3.kv_cache.page_size, 64);
  EXPECT_EQ(load_preset("decode-deepseek-v3-tp8-mla-64x4096").model.num_q_heads, 16);
  EXPECT_EQ(load_preset("decode-kimi-k2-mla-64x4096").model.num_q_heads, 64);
  EXPECT_EQ(load_preset("decode-deepseek-v3-mla-fp8-128x4096").model.effective_kv_dtype(),
            DType::fp8_e4m3);
  const Batch speculative =
      generate_batch(load_preset("decode-deepseek-v3-mla-speculative-64x4096"));
  EXPECT_GE(*std::min_element(speculative.query_lens.begin(), speculative.query_lens.end()), 2);
  EXPECT_LE(speculative.max_query_len(), 4);
  EXPECT_NE(std::min_element(speculative.query_lens.begin(), speculative.query_lens.end()),
            std::max_element(speculative.query_lens.begin(), speculative.query_lens.end()));
  for (const char* name :
       {"decode-deepseek-v3-mla-64x4096", "decode-deepseek-v3-tp8-mla-64x4096",
        "decode-kimi-k2-mla-64x4096", "decode-deepseek-v3-mla-speculative-64x4096",
        "decode-deepseek-v3-mla-fp8-128x4096"}) {
    const WorkloadTotals t = workload_totals(load_preset(name));
    EXPECT_GE(t.kv_pool_bytes, int64_t(256) << 20) << name;
  }
  // The fp8 twins of the 128-head and the TP8 preset: the same batch, the cache in half the bytes.
  for (const auto& [fp8, wide] :
       {std::pair{"decode-deepseek-v3-mla-fp8-64x4096", "decode-deepseek-v3-mla-64x4096"},
        std::pair{"decode-deepseek-v3-tp8-mla-fp8-64x4096",
                  "decode-deepseek-v3-tp8-mla-64x4096"}}) {
    WorkloadSpec twin = load_preset(fp8);
    EXPECT_EQ(twin.model.effective_kv_dtype(), DType::fp8_e4m3) << fp8;
    EXPECT_EQ(workload_totals(twin).kv_pool_bytes * 2,
              workload_totals(load_preset(wide)).kv_pool_bytes)
        << fp8;
    twin.model.kv_dtype.reset();
    twin.name = wide;
    twin.description = load_preset(wide).description;
    EXPECT_EQ(canonical_json(twin), canonical_json(load_preset(wide))) << fp8;
  }
}

}  // namespace
}  // namespace attn
