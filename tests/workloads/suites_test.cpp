// Suites: the built-in ones parse and describe workloads that hold what their description says;
// a suite file's problems are all reported with their JSON pointers (an inline workload's under
// its entry); "SUITE#WORKLOAD" names one workload.
#include "workloads/suites.hpp"

#include <algorithm>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "base/errors.hpp"
#include "workloads/presets.hpp"
#include "workloads/workload_validation.hpp"

namespace attn {
namespace {

std::vector<std::string> suite_problems(const std::string& text) {
  try {
    parse_suite(text, "test-suite.json");
  } catch (const InputError& e) {
    return e.problems();
  }
  return {};
}

bool has_problem(const std::vector<std::string>& problems, const std::string& needle) {
  return std::any_of(problems.begin(), problems.end(),
                     [&](const std::string& p) { return p.find(needle) != std::string::npos; });
}

TEST(SuiteTest, BuiltInSuitesParseAndTheirWorkloadsValidate) {
  const std::vector<std::string> names = suite_names();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  ASSERT_NE(std::find(names.begin(), names.end(), "decode-shapes"), names.end());
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    const Suite suite = load_suite(name);
    EXPECT_EQ(suite.name, name);
    EXPECT_FALSE(suite.description.empty());
    ASSERT_FALSE(suite.workloads.empty());
    std::set<std::string> workload_names;
    for (const WorkloadSpec& spec : suite.workloads) {
      EXPECT_TRUE(validate_workload(spec).empty()) << spec.name;
      EXPECT_TRUE(workload_names.insert(spec.name).second) << spec.name;
      // A suite's workload is named by "SUITE#NAME"; it must not shadow a preset.
      EXPECT_FALSE(preset_text(spec.name).has_value()) << spec.name;
    }
  }
}

// decode-shapes covers every value of every axis it names, each workload with at least 256 MiB of
// K and V, 1 to 256 sequences.
TEST(SuiteTest, DecodeShapesCoversEveryAxisValue) {
  const Suite suite = load_suite("decode-shapes");
  EXPECT_GE(suite.workloads.size(), 36u);
  EXPECT_LE(suite.workloads.size(), 48u);
  std::set<int> groups, head_dims, pages, sequences;
  std::set<std::string> layouts, kv;
  bool mqa = false;
  for (const WorkloadSpec& spec : suite.workloads) {
    SCOPED_TRACE(spec.name);
    const ModelShape& m = spec.model;
    groups.insert(spec.group_size());
    mqa |= m.num_kv_heads == 1;
    head_dims.insert(m.head_dim);
    pages.insert(spec.kv_cache.page_size);
    layouts.insert(to_string(spec.kv_cache.layout));
    kv.insert(m.kv_dtype ? to_string(*m.kv_dtype) + "/" + to_string(m.kv_scale) : "bf16");
    int64_t tokens = 0, count = 0;
    for (const SequenceLengths& s : expand_sequences(spec)) {
      tokens += s.context_len + s.query_len;
      ++count;
    }
    sequences.insert(int(count));
    const int64_t row = 2LL * m.num_kv_heads * m.head_dim * (m.kv_dtype ? 1 : 2);
    EXPECT_GE(tokens * row, 256LL << 20) << "at least 256 MiB of K and V";
  }
  for (int g : {1, 4, 7, 8, 16}) EXPECT_TRUE(groups.count(g)) << "GQA group " << g;
  EXPECT_TRUE(mqa);
  for (int d : {64, 128, 256}) EXPECT_TRUE(head_dims.count(d)) << "head dim " << d;
  for (int p : {1, 16, 32, 48, 64}) EXPECT_TRUE(pages.count(p)) << "page size " << p;
  EXPECT_TRUE(layouts.count("NHD") && layouts.count("HND"));
  EXPECT_TRUE(kv.count("bf16") && kv.count("fp8_e4m3/per_tensor") && kv.count("fp8_e4m3/per_head"));
  EXPECT_TRUE(sequences.count(1) && sequences.count(256));
}

TEST(SuiteTest, EveryProblemIsReportedWithItsPointer) {
  const std::vector<std::string> problems = suite_problems(R"({
    "schema_version": 1, "name": "bad#name", "descripton": "typo",
    "workloads": ["no-such-preset", 7,
      {"schema_version": 2, "name": "a", "model": {"num_q_heads": 4, "num_kv_heads": 3,
       "head_dim": 64, "dtype": "bf16"}, "sequences": [{"context_len": 10, "count": 1}]},
      "default", "default"]})");
  EXPECT_TRUE(has_problem(problems, "/name: must not contain '#'"));
  EXPECT_TRUE(has_problem(problems, "/descripton: unknown key"));
  EXPECT_TRUE(has_problem(problems, "/workloads/0: no preset named \"no-such-preset\""));
  EXPECT_TRUE(has_problem(problems, "/workloads/1: expected a preset name or a workload object"));
  EXPECT_TRUE(has_problem(problems, "/workloads/2/model"));
  EXPECT_TRUE(
      has_problem(problems, "/workloads/4: a second workload named \"default-decode-small\""));
  EXPECT_EQ(problems.size(), 6u) << ::testing::PrintToString(problems);
}

