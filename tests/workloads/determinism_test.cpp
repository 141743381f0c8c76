// The same spec gives the same batch: identical metadata and identical tensor bytes across two
// generations; another seed gives another batch. Also the fp8 and shared-prefix data rules.
#include <gtest/gtest.h>

#include "base/sha256.hpp"
#include "tests/workloads/test_util.hpp"
#include "workloads/batch_data.hpp"
#include "workloads/presets.hpp"

namespace attn {
namespace {

template <typename T>
std::string bytes_of(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

std::string metadata_hash(const Batch& b) {
  return sha256_hex(bytes_of(b.context_lens) + bytes_of(b.query_lens) + bytes_of(b.page_indices) +
                    bytes_of(padded_block_table(b)) + bytes_of(b.slot_mapping) +
                    bytes_of(b.prefix_source) + bytes_of(b.shared_prefix_len) +
                    bytes_of(b.k_scales) + bytes_of(b.v_scales) + bytes_of(b.sink_logits) +
                    std::to_string(b.poison_page) + std::to_string(b.num_pages));
}

std::string data_hash(const Batch& b) {
  const size_t kv_size = size_of(b.kv_dtype);
  std::string k(size_t(pool_elements(b, DataStream::key)) * kv_size, '\0');
  std::string v(size_t(pool_elements(b, DataStream::value)) * kv_size, '\0');
  std::string q(size_t(query_elements(b)) * size_of(b.dtype), '\0');
  fill_kv_pool(b, DataStream::key, k.data());
  fill_kv_pool(b, DataStream::value, v.data());
  fill_query(b, q.data());
  return sha256_hex(k + v + q);
}

WorkloadSpec mixed_spec(uint64_t seed) {
  nlohmann::json doc = test::valid_workload_json();
  doc["schema_version"] = 2;
  doc["model"]["kv_dtype"] = "fp8_e4m3";
  doc["model"]["kv_scale"] = "per_head";
  doc["model"]["attention_sinks"] = true;
  doc["kv_cache"] = {{"page_size", 7},
                     {"layout", "vllm"},
                     {"allocation", "shared_prefix"},
                     {"shared_prefix", {{"tokens", 30}, {"group_size", 3}}}};
  doc["sequences"] = nlohmann::json::parse(R"([
    {"context_len": {"distribution": "lognormal", "median": 60, "sigma": 0.7, "min": 20,
                     "max": 400}, "query_len": {"distribution": "uniform", "min": 1, "max": 5},
     "count": 7},
    {"trace": {"file": "builtin:chat-sample", "phase": "chunked_prefill", "chunk": 64,
               "count": 3}}])");
  doc["seed"] = seed;
  return parse_workload(doc.dump(), "t");
}

TEST(Determinism, SameSpecSameBatchOtherSeedOtherBatch) {
  const Batch a = generate_batch(mixed_spec(11));
  const Batch b = generate_batch(mixed_spec(11));
  const Batch c = generate_batch(mixed_spec(12));
  EXPECT_EQ(metadata_hash(a), metadata_hash(b));
  EXPECT_EQ(data_hash(a), data_hash(b));
  EXPECT_NE(metadata_hash(a), metadata_hash(c));
  EXPECT_NE(data_hash(a), data_hash(c));
  for (const char* name : {"decode-llama3-8b-lognormal-96", "mixed-chunked-prefill-llama3-8b",
                           "decode-chat-trace-llama3-8b"}) {
    EXPECT_EQ(metadata_hash(generate_batch(load_preset(name))),
              metadata_hash(generate_batch(load_preset(name))))
        << name;
  }
}

TEST(Fp8Data, PoolHoldsCodesOfValueOverScaleAndHeadsHaveTheirOwnScales) {
  const Batch b = generate_batch(mixed_spec(3));
  ASSERT_EQ(b.kv_dtype, DType::fp8_e4m3);
  ASSERT_EQ(b.k_scales.size(), 2u);
  EXPECT_NE(b.k_scales[0], b.k_scales[1]);
  EXPECT_NE(b.k_scales[0], b.v_scales[0]);
  ASSERT_EQ(b.sink_logits.size(), 8u);
  for (float s : b.sink_logits) {
    EXPECT_GE(s, -1.0f);
    EXPECT_LT(s, 3.0f);
  }
  for (DataStream stream : {DataStream::key, DataStream::value}) {
    std::vector<uint8_t> pool(size_t(pool_elements(b, stream)), 0);
    fill_kv_pool(b, stream, pool.data());
    const auto& scales = stream == DataStream::key ? b.k_scales : b.v_scales;
    int large_codes = 0;
    for (int s = 0; s < b.num_seqs; ++s) {
      for (int64_t pos = 0; pos < b.kv_lens[size_t(s)]; pos += 3) {
        const int32_t page = b.page_indices[size_t(b.page_indptr[size_t(s)] + pos / 7)];
        for (int h = 0; h < 2; ++h) {
          for (int d = 0; d < 64; d += 9) {
            const uint8_t code = pool[size_t(pool_offset(b, stream, page, int(pos % 7), h, d))];
            ASSERT_EQ(fp8_e4m3_to_float(code) * scales[size_t(h)],
                      stored_kv_value(b, stream, s, pos, h, d));
            large_codes += std::fabs(fp8_e4m3_to_float(code)) > 224.0f;
          }
        }
      }
    }
    EXPECT_GT(large_codes, 0) << "codes should use the fp8 range";
  }
  const Batch per_tensor = [] {
    WorkloadSpec spec = mixed_spec(3);
    spec.model.kv_scale = KvScaleGranularity::per_tensor;
    return generate_batch(spec);
  }();
  EXPECT_EQ(per_tensor.k_scales.size(), 1u);
}

TEST(SharedPrefixData, SharedPositionsReadTheSourcesValues) {
  const Batch b = generate_batch(mixed_spec(5));
  int checked = 0;
  for (int s = 0; s < b.num_seqs; ++s) {
    const int src = b.prefix_source[size_t(s)];
    for (int64_t pos = 0; pos < b.shared_prefix_len[size_t(s)]; ++pos) {
      ASSERT_EQ(kv_value(b, DataStream::key, s, pos, 1, 3),
                kv_value(b, DataStream::key, src, pos, 1, 3));
      ++checked;
    }
    if (b.shared_prefix_len[size_t(s)] < b.context_lens[size_t(s)] && src != s) {
      const int64_t pos = b.shared_prefix_len[size_t(s)];
      EXPECT_NE(kv_value(b, DataStream::key, s, pos, 0, 0),
                kv_value(b, DataStream::key, src, pos, 0, 0));
    }
  }
  EXPECT_GT(checked, 0);
}

TEST(VllmLayout, KeyAndValueOffsetsFollowVllmsShapes) {
  WorkloadSpec spec = mixed_spec(1);
  const Batch b = generate_batch(spec);  // fp8: x = 16
  // K [pages, kv_heads, d/x, page, x], V [pages, kv_heads, d, page]; page 7, 2 heads, d 64.
  EXPECT_EQ(pool_offset(b, DataStream::key, 3, 5, 1, 37),
            (((3 * 2 + 1) * 4 + 37 / 16) * 7 + 5) * 16 + 37 % 16);
  EXPECT_EQ(pool_offset(b, DataStream::value, 3, 5, 1, 37), ((3 * 2 + 1) * 64 + 37) * 7 + 5);
}

}  // namespace
}  // namespace attn
