// attn-tune export's tables on the fixture database (tests/results/export_fixture.hpp): buckets,
// the per-bucket choice and its regret, which measurement stands for a case, the device choice,
// coverage, and the JSON and C++ renderings.
#include <gtest/gtest.h>

#include <algorithm>

#include "base/errors.hpp"
#include "results/export_render.hpp"
#include "results/export_table.hpp"
#include "tests/results/export_fixture.hpp"

namespace attn {
namespace {

using testing::ExportFixture;
using testing::kA;
using testing::kB;
using testing::kSm80Mma;
using testing::kSm80Simt;

const ExportEntry* find_entry(const ExportDeviceTable& table, const std::string& workload) {
  for (const ExportEntry& e : table.entries) {
    for (const BucketMember& m : e.members) {
      if (m.name == workload) return &e;
    }
  }
  return nullptr;
}

class Export : public ::testing::Test {
 protected:
  Export() : store_(":memory:"), fixture_(store_) { fixture_.add_h100_results(); }
  Store store_;
  ExportFixture fixture_;
};

TEST_F(Export, BucketsAreFamilyShapeAndPowerOfTwoRanges) {
  const ExportResult r = build_export(store_, {});
  ASSERT_EQ(r.tables.size(), 1u);
  const ExportDeviceTable& t = r.tables[0];
  EXPECT_EQ(t.device.record.name, "NVIDIA H100 80GB HBM3");
  // a/b share one bucket; c, d, e, g/h and the prefill are one each; f passed nothing.
  ASSERT_EQ(t.entries.size(), 6u);
  const ExportEntry* ab = find_entry(t, "decode-b40-c4000");
  ASSERT_NE(ab, nullptr);
  EXPECT_EQ(ab, find_entry(t, "decode-b64-c3000"));
  EXPECT_EQ(ab->bucket.family, "paged_decode");
  EXPECT_EQ(ab->bucket.batch_bucket, 6);     // [33, 64]
  EXPECT_EQ(ab->bucket.context_bucket, 12);  // [2049, 4096]
  EXPECT_EQ(ab->bucket.gqa_ratio, 4);
  EXPECT_EQ(ab->bucket.head_dim, 128);
  EXPECT_EQ(ab->bucket.dtype, "bf16");
  EXPECT_EQ(ab->bucket.kv_dtype, "bf16");
  EXPECT_EQ(ab->bucket.page_size, 16);
  EXPECT_EQ(find_entry(t, "decode-b16-c16000"), nullptr);
  const ExportEntry* fp8 = find_entry(t, "decode-b8-c2000-fp8");
  ASSERT_NE(fp8, nullptr);
  EXPECT_EQ(fp8->bucket.kv_dtype, "fp8_e4m3");
  const ExportEntry* p32 = find_entry(t, "decode-b8-c8000-p32");
  ASSERT_NE(p32, nullptr);
  EXPECT_EQ(p32->bucket.page_size, 32);
  EXPECT_EQ(p32->variant, kSm80Simt);
  EXPECT_EQ(p32->config_key, kB);
  const ExportEntry* prefill = find_entry(t, "prefill-2x512");
  ASSERT_NE(prefill, nullptr);
  EXPECT_EQ(prefill->bucket.family, "prefix_prefill");
  EXPECT_EQ(prefill->bucket.gqa_ratio, 8);
  EXPECT_EQ(prefill->bucket.head_dim, 64);
  EXPECT_EQ(prefill->bucket.dtype, "fp16");
  EXPECT_EQ(prefill->bucket.context_bucket, 0);  // no cached tokens: [0, 1]
  EXPECT_EQ(prefill->config_key, "block_m=128,warps=4");
  // Entries are sorted by bucket.
  for (size_t i = 1; i < t.entries.size(); ++i) {
    EXPECT_TRUE(t.entries[i - 1].bucket < t.entries[i].bucket);
  }
}

TEST_F(Export, ChoiceMinimisesTheWorstSlowdownAndReportsItsRegret) {
  const ExportResult r = build_export(store_, {});
  const ExportEntry& e = *find_entry(r.tables[0], "decode-b40-c4000");
  // Worst slowdowns A 0.15, B 0.1, C 0.2: B, though it is best on no workload and A has the
  // lowest mean (0.075).
  EXPECT_EQ(e.variant, kSm80Simt);
  EXPECT_EQ(e.config_key, kB);
  ASSERT_EQ(e.config.size(), 2u);
  EXPECT_EQ(e.config[0], (std::pair<std::string, int64_t>{"tile_tokens", 128}));
  EXPECT_EQ(e.config[1], (std::pair<std::string, int64_t>{"warps", 4}));
  EXPECT_FALSE(e.partial);
  EXPECT_EQ(e.covered, 2);
  EXPECT_EQ(e.candidates, 3);
  EXPECT_NEAR(e.max_regret, 0.1, 1e-12);
  EXPECT_NEAR(e.mean_regret, 0.1, 1e-12);
  ASSERT_EQ(e.members.size(), 2u);
  const BucketMember& a = e.members[0];  // batch 40 sorts before 64
  EXPECT_EQ(a.name, "decode-b40-c4000");
  EXPECT_EQ(a.best.config_key, kA);
  EXPECT_DOUBLE_EQ(a.best.median_us, 10);
  ASSERT_TRUE(a.chosen.has_value());
  EXPECT_DOUBLE_EQ(a.chosen->median_us, 11);
  EXPECT_NEAR(*a.slowdown, 0.1, 1e-12);
  EXPECT_EQ(a.cases, 3);
  const BucketMember& b = e.members[1];
  EXPECT_EQ(b.best.variant, kSm80Mma);
  EXPECT_DOUBLE_EQ(b.best.median_us, 30);
  EXPECT_DOUBLE_EQ(b.chosen->median_us, 33);
  EXPECT_NEAR(*b.slowdown, 0.1, 1e-12);
  EXPECT_EQ(b.chosen->run_id, fixture_.run());
  EXPECT_EQ(b.chosen->measurement_uid.size(), 32u);
  // The run it came from is listed with its provenance.
  ASSERT_EQ(r.runs.count(fixture_.run()), 1u);
  EXPECT_EQ(r.runs.at(fixture_.run()).record.git_commit, "feedc0de");
  EXPECT_EQ(r.runs.at(fixture_.run()).uid.size(), 32u);
}

TEST_F(Export, ConfirmResultsStandForACaseAndUnstableOnesAreLeftOut) {
  ExportResult r = build_export(store_, {});
  const ExportEntry* c = find_entry(r.tables[0], "decode-b1-c1000");
  ASSERT_NE(c, nullptr);
  // A's later screen result (3 us) does not replace its confirm result (5 us); C's unstable
  // 2 us is left out: B (4 us) is best.
  EXPECT_EQ(c->variant, kSm80Simt);
  EXPECT_EQ(c->config_key, kB);
  EXPECT_DOUBLE_EQ(c->members[0].best.median_us, 4);
  EXPECT_EQ(c->members[0].cases, 2);
  EXPECT_DOUBLE_EQ(c->max_regret, 0);
  EXPECT_EQ(r.tables[0].unstable_left_out, 1);

  ExportOptions with_unstable;
  with_unstable.include_unstable = true;
  r = build_export(store_, with_unstable);
  c = find_entry(r.tables[0], "decode-b1-c1000");
  EXPECT_EQ(c->variant, kSm80Mma);
  EXPECT_TRUE(c->members[0].best.unstable);
  EXPECT_EQ(r.tables[0].unstable_left_out, 0);
}

TEST_F(Export, ABucketWithNoConfigOnEveryWorkloadIsPartial) {
  const ExportResult r = build_export(store_, {});
  const ExportEntry* gh = find_entry(r.tables[0], "decode-b2-c100");
  ASSERT_NE(gh, nullptr);
  EXPECT_EQ(gh, find_entry(r.tables[0], "decode-b2-c120"));
  EXPECT_TRUE(gh->partial);
  EXPECT_EQ(gh->covered, 1);
  EXPECT_EQ(gh->candidates, 3);      // A, B and C each cover one workload
  EXPECT_EQ(gh->variant, kSm80Mma);  // C: the name order breaks the tie with A
  EXPECT_EQ(gh->config_key, kA);
  EXPECT_DOUBLE_EQ(gh->max_regret, 0);
  ASSERT_EQ(gh->members.size(), 2u);
  const BucketMember& g = gh->members[0].name == "decode-b2-c100" ? gh->members[0] : gh->members[1];
  EXPECT_FALSE(g.chosen.has_value());
  EXPECT_FALSE(g.slowdown.has_value());
  EXPECT_EQ(g.best.variant, kSm80Simt);
}

TEST_F(Export, FiltersByFamilyAndVariant) {
  ExportOptions options;
  options.families = {"prefix_prefill"};
  ExportResult r = build_export(store_, options);
  ASSERT_EQ(r.tables[0].entries.size(), 1u);
  EXPECT_EQ(r.tables[0].entries[0].bucket.family, "prefix_prefill");
  ASSERT_EQ(r.tables[0].coverage.size(), 1u);

  options = {};
  options.variant_glob = "paged_decode.tensor*";
  r = build_export(store_, options);
  for (const ExportEntry& e : r.tables[0].entries) EXPECT_EQ(e.variant, kSm80Mma);
  // Without sm80_simt the a/b bucket's choice is C, and its regret is against C alone.
  const ExportEntry* ab = find_entry(r.tables[0], "decode-b40-c4000");
  ASSERT_NE(ab, nullptr);
  EXPECT_DOUBLE_EQ(ab->max_regret, 0);

  options = {};
  options.families = {"no_such_family"};
  EXPECT_THROW(build_export(store_, options), UsageError);
  options = {};
  options.variant_glob = "nothing.*";
  EXPECT_THROW(build_export(store_, options), UsageError);
}

// Another library's peer is never exported; a user module's peer (the user's own Triton kernel,
// --peer-module) is, with its best config, like our variants.
TEST_F(Export, AUserModulePeerIsExportedAndOtherPeersAreNot) {
  const int64_t w = fixture_.workload(testing::export_workload("decode-b40-c4000", 40, 4000));
  fixture_.passed(w, "peer.torch.sdpa_flash", "", 1.0);
  fixture_.passed(w, "peer.user.triton_decode.paged_decode", "block_n=64,num_warps=4", 2.0);
  fixture_.passed(w, "peer.user.triton_decode.paged_decode", "block_n=32,num_warps=4", 3.0);
  ExportOptions options;
  options.variant_glob = "peer.*";
  const ExportResult r = build_export(store_, options);
  ASSERT_EQ(r.tables.size(), 1u);
  ASSERT_EQ(r.tables[0].entries.size(), 1u);
  EXPECT_EQ(r.tables[0].entries[0].variant, "peer.user.triton_decode.paged_decode");
  EXPECT_EQ(r.tables[0].entries[0].config_key, "block_n=64,num_warps=4");
  options.variant_glob = "peer.torch.*";
  EXPECT_THROW(build_export(store_, options), UsageError);
}

TEST_F(Export, SeveralDevicesAreNotMixedUnlessAsked) {
  fixture_.add_h200_results();
  try {
    build_export(store_, {});
    FAIL() << "two devices, none chosen";
  } catch (const UsageError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("2 devices"), std::string::npos) << m;
    EXPECT_NE(m.find("NVIDIA H100 80GB HBM3"), std::string::npos) << m;
    EXPECT_NE(m.find("NVIDIA H200"), std::string::npos) << m;
    EXPECT_NE(m.find("--device"), std::string::npos) << m;
    EXPECT_NE(m.find("--all-devices"), std::string::npos) << m;
  }
  ExportOptions options;
  options.devices = {"h200"};  // part of the name, any case
  ExportResult r = build_export(store_, options);
  ASSERT_EQ(r.tables.size(), 1u);
  EXPECT_EQ(r.tables[0].device.record.name, "NVIDIA H200");
  ASSERT_EQ(r.tables[0].entries.size(), 1u);
  EXPECT_EQ(r.tables[0].entries[0].members[0].best.median_us, 8);