TEST(SuiteTest, EmptyWrongAndNewerSuitesAreRefused) {
  EXPECT_TRUE(has_problem(suite_problems(R"({"schema_version": 1, "name": "x", "workloads": []})"),
                          "/workloads: a suite needs at least one workload"));
  EXPECT_TRUE(has_problem(suite_problems(R"({"schema_version": 2, "name": "x",
                                             "workloads": ["default"]})"),
                          "/schema_version: this attn-bench reads suite schema version 1"));
  EXPECT_TRUE(has_problem(suite_problems("[1, 2]"), "a suite is a JSON object"));
  EXPECT_TRUE(
      has_problem(suite_problems(R"({"name": "x", "workloads": "default"})"), "/workloads"));
  EXPECT_FALSE(suite_problems("{").empty());
}

TEST(SuiteTest, ReferencesNameOneWorkloadOfASuite) {
  const auto reference = split_suite_reference("decode-shapes#shapes-g7-d128-64x4096");
  ASSERT_TRUE(reference.has_value());
  EXPECT_EQ(reference->suite, "decode-shapes");
  EXPECT_EQ(reference->workload, "shapes-g7-d128-64x4096");
  EXPECT_FALSE(split_suite_reference("decode-llama3-8b-64x4096").has_value());
  const Suite suite = load_suite(reference->suite);
  EXPECT_EQ(suite_workload(suite, reference->workload).model.num_q_heads, 28);
  try {
    suite_workload(suite, "shapes-nope");
    FAIL() << "expected a UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("has no workload named 'shapes-nope'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("shapes-g7-d128-64x4096"), std::string::npos);
  }
  EXPECT_THROW(load_suite("no-such-suite"), UsageError);
}

TEST(SuiteTest, AGlobSelectsWorkloadsOfASuiteInItsOrder) {
  const Suite all = load_suite("decode-shapes");
  const Suite g7 = load_suite_selection("decode-shapes#shapes-g7-*");
  EXPECT_EQ(g7.name, "decode-shapes#shapes-g7-*");
  std::vector<std::string> expected;
  for (const WorkloadSpec& spec : all.workloads) {
    if (spec.name.rfind("shapes-g7-", 0) == 0) expected.push_back(spec.name);
  }
  std::vector<std::string> names;
  for (const WorkloadSpec& spec : g7.workloads) names.push_back(spec.name);
  EXPECT_EQ(names, expected);
  EXPECT_GE(names.size(), 3u);
  EXPECT_LT(names.size(), all.workloads.size());
  // One name is a selection of one; no '#' is the whole suite.
  EXPECT_EQ(load_suite_selection("decode-shapes#shapes-g1-d128-1x32768").workloads.size(), 1u);
  EXPECT_EQ(load_suite_selection("decode-shapes").workloads.size(), all.workloads.size());
  try {
    load_suite_selection("decode-shapes#nothing-*");
    FAIL() << "expected a UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(
        std::string(e.what()).find("no workload of suite 'decode-shapes' matches 'nothing-*'"),
        std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("shapes-g7-d128-64x4096"), std::string::npos);
  }
  EXPECT_THROW(load_suite_selection("no-such-suite#x"), UsageError);
}

}  // namespace
}  // namespace attn
