// model.v_head_dim: V (and the output) narrower than Q and K. Parsing and its rules, the canonical
// form, the pools and the output the batch describes, and the byte and FLOP counts.
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/errors.hpp"
#include "tests/workloads/test_util.hpp"
#include "workloads/batch.hpp"
#include "workloads/batch_data.hpp"
#include "workloads/batch_features.hpp"
#include "workloads/batch_summary.hpp"
#include "workloads/memory_estimate.hpp"
#include "workloads/traffic.hpp"
#include "workloads/visibility.hpp"
#include "workloads/workload_spec.hpp"
#include "workloads/workload_validation.hpp"

namespace attn {
namespace {

using nlohmann::json;
using test::problems_of;

// One decode sequence of 41 keys (40 cached, 1 new), 8 q heads over 2 kv heads, Q/K 192 wide;
// V `v_head_dim` wide when it is not 0.
json narrow_v_workload(int v_head_dim, const char* layout = "NHD") {
  json doc = {
      {"schema_version", 2},
      {"name", "narrow-v"},
      {"model", {{"num_q_heads", 8}, {"num_kv_heads", 2}, {"head_dim", 192}, {"dtype", "bf16"}}},
      {"kv_cache", {{"page_size", 16}, {"layout", layout}, {"allocation", "shuffled"}}},
      {"sequences", json::array({{{"context_len", 40}, {"query_len", 1}, {"count", 1}}})},
      {"seed", 11}};
  if (v_head_dim != 0) doc["model"]["v_head_dim"] = v_head_dim;
  return doc;
}

WorkloadSpec parsed(const json& doc) {
  return parse_workload(doc.dump(), "test.json");
}

TEST(VHeadDim, DefaultsToHeadDim) {
  const WorkloadSpec spec = parsed(narrow_v_workload(0));
  EXPECT_FALSE(spec.model.v_head_dim.has_value());
  EXPECT_EQ(spec.model.effective_v_head_dim(), 192);
}

TEST(VHeadDim, AcceptsTheDeepSeekAndTheHalfWidthPairs) {
  const WorkloadSpec deepseek = parsed(narrow_v_workload(128));
  EXPECT_EQ(deepseek.model.head_dim, 192);
  EXPECT_EQ(deepseek.model.effective_v_head_dim(), 128);
  json half = narrow_v_workload(64);
  half["model"]["head_dim"] = 128;
  EXPECT_EQ(parsed(half).model.effective_v_head_dim(), 64);
}

TEST(VHeadDim, EqualToHeadDimIsTheSameWorkloadAsLeavingItOut) {
  const WorkloadSpec same = parsed(narrow_v_workload(192));
  EXPECT_FALSE(same.model.v_head_dim.has_value());
  EXPECT_EQ(canonical_json(same), canonical_json(parsed(narrow_v_workload(0))));
  EXPECT_EQ(content_hash(same), content_hash(parsed(narrow_v_workload(0))));
}

TEST(VHeadDim, TheCanonicalFormCarriesItAndRoundTrips) {
  const WorkloadSpec spec = parsed(narrow_v_workload(128));
  const json canonical = json::parse(canonical_json(spec));
  EXPECT_EQ(canonical["model"]["v_head_dim"], 128);
  EXPECT_EQ(canonical_json(parse_workload(canonical_json(spec), "again")), canonical_json(spec));
  EXPECT_NE(content_hash(spec), content_hash(parsed(narrow_v_workload(0))));
  EXPECT_TRUE(validate_workload(spec).empty());
}

TEST(VHeadDim, MustBeOneOfTheHeadDims) {
  auto problems = problems_of(narrow_v_workload(100));
  EXPECT_PROBLEM(problems, "/model/v_head_dim: must be one of 64, 80, 96, 128, 192, 256, got 100");
  json text = narrow_v_workload(0);
  text["model"]["v_head_dim"] = "128";
  EXPECT_PROBLEM(problems_of(text), "/model/v_head_dim: expected an integer, got string");
}

TEST(VHeadDim, MustNotBeLargerThanHeadDim) {
  json doc = narrow_v_workload(256);
  EXPECT_PROBLEM(problems_of(doc),
                 "/model/v_head_dim: must not be larger than head_dim (192), got 256");
  doc["model"]["head_dim"] = 128;
  doc["model"]["v_head_dim"] = 192;
  EXPECT_PROBLEM(problems_of(doc),
                 "/model/v_head_dim: must not be larger than head_dim (128), got 192");
}

TEST(VHeadDim, NeedsSchemaVersion2) {
  json doc = narrow_v_workload(128);
  doc["schema_version"] = 1;
  EXPECT_PROBLEM(problems_of(doc), "/model/v_head_dim: needs schema_version 2");
}

TEST(VHeadDim, SpecsBuiltInCodeAreCheckedToo) {
  WorkloadSpec spec = parsed(narrow_v_workload(0));
  spec.model.v_head_dim = 256;
  EXPECT_PROBLEM(validate_workload(spec),
                 "/model/v_head_dim: must not be larger than head_dim (192), got 256");
}

TEST(VHeadDim, ThePoolsAndTheOutputHaveTheirOwnWidths) {
  const Batch b = generate_batch(parsed(narrow_v_workload(128)));
  const int64_t rows = b.num_pages * 16 * 2;  // pages x page_size x kv heads
  EXPECT_EQ(stream_head_dim(b, DataStream::key), 192);
  EXPECT_EQ(stream_head_dim(b, DataStream::value), 128);
  EXPECT_EQ(pool_elements(b, DataStream::key), rows * 192);
  EXPECT_EQ(pool_elements(b, DataStream::value), rows * 128);
  EXPECT_EQ(query_elements(b), 1 * 8 * 192);
  EXPECT_EQ(output_elements(b), 1 * 8 * 128);
}

// Every stored V element sits where pool_offset says, in every layout, and the V pool is exactly
// v_head_dim wide: its last element is the last dim of the last row.
TEST(VHeadDim, TheVPoolHoldsTheDataRuleAtItsOffsets) {
  for (const char* layout : {"NHD", "HND", "vllm"}) {
    SCOPED_TRACE(layout);
    const Batch b = generate_batch(parsed(narrow_v_workload(128, layout)));
    std::vector<uint16_t> pool(size_t(pool_elements(b, DataStream::value)));
    fill_kv_pool(b, DataStream::value, pool.data());
    for (int64_t position : {int64_t(0), int64_t(17), int64_t(40)}) {
      for (int head : {0, 1}) {
        for (int dim : {0, 63, 127}) {
          const int32_t page = b.page_indices[size_t(position / b.page_size)];
          const int64_t at =
              pool_offset(b, DataStream::value, page, int(position % b.page_size), head, dim);
          ASSERT_LT(at, int64_t(pool.size()));
          EXPECT_EQ(load_as_float(pool.data(), size_t(at), b.kv_dtype),
                    stored_kv_value(b, DataStream::value, 0, position, head, dim))
              << "position " << position << " head " << head << " dim " << dim;
        }
      }
    }
    EXPECT_EQ(pool_offset(b, DataStream::value, b.num_pages - 1, b.page_size - 1, 1, 127),
              int64_t(pool.size()) - 1);
  }
}

// The figures below are worked out by hand for narrow_v_workload: one sequence of 41 keys, 8 q
// heads, 2 kv heads, one query token seeing every key; bf16 (2 bytes).
TEST(VHeadDim, MinimumTrafficCountsKAndVAtTheirWidths) {
  const MinimumTraffic t =
      minimum_traffic(generate_batch(parsed(narrow_v_workload(128))), KvStorage::paged);
  EXPECT_EQ(t.kv_rows, 41 * 2);
  EXPECT_DOUBLE_EQ(t.q_bytes, 1 * 8 * 192 * 2);
  EXPECT_DOUBLE_EQ(t.out_bytes, 1 * 8 * 128 * 2);
  EXPECT_DOUBLE_EQ(t.kv_bytes, 41 * 2 * (192 + 128) * 2);
  EXPECT_DOUBLE_EQ(t.unique_kv_bytes, 41 * 2 * (192 + 128) * 2);

  const MinimumTraffic wide =
      minimum_traffic(generate_batch(parsed(narrow_v_workload(0))), KvStorage::paged);
  EXPECT_DOUBLE_EQ(wide.out_bytes, 1 * 8 * 192 * 2);
  EXPECT_DOUBLE_EQ(wide.kv_bytes, 41 * 2 * (192 + 192) * 2);
}

TEST(VHeadDim, UsefulFlopsCountQKAtHeadDimAndPVAtVHeadDim) {
  const Batch narrow = generate_batch(parsed(narrow_v_workload(128)));
  ASSERT_EQ(visible_pairs(narrow), 8 * 41);
  EXPECT_DOUBLE_EQ(useful_flops(narrow), 2.0 * 192 * 8 * 41 + 2.0 * 128 * 8 * 41);
  const Batch wide = generate_batch(parsed(narrow_v_workload(0)));
  EXPECT_DOUBLE_EQ(useful_flops(wide), 4.0 * 192 * 8 * 41);
  EXPECT_DOUBLE_EQ(summarize_batch(narrow).useful_flops, useful_flops(narrow));
}

TEST(VHeadDim, PoolSizesAndTheMemoryEstimateUseBothWidths) {
  const WorkloadSpec spec = parsed(narrow_v_workload(128));
  const Batch b = generate_batch(spec);
  const int64_t pool_rows = b.num_pages * 16 * 2;
  EXPECT_EQ(workload_totals(spec).kv_pool_bytes, pool_rows * (192 + 128) * 2);
  EXPECT_DOUBLE_EQ(summarize_batch(b).kv_pool_bytes, double(pool_rows * (192 + 128) * 2));
  EXPECT_DOUBLE_EQ(summarize_batch(b).kv_bytes, 41.0 * 2 * (192 + 128) * 2);
  const BatchMemory estimate = estimate_batch_memory(spec);
  EXPECT_EQ(estimate.kv_pools, pool_rows * (192 + 128) * 2);
  EXPECT_EQ(estimate.reference, 4 * 8 * 128 + 4 * 8);  // fp32 output rows and their LSE
}

TEST(VHeadDim, IsAFeatureOnlyWhenNarrower) {
  const BatchFeatures narrow = batch_features(generate_batch(parsed(narrow_v_workload(128))));
  const FeatureUse* use = narrow.find(feature::kVHeadDim);
  ASSERT_NE(use, nullptr);
  EXPECT_EQ(use->number, 128);
  EXPECT_EQ(use->description, "V head dim 128 (narrower than Q/K's 192)");
  EXPECT_EQ(narrow.find(feature::kHeadDim)->number, 192);
  EXPECT_EQ(batch_features(generate_batch(parsed(narrow_v_workload(0)))).find(feature::kVHeadDim),
            nullptr);
}

}  // namespace
}  // namespace attn