  // By UUID and by a fingerprint prefix.
  options.devices = {testing::export_h100().uuid};
  EXPECT_EQ(build_export(store_, options).tables[0].device.record.name, "NVIDIA H100 80GB HBM3");
  options.devices = {testing::export_h200().fingerprint().substr(0, 10)};
  EXPECT_EQ(build_export(store_, options).tables[0].device.record.name, "NVIDIA H200");

  // "NVIDIA" matches both: ambiguous.
  options.devices = {"NVIDIA"};
  EXPECT_THROW(build_export(store_, options), UsageError);
  options.devices = {"A100"};
  EXPECT_THROW(build_export(store_, options), UsageError);

  options = {};
  options.all_devices = true;
  r = build_export(store_, options);
  ASSERT_EQ(r.tables.size(), 2u);
  EXPECT_EQ(r.tables[0].device.record.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(r.tables[1].device.record.name, "NVIDIA H200");
  // The H100's a/b bucket is not changed by the H200's faster result.
  EXPECT_EQ(find_entry(r.tables[0], "decode-b40-c4000")->config_key, kB);
  EXPECT_EQ(find_entry(r.tables[1], "decode-b40-c4000")->config_key, kA);

  options.devices = {"H200"};
  EXPECT_THROW(build_export(store_, options), UsageError);  // --all-devices excludes --device

  // Only the H100 measured prefix_prefill: with that family there is one device to export.
  ExportOptions prefill;
  prefill.families = {"prefix_prefill"};
  EXPECT_EQ(build_export(store_, prefill).tables.size(), 1u);
}

TEST_F(Export, CoverageIsTheCrossOfMeasuredAxisValues) {
  const ExportResult r = build_export(store_, {});
  const auto& coverage = r.tables[0].coverage;
  ASSERT_EQ(coverage.size(), 2u);
  const FamilyCoverage& c = coverage[0];
  EXPECT_EQ(c.family, "paged_decode");
  EXPECT_EQ(c.batch_buckets, (std::vector<int>{0, 1, 3, 4, 6}));
  EXPECT_EQ(c.context_buckets, (std::vector<int>{7, 10, 11, 12, 13, 14}));
  EXPECT_EQ(c.gqa_ratios, (std::vector<int>{4}));
  EXPECT_EQ(c.page_sizes, (std::vector<int>{16, 32}));
  ASSERT_EQ(c.dtypes.size(), 2u);
  // 5 batch x 6 context x 2 dtypes x 2 page sizes.
  EXPECT_EQ(c.cells.size(), 120u);
  EXPECT_EQ(c.count(CellStatus::exported), 5);
  EXPECT_EQ(c.count(CellStatus::no_passed), 1);
  EXPECT_EQ(c.count(CellStatus::no_data), 114);
  const auto failed = std::find_if(c.cells.begin(), c.cells.end(), [](const CoverageCell& cell) {
    return cell.status == CellStatus::no_passed;
  });
  ASSERT_NE(failed, c.cells.end());
  EXPECT_EQ(failed->bucket.batch_bucket, 4);
  EXPECT_EQ(failed->bucket.context_bucket, 14);
  EXPECT_EQ(failed->workloads, std::vector<std::string>{"decode-b16-c16000"});
  EXPECT_EQ(coverage[1].family, "prefix_prefill");
  EXPECT_EQ(coverage[1].cells.size(), 1u);
  EXPECT_EQ(coverage[1].count(CellStatus::exported), 1);

  const std::vector<std::string> lines = coverage_lines(r.tables[0]);
  auto has = [&](const std::string& text) {
    return std::any_of(lines.begin(), lines.end(),
                       [&](const std::string& l) { return l.find(text) != std::string::npos; });
  };
  EXPECT_TRUE(
      has("paged_decode: 5 of 120 buckets exported, 1 measured with nothing passed, 114 "
          "with no data"));
  EXPECT_TRUE(has("gqa 4, head_dim 128, bf16 (KV fp8_e4m3), page 32: no data"));
  EXPECT_TRUE(has("nothing usable passed on decode-b16-c16000"));
}

TEST_F(Export, JsonCarriesEntriesProvenanceAndCoverage) {
  const ExportResult r = build_export(store_, {});
  const nlohmann::ordered_json j =
      export_json(r, {"9.9.9", "abc123", "attn-tune export --db x", "2026-01-01T00:00:00.000Z"});
  EXPECT_EQ(j["format"], "attn-tune export");
  EXPECT_EQ(j["tool"]["version"], "9.9.9");
  EXPECT_EQ(j["tool"]["command_line"], "attn-tune export --db x");
  ASSERT_EQ(j["devices"].size(), 1u);
  const nlohmann::ordered_json& d = j["devices"][0];
  EXPECT_EQ(d["device"]["uuid"], testing::export_h100().uuid);
  EXPECT_EQ(d["device"]["fingerprint"], testing::export_h100().fingerprint());
  EXPECT_EQ(d["entries"].size(), 6u);
  const nlohmann::ordered_json* ab = nullptr;
  for (const nlohmann::ordered_json& e : d["entries"]) {
    if (e["measured"][0]["workload"] == "decode-b40-c4000") ab = &e;
  }
  ASSERT_NE(ab, nullptr);
  EXPECT_EQ((*ab)["bucket"]["batch_size"], nlohmann::ordered_json::array({33, 64}));
  EXPECT_EQ((*ab)["bucket"]["context_len"], nlohmann::ordered_json::array({2049, 4096}));
  EXPECT_EQ((*ab)["config"]["tile_tokens"], 128);
  EXPECT_NEAR((*ab)["regret"]["max"].get<double>(), 0.1, 1e-12);
  EXPECT_EQ((*ab)["workloads"], 2);
  EXPECT_EQ((*ab)["measured"][0]["best"]["median_us"], 10.0);
  EXPECT_EQ((*ab)["measured"][0]["chosen"]["run_id"], fixture_.run());
  EXPECT_EQ((*ab)["measured"][0]["shape"]["context_len"], 4000);
  EXPECT_EQ(d["coverage"][0]["no_passed"], 1);
  EXPECT_EQ(d["coverage"][0]["missing"].size(), 115u);
  EXPECT_EQ(j["runs"].size(), 1u);
  EXPECT_EQ(j["runs"][0]["git_commit"], "feedc0de");
}

TEST_F(Export, HeaderNamesTheDeviceAndEscapesText) {
  const ExportResult r = build_export(store_, {});
  const std::string h =
      export_cpp_header(r,
                        {"9.9.9", "abc123", "attn-tune export --note 'a \"quoted\"' path\\",
                         "2026-01-01T00:00:00.000Z"},
                        "my::tuned");
  EXPECT_NE(h.find("namespace my::tuned {"), std::string::npos);
  EXPECT_NE(h.find("// Device 0: NVIDIA H100 80GB HBM3"), std::string::npos);
  EXPECT_NE(h.find("//   uuid " + testing::export_h100().uuid), std::string::npos);
  EXPECT_NE(h.find("//   fingerprint " + testing::export_h100().fingerprint()), std::string::npos);
  EXPECT_NE(h.find("driver unknown (supports CUDA 13.0), CUDA 13.0, NVRTC 13.0"),
            std::string::npos);
  // The command line as a literal: quotes and backslashes escaped.
  EXPECT_NE(h.find(R"(kCommandLine = "attn-tune export --note 'a \"quoted\"' path\\";)"),
            std::string::npos)
      << h.substr(0, 2000);
  // No comment line ends in a backslash (it would swallow the next line).
  size_t pos = 0;
  while ((pos = h.find("\\\n", pos)) != std::string::npos) {
    const size_t line_start = h.rfind('\n', pos) + 1;
    EXPECT_EQ(h.substr(line_start, pos - line_start).find("//"), std::string::npos)
        << h.substr(line_start, pos - line_start + 1);
    ++pos;
  }
  // One device: the select() without a device key exists.
  EXPECT_NE(h.find("constexpr const Entry* select(const Query& q)"), std::string::npos);
  EXPECT_TRUE(valid_cpp_namespace("attn_tuned"));
  EXPECT_TRUE(valid_cpp_namespace("a::b_2"));
  for (const char* bad : {"", "2x", "a::", "::a", "a:b", "a-b", "a b"}) {
    EXPECT_FALSE(valid_cpp_namespace(bad)) << bad;
  }
}

}  // namespace
}  // namespace attn
