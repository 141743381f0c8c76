// What `workload validate` checks without building the batch (workloads/mask_checks.hpp) refuses
// what generate_batch refuses, with the same messages, and accepts what it accepts; the estimate
// of host memory (workloads/memory_estimate.hpp) is at least what the built structures take.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/workloads/mask_test_batch.hpp"
#include "tests/workloads/test_util.hpp"
#include "workloads/batch.hpp"
#include "workloads/batch_data.hpp"
#include "workloads/block_sparse_layout.hpp"
#include "workloads/mask_checks.hpp"
#include "workloads/memory_estimate.hpp"

namespace attn {
namespace {

using nlohmann::json;

json checked_workload(const json& mask) {
  json doc = test::valid_workload_json();
  doc["schema_version"] = 2;
  doc["sequences"] = json::parse(R"([{"context_len": 40, "query_len": 4, "count": 2},
                                     {"context_len": 10, "query_len": 4, "count": 1}])");
  doc["mask"] = mask;
  return doc;
}

// The message generate_batch gives, or "" when it builds.
std::string batch_refusal(const WorkloadSpec& spec) {
  try {
    generate_batch(spec);
    return "";
  } catch (const InputError& e) {
    return e.what();
  }
}

std::string check_refusal(const WorkloadSpec& spec) {
  try {
    check_mask_limits(spec);
    check_mask_files(spec);
    return "";
  } catch (const InputError& e) {
    return e.what();
  }
}

TEST(ChecksWithoutBatch, AgreeWithGenerateBatch) {
  const std::string good_mask = test::write_temp_file(
      "good.mask.json", R"({"sequences": [{"rows": [)" + [] {
        std::string rows;
        for (int i = 0; i < 4; ++i) {
          rows += std::string(i ? "," : "") + "\"" + std::string(40 + i + 1, '1') +
                  std::string(3 - i, '0') + "\"";
        }
        return rows;
      }() + "]}]}");
  const std::string wrong_mask =
      test::write_temp_file("wrong.mask.json", R"({"sequences": [{"rows": ["1"]}]})");
  const std::string short_layout = test::write_temp_file(
      "short.layout.json",
      R"({"block_size": 16, "num_heads": 1, "num_blocks": 1, "dense": [["1"]]})");
  const std::string heads_layout = test::write_temp_file(
      "heads.layout.json",
      R"({"block_size": 64, "num_heads": 3, "num_blocks": 1, "dense": [["1"], ["1"], ["1"]]})");
  const std::vector<json> masks = {
      json::parse(
          R"({"block_sparse": {"block_size": 16, "local_blocks": 2, "vertical_stride": 2}})"),
      json::parse(
          R"({"block_sparse": {"block_size": 1, "local_blocks": 1, "vertical_stride": 1}})"),
      {{"block_sparse", {{"file", short_layout}}}},
      {{"block_sparse", {{"file", heads_layout}}}},
      {{"explicit", {{"kind", "file"}, {"file", wrong_mask}}}},
      json::parse(R"({"explicit": {"kind": "random", "density": 0.5}})"),
  };
  for (const json& mask : masks) {
    const WorkloadSpec spec = parse_workload(checked_workload(mask).dump(), "t.json");
    EXPECT_EQ(check_refusal(spec), batch_refusal(spec)) << mask.dump();
  }
  // The explicit mask file of 44-key rows fits sequences of 44 keys only: the third is 14.
  const WorkloadSpec spec = parse_workload(
      checked_workload({{"explicit", {{"kind", "file"}, {"file", good_mask}}}}).dump(), "t.json");
  EXPECT_NE(check_refusal(spec), "");
  EXPECT_EQ(check_refusal(spec), batch_refusal(spec));
}

TEST(ChecksWithoutBatch, AnExplicitGridOverItsLimitIsRefusedBeforeAnythingIsBuilt) {
  json doc = checked_workload(json::parse(R"({"explicit": {"kind": "random", "density": 0.5}})"));
  doc["sequences"] = json::parse(R"([{"context_len": 0, "query_len": 50000, "count": 1}])");
  const WorkloadSpec spec = parse_workload(doc.dump(), "t.json");
  EXPECT_NE(check_refusal(spec).find("explicit mask needs more than 2147483648 entries"),
            std::string::npos)
      << check_refusal(spec);
}

// A one-head layout file serves every q head: the layout it expands to is what the limit bounds.
TEST(ChecksWithoutBatch, ALayoutFileIsSizedForTheQHeadsItServes) {
  const std::string path = test::write_temp_file(
      "one-head.layout.json", R"({"block_size": 8, "num_heads": 1, "num_blocks": 3,
                                  "dense": [["100", "110", "011"]]})");
  const BlockSparseLayoutSize size = check_block_sparse_layout_file(path, "", 256, 24);
  EXPECT_EQ(size.num_heads, 256);
  EXPECT_EQ(size.num_blocks, 3);
  EXPECT_EQ(size.max_nnz, 5);
  const BlockSparseLayout built = read_block_sparse_layout_file(path, "", 256, 24);
  EXPECT_EQ(size.bytes(), int64_t(4 * (built.crow.size() + built.col.size())));
}

// The estimate's parts against the structures generate_batch and the readers build.
TEST(ChecksWithoutBatch, TheEstimateCoversTheBuiltStructures) {
  const std::vector<json> masks = {
      json::object(),
      json::parse(
          R"({"block_sparse": {"block_size": 16, "local_blocks": 2, "vertical_stride": 2}})"),
      json::parse(R"({"explicit": {"kind": "random", "density": 0.5}})"),
  };
  for (const json& mask : masks) {
    for (const char* allocation : {"shuffled", "fragmented", "sequential"}) {
      json doc = checked_workload(mask);
      doc["kv_cache"]["allocation"] = allocation;
      const WorkloadSpec spec = parse_workload(doc.dump(), "t.json");
      const BatchMemory estimate = estimate_batch_memory(spec);
      const Batch b = generate_batch(spec);
      SCOPED_TRACE(mask.dump() + " " + allocation);
      EXPECT_EQ(estimate.block_table, int64_t(4 * padded_block_table(b).size()));
      const int64_t metadata =
          int64_t(8 * (b.context_lens.size() + b.query_lens.size() + b.kv_lens.size() +
                       b.cu_seqlens_q.size() + b.cu_seqlens_kv.size() + b.slot_mapping.size() +
                       b.shared_prefix_len.size()) +
                  4 * (b.page_indptr.size() + b.page_indices.size() + b.last_page_len.size() +
                       b.prefix_source.size() + size_t(b.num_pages)));
      EXPECT_GE(estimate.metadata, metadata);
      EXPECT_LE(estimate.metadata, 4 * metadata) << "not wildly more";
      int64_t masks_built = 0;
      if (b.block_sparse)
        masks_built += 4 * int64_t(b.block_sparse->crow.size() + b.block_sparse->col.size());
      if (b.explicit_mask)
        masks_built += int64_t(b.explicit_mask->bits.size() + 8 * b.explicit_mask->offsets.size());
      EXPECT_EQ(estimate.masks, masks_built);
      EXPECT_EQ(estimate.query, query_elements(b) * int64_t(size_of(b.dtype)));
      EXPECT_EQ(estimate.kv_pools,
                (pool_elements(b, DataStream::key) + pool_elements(b, DataStream::value)) *
                    int64_t(size_of(b.kv_dtype)));
    }
  }
}

}  // namespace
}  // namespace attn
