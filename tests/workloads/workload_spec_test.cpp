#include "workloads/workload_spec.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>
#include <string>
#include <utility>

#include <gtest/gtest.h>

#include "base/errors.hpp"
#include "tests/workloads/test_util.hpp"
#include "workloads/workload_validation.hpp"

namespace attn {
namespace {

using nlohmann::json;
using test::problems_of;
using test::valid_workload_json;

TEST(WorkloadParse, ValidFileGivesTheSpec) {
  WorkloadSpec spec = parse_workload(valid_workload_json().dump(), "test.json");
  EXPECT_EQ(spec.schema_version, 1);
  EXPECT_EQ(spec.name, "unit");
  EXPECT_EQ(spec.model.num_q_heads, 8);
  EXPECT_EQ(spec.model.num_kv_heads, 2);
  EXPECT_EQ(spec.group_size(), 4);
  EXPECT_EQ(spec.model.head_dim, 64);
  EXPECT_EQ(spec.model.dtype, DType::bf16);
  EXPECT_FALSE(spec.model.softmax_scale.has_value());
  EXPECT_EQ(spec.kv_cache.page_size, 16);
  ASSERT_EQ(spec.sequences.size(), 1u);
  EXPECT_EQ(spec.sequences[0].context_len.value, 40);
  EXPECT_EQ(spec.sequences[0].count, 3);
  EXPECT_EQ(spec.seed, 7u);
}

TEST(WorkloadParse, DefaultsApplyToOmittedFields) {
  json doc = valid_workload_json();
  doc.erase("kv_cache");
  doc.erase("seed");
  doc["sequences"] = json::parse(R"([{"context_len": 5}])");
  WorkloadSpec spec = parse_workload(doc.dump(), "test.json");
  EXPECT_EQ(spec.kv_cache.page_size, 16);
  EXPECT_EQ(spec.kv_cache.layout, KvLayout::nhd);
  EXPECT_EQ(spec.kv_cache.allocation, PageAllocation::shuffled);
  EXPECT_EQ(spec.sequences[0].query_len.value, 1);
  EXPECT_EQ(spec.sequences[0].count, 1);
  EXPECT_EQ(spec.seed, 0u);
  EXPECT_EQ(spec.description, "");

  doc["kv_cache"] = json::object();  // present but empty: defaults too
  EXPECT_EQ(parse_workload(doc.dump(), "test.json").kv_cache.page_size, 16);
}

TEST(WorkloadParse, EffectiveSoftmaxScale) {
  json doc = valid_workload_json();
  EXPECT_DOUBLE_EQ(parse_workload(doc.dump(), "t").effective_softmax_scale(), 0.125);
  doc["model"]["softmax_scale"] = 0.3;
  WorkloadSpec spec = parse_workload(doc.dump(), "t");
  EXPECT_EQ(spec.model.softmax_scale, 0.3);
  EXPECT_DOUBLE_EQ(spec.effective_softmax_scale(), 0.3);
  doc["model"]["softmax_scale"] = 2;  // an integer is a number too
  EXPECT_DOUBLE_EQ(parse_workload(doc.dump(), "t").effective_softmax_scale(), 2.0);
}

TEST(WorkloadParse, SyntaxErrorIsReportedWithLineAndColumn) {
  auto problems = problems_of("{\n  \"schema_version\": 1,\n  \"name\": \"x\",,\n}");
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].rfind("line 3, column 15: ", 0), 0u) << problems[0];
  EXPECT_NE(problems[0].find("expected string literal"), std::string::npos) << problems[0];
}

TEST(WorkloadParse, TheMessageNamesTheSource) {
  try {
    parse_workload("[", "my/workload.json");
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("my/workload.json: 1 problem", 0), 0u) << e.what();
  }
}

TEST(WorkloadParse, DuplicateKeyIsRejected) {
  std::string text = valid_workload_json().dump();
  text.replace(text.find("\"head_dim\":64"), 13, "\"head_dim\":64,\"head_dim\":128");
  auto problems = problems_of(text);
  ASSERT_EQ(problems.size(), 1u) << test::joined(problems);
  EXPECT_EQ(problems[0], "/model/head_dim: duplicate key");
}

TEST(WorkloadParse, UnknownKeysAreRejectedWithTheExpectedOnes) {
  json doc = valid_workload_json();
  doc["model"]["head_dimm"] = 128;
  doc["extra"] = true;
  doc["sequences"][0]["contex_len"] = 1;
  auto problems = problems_of(doc);
  EXPECT_PROBLEM(
      problems,
      "/model/head_dimm: unknown key (expected one of: attention, attention_sinks, dtype, "
      "head_dim, kv_dtype, kv_lora_rank, kv_scale, logits_soft_cap, num_kv_heads, num_q_heads, "
      "qk_nope_head_dim, qk_rope_head_dim, sliding_window, softmax_scale, v_head_dim)",
      "did you mean \"head_dim\"");
  EXPECT_PROBLEM(problems,
                 "/extra: unknown key (expected one of: description, kv_cache, mask, model,");
  EXPECT_PROBLEM(problems, "/sequences/0/contex_len: unknown key", "did you mean \"context_len\"");
  EXPECT_EQ(problems.size(), 3u) << test::joined(problems);
}

TEST(WorkloadParse, UnknownKeyWithSlashIsEscapedInThePointer) {
  json doc = valid_workload_json();
  doc["kv_cache"]["a/b"] = 1;
  EXPECT_PROBLEM(problems_of(doc), "/kv_cache/a~1b: unknown key");
}

TEST(WorkloadParse, WrongTypesAreErrors) {
  json doc = valid_workload_json();
  doc["seed"] = "12";
  doc["name"] = 5;
  doc["model"]["num_q_heads"] = 8.0;
  doc["model"]["dtype"] = json::array();
  doc["kv_cache"]["page_size"] = "16";
  doc["sequences"][0]["count"] = true;
  auto problems = problems_of(doc);
  EXPECT_PROBLEM(problems, "/seed: expected an unsigned integer, got string");
  EXPECT_PROBLEM(problems, "/name: expected a string, got integer 5");
  EXPECT_PROBLEM(problems, "/model/num_q_heads: expected an integer, got number 8.0");
  EXPECT_PROBLEM(problems, "/model/dtype: expected a string, got array");
  EXPECT_PROBLEM(problems, "/kv_cache/page_size: expected an integer, got string");
  EXPECT_PROBLEM(problems, "/sequences/0/count: expected an integer, got boolean");
  EXPECT_EQ(problems.size(), 6u) << test::joined(problems);

  doc = valid_workload_json();
  doc["model"] = json::array();
  doc["kv_cache"] = 3;
  doc["sequences"] = json::object();
  problems = problems_of(doc);
  EXPECT_PROBLEM(problems, "/model: expected an object, got array");
  EXPECT_PROBLEM(problems, "/kv_cache: expected an object, got integer 3");
  EXPECT_PROBLEM(problems, "/sequences: expected an array, got object");
}

TEST(WorkloadParse, MissingRequiredKeysAreErrors) {
  auto problems = problems_of(std::string("{}"));
  EXPECT_PROBLEM(problems, "/schema_version: missing required key");
  EXPECT_PROBLEM(problems, "/name: missing required key");
  EXPECT_PROBLEM(problems, "/model: missing required key");
  EXPECT_PROBLEM(problems, "/sequences: missing required key");
  EXPECT_EQ(problems.size(), 4u) << test::joined(problems);

  json doc = valid_workload_json();
  doc["model"] = json::object();
  doc["sequences"][0].erase("context_len");
  problems = problems_of(doc);
  EXPECT_PROBLEM(problems, "/model/num_q_heads: missing required key");
  EXPECT_PROBLEM(problems, "/model/num_kv_heads: missing required key");
  EXPECT_PROBLEM(problems, "/model/head_dim: missing required key");
  EXPECT_PROBLEM(problems, "/model/dtype: missing required key");
  EXPECT_PROBLEM(problems, "/sequences/0/context_len: missing required key");
  EXPECT_EQ(problems.size(), 5u) << test::joined(problems);
}

TEST(WorkloadParse, EveryProblemIsReportedAtOnce) {
  std::string text = R"({
    "schema_version": 1,
    "name": "",
    "model": {"num_q_heads": 32, "num_kv_heads": 5, "head_dim": 100, "dtype": "fp32"},
    "kv_cache": {"page_size": 0, "layout": "nhd", "allocation": "random"},
    "sequences": [{"context_len": -1, "query_len": 0, "count": 0}, 3],
    "seed": -4,
    "colour": "red",
    "colour": "blue"
  })";
  auto problems = problems_of(text);
  EXPECT_EQ(problems[0], "/colour: duplicate key");  // found while parsing, so listed first
  EXPECT_PROBLEM(problems, "/colour: unknown key");
  EXPECT_PROBLEM(problems, "/name: must not be empty");
  EXPECT_PROBLEM(problems, "/model/num_kv_heads: must divide num_q_heads (32), got 5");
  EXPECT_PROBLEM(problems, "/model/head_dim: must be one of 64, 80, 96, 128, 192, 256, got 100");
  EXPECT_PROBLEM(problems, "/model/dtype: must be one of \"bf16\", \"fp16\", got \"fp32\"");
  EXPECT_PROBLEM(problems, "/kv_cache/page_size: must be in 1..256, got 0");
  EXPECT_PROBLEM(problems,
                 "/kv_cache/layout: must be one of \"NHD\", \"HND\", \"vllm\", got \"nhd\"");
  EXPECT_PROBLEM(problems, "/kv_cache/allocation: must be one of \"sequential\", \"shuffled\"");
  EXPECT_PROBLEM(problems, "/sequences/0/context_len: must be >= 0, got -1");
  EXPECT_PROBLEM(problems, "/sequences/0/query_len: must be >= 1, got 0");
  EXPECT_PROBLEM(problems, "/sequences/0/count: must be in 1..1048576, got 0");
  EXPECT_PROBLEM(problems, "/sequences/1: expected an object, got integer 3");
  EXPECT_PROBLEM(problems, "/seed: expected an unsigned integer, got integer -4");
  EXPECT_EQ(problems.size(), 14u) << test::joined(problems);
}

TEST(WorkloadParse, TopLevelMustBeAnObject) {
  for (const char* text : {"[]", "1", "\"workload\"", "null"}) {
    auto problems = problems_of(std::string(text));
    ASSERT_EQ(problems.size(), 1u) << text;
    EXPECT_EQ(problems[0].rfind("(top level): expected an object, got ", 0), 0u) << problems[0];
  }
}

TEST(WorkloadParse, InputOver16MiBIsRejected) {
  std::string text = valid_workload_json().dump();
  text.insert(text.size() - 1, std::string((size_t(16) << 20) - text.size() + 1, ' '));
  ASSERT_EQ(text.size(), (size_t(16) << 20) + 1);
  auto problems = problems_of(text);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("the limit is 16777216 bytes"), std::string::npos) << problems[0];
  text.erase(text.size() - 2, 1);  // exactly 16 MiB parses
  EXPECT_TRUE(problems_of(text).empty());
}

TEST(WorkloadParse, NestingDeeperThan64IsRejected) {
  json doc = valid_workload_json();
  std::string text = doc.dump();
  text.insert(text.size() - 1, ",\"deep\":" + std::string(70, '[') + std::string(70, ']'));
  auto problems = problems_of(text);
  ASSERT_EQ(problems.size(), 1u) << test::joined(problems);
  EXPECT_EQ(problems[0].rfind("/deep/0/0/", 0), 0u) << problems[0];
  EXPECT_NE(problems[0].find("nested deeper than 64 levels"), std::string::npos);
}

// ---- range rules, one field at a time ----------------------------------------------------------

struct RangeCase {
  const char* pointer;  // the field, as a JSON pointer into valid_workload_json()
  json value;
  const char* message;  // expected in the problem; nullptr: the value is valid
};

void check_range_cases(const std::vector<RangeCase>& cases) {
  for (const RangeCase& c : cases) {
    json doc = valid_workload_json();
    doc[json::json_pointer(c.pointer)] = c.value;
    auto problems = problems_of(doc);
    if (c.message == nullptr) {
      EXPECT_TRUE(problems.empty()) << c.pointer << " = " << c.value << ":\n"
                                    << test::joined(problems);
    } else {
      ASSERT_EQ(problems.size(), 1u) << c.pointer << " = " << c.value << ":\n"
                                     << test::joined(problems);
      EXPECT_EQ(problems[0], std::string(c.pointer) + ": " + c.message)
          << c.pointer << " = " << c.value;
    }
  }
}

TEST(WorkloadRanges, SchemaVersion) {
  check_range_cases({
      {"/schema_version", 1, nullptr},
      {"/schema_version", 2, nullptr},
      {"/schema_version", 0, "must be in 1..2, got 0"},
      {"/schema_version", -1, "must be in 1..2, got -1"},
      {"/schema_version", "1", "expected an integer, got string"},
  });
  json doc = valid_workload_json();
  doc["schema_version"] = 3;
  doc["future_field"] = {{"x", 1}};  // not reported: a newer schema may have anything
  auto problems = problems_of(doc);
  ASSERT_EQ(problems.size(), 1u) << test::joined(problems);
  EXPECT_NE(problems[0].find("/schema_version: this file needs a newer attn-bench"),
            std::string::npos)
      << problems[0];
}

TEST(WorkloadRanges, Name) {
  check_range_cases({
      {"/name", "a", nullptr},
      {"/name", std::string(128, 'n'), nullptr},
      {"/name", " spaced name ", nullptr},
      {"/name", "", "must not be empty"},
      {"/name", std::string(129, 'n'), "is 129 characters long; the limit is 128"},
      {"/name", "tab\there", "must not contain control characters (found U+0009 at character 4)"},
      {"/name", std::string("nul\0", 4),
       "must not contain control characters (found U+0000 at character 4)"},
      {"/name", "c1\xC2\x85", "must not contain control characters (found U+0085 at character 3)"},
  });
  // 128 two-byte characters are 128 characters, not 256.
  std::string accented;
  for (int i = 0; i < 128; ++i) accented += "\xC3\xA9";
  check_range_cases({{"/name", accented, nullptr}});
  // Stored verbatim.
  json doc = valid_workload_json();
  doc["name"] = " x\xC3\xA9 ";
  EXPECT_EQ(parse_workload(doc.dump(), "t").name, " x\xC3\xA9 ");
}

TEST(WorkloadRanges, Description) {
  check_range_cases({
      {"/description", std::string(4096, 'd'), nullptr},
      {"/description", "line one\nline two", nullptr},
      {"/description", std::string(4097, 'd'), "is 4097 characters long; the limit is 4096"},
      {"/description", 3, "expected a string, got integer 3"},
  });
}

TEST(WorkloadRanges, Model) {
  check_range_cases({
      {"/model/num_q_heads", 2, nullptr},
      {"/model/num_q_heads", 256, nullptr},
      {"/model/num_q_heads", 0, "must be in 1..256, got 0"},
      {"/model/num_q_heads", 258, "must be in 1..256, got 258"},
      {"/model/num_kv_heads", 1, nullptr},
      {"/model/num_kv_heads", 8, nullptr},
      {"/model/num_kv_heads", 0, "must be in 1..256, got 0"},
      {"/model/num_kv_heads", 3, "must divide num_q_heads (8), got 3"},
      {"/model/num_kv_heads", 16, "must divide num_q_heads (8), got 16"},
      {"/model/head_dim", 64, nullptr},
      {"/model/head_dim", 80, nullptr},
      {"/model/head_dim", 96, nullptr},
      {"/model/head_dim", 128, nullptr},
      {"/model/head_dim", 192, nullptr},
      {"/model/head_dim", 256, nullptr},
      {"/model/head_dim", 32, "must be one of 64, 80, 96, 128, 192, 256, got 32"},
      {"/model/head_dim", 512, "must be one of 64, 80, 96, 128, 192, 256, got 512"},
      {"/model/head_dim", 128.5, "expected an integer, got number 128.5"},
      {"/model/dtype", "bf16", nullptr},
      {"/model/dtype", "fp16", nullptr},
      {"/model/dtype", "BF16", "must be one of \"bf16\", \"fp16\", got \"BF16\""},
      {"/model/dtype", "fp32", "must be one of \"bf16\", \"fp16\", got \"fp32\""},
      {"/model/softmax_scale", 0.01, nullptr},
      {"/model/softmax_scale", 0, "must be a finite number > 0, got 0"},
      {"/model/softmax_scale", -0.5, "must be a finite number > 0, got -0.5"},
      {"/model/softmax_scale", "0.1", "expected a number, got string"},
  });
  // A GQA ratio that does not divide: the problem is on num_kv_heads, with the q-head count.
  json doc = valid_workload_json();
  doc["model"]["num_q_heads"] = 7;
  auto problems = problems_of(doc);
  ASSERT_EQ(problems.size(), 1u) << test::joined(problems);
  EXPECT_EQ(problems[0], "/model/num_kv_heads: must divide num_q_heads (7), got 2");
}

TEST(WorkloadRanges, KvCache) {
  check_range_cases({
      {"/kv_cache/page_size", 1, nullptr},
      {"/kv_cache/page_size", 7, nullptr},  // any integer, not only powers of two
      {"/kv_cache/page_size", 256, nullptr},
      {"/kv_cache/page_size", 0, "must be in 1..256, got 0"},
      {"/kv_cache/page_size", 257, "must be in 1..256, got 257"},
      {"/kv_cache/page_size", -16, "must be in 1..256, got -16"},
      {"/kv_cache/layout", "NHD", nullptr},
      {"/kv_cache/layout", "HND", nullptr},
      {"/kv_cache/layout", "NDH", "must be one of \"NHD\", \"HND\", \"vllm\", got \"NDH\""},
      {"/kv_cache/allocation", "sequential", nullptr},
      {"/kv_cache/allocation", "shuffled", nullptr},
      {"/kv_cache/allocation", "random",
       "must be one of \"sequential\", \"shuffled\", \"fragmented\", \"shared_prefix\", got "
       "\"random\""},
  });
}

TEST(WorkloadRanges, Sequences) {
  check_range_cases({
      {"/sequences/0/context_len", 0, nullptr},
      {"/sequences/0/context_len", -1, "must be >= 0, got -1"},
      {"/sequences/0/context_len", 1.0,
       "expected an integer or a distribution object, got number 1.0"},
      {"/sequences/0/query_len", 1, nullptr},
      {"/sequences/0/query_len", 100, nullptr},
      {"/sequences/0/query_len", 0, "must be >= 1, got 0"},
      {"/sequences/0/count", 1, nullptr},
      {"/sequences/0/count", 1048576, nullptr},
      {"/sequences/0/count", 0, "must be in 1..1048576, got 0"},
      {"/sequences/0/count", 1048577, "must be in 1..1048576, got 1048577"},
      {"/sequences/0", "x", "expected an object, got string"},
      {"/sequences", json::array(), "must not be empty"},
  });
  json doc = valid_workload_json();
  doc["sequences"] = json::array();
  for (int i = 0; i < 65536; ++i) doc["sequences"].push_back({{"context_len", 0}});
  EXPECT_TRUE(problems_of(doc).empty());
  doc["sequences"].push_back({{"context_len", 0}});
  auto problems = problems_of(doc);
  ASSERT_EQ(problems.size(), 1u) << test::joined(problems);
  EXPECT_EQ(problems[0].rfind("/sequences: has 65537 entries; the limit is 65536", 0), 0u)
      << problems[0];
}

TEST(WorkloadRanges, Seed) {
  check_range_cases({
      {"/seed", 0, nullptr},
      {"/seed", 18446744073709551615ull, nullptr},
      {"/seed", -1, "expected an unsigned integer, got integer -1"},
      {"/seed", 1.5, "expected an unsigned integer, got number 1.5"},
      {"/seed", "7", "expected an unsigned integer, got string"},
  });
  json doc = valid_workload_json();
  doc["seed"] = 18446744073709551615ull;
  EXPECT_EQ(parse_workload(doc.dump(), "t").seed, 18446744073709551615ull);
}

// ---- canonical form and hash -------------------------------------------------------------------

void expect_same_spec(const WorkloadSpec& a, const WorkloadSpec& b) {
  EXPECT_EQ(a.schema_version, b.schema_version);
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.description, b.description);
  EXPECT_EQ(a.model.num_q_heads, b.model.num_q_heads);
  EXPECT_EQ(a.model.num_kv_heads, b.model.num_kv_heads);
  EXPECT_EQ(a.model.head_dim, b.model.head_dim);
  EXPECT_EQ(a.model.dtype, b.model.dtype);
  EXPECT_EQ(a.model.softmax_scale, b.model.softmax_scale);
  EXPECT_EQ(a.kv_cache.page_size, b.kv_cache.page_size);
  EXPECT_EQ(a.kv_cache.layout, b.kv_cache.layout);
  EXPECT_EQ(a.kv_cache.allocation, b.kv_cache.allocation);
  ASSERT_EQ(a.sequences.size(), b.sequences.size());
  for (size_t i = 0; i < a.sequences.size(); ++i) {
    EXPECT_EQ(a.sequences[i].context_len.value, b.sequences[i].context_len.value) << i;
    EXPECT_EQ(a.sequences[i].query_len.value, b.sequences[i].query_len.value) << i;
    EXPECT_EQ(a.sequences[i].count, b.sequences[i].count) << i;
  }
  EXPECT_EQ(a.seed, b.seed);
}

WorkloadSpec full_spec() {
  WorkloadSpec spec;
  spec.name = "full \xE2\x80\x94 \"quoted\"";
  spec.description = "every field set\nincluding a newline";
  spec.model.num_q_heads = 64;
  spec.model.num_kv_heads = 8;
  spec.model.head_dim = 192;
  spec.model.dtype = DType::fp16;
  spec.model.softmax_scale = 0.0721687836487032;
  spec.kv_cache = {7, KvLayout::hnd, PageAllocation::sequential};
  spec.sequences = {{0, 1, 3}, {4095, 17, 1}, {123456, 2, 9}};
  spec.seed = 18446744073709551615ull;
  return spec;
}

TEST(WorkloadCanonical, RoundTripsThroughTheCanonicalForm) {
  WorkloadSpec spec = full_spec();
  EXPECT_TRUE(validate_workload(spec).empty()) << test::joined(validate_workload(spec));
  WorkloadSpec back = parse_workload(canonical_json(spec), "canonical");
  expect_same_spec(spec, back);
  EXPECT_EQ(canonical_json(back), canonical_json(spec));

  WorkloadSpec minimal = parse_workload(valid_workload_json().dump(), "t");
  expect_same_spec(minimal, parse_workload(canonical_json(minimal), "canonical"));
}

TEST(WorkloadCanonical, WritesEveryFieldWithSortedKeys) {
  json doc = json::parse(R"({"schema_version": 1, "name": "m",
      "model": {"num_q_heads": 4, "num_kv_heads": 4, "head_dim": 64, "dtype": "bf16"},
      "sequences": [{"context_len": 3}]})");
  WorkloadSpec spec = parse_workload(doc.dump(), "t");
  EXPECT_EQ(
      canonical_json(spec),
      R"({"description":"","kv_cache":{"allocation":"shuffled","layout":"NHD","page_size":16},)"
      R"("model":{"dtype":"bf16","head_dim":64,"num_kv_heads":4,"num_q_heads":4},)"
      R"("name":"m","schema_version":1,"seed":0,)"
      R"("sequences":[{"context_len":3,"count":1,"query_len":1}]})");
  // softmax_scale appears only when given.
  EXPECT_FALSE(to_json(spec)["model"].contains("softmax_scale"));
  spec.model.softmax_scale = 0.5;
  EXPECT_EQ(to_json(spec)["model"]["softmax_scale"].get<double>(), 0.5);
}

TEST(WorkloadCanonical, HashIsStable) {
  json doc = json::parse(R"({"schema_version": 1, "name": "m",
      "model": {"num_q_heads": 4, "num_kv_heads": 4, "head_dim": 64, "dtype": "bf16"},
      "sequences": [{"context_len": 3}]})");
  WorkloadSpec spec = parse_workload(doc.dump(), "t");
  const std::string hash = content_hash(spec);
  EXPECT_EQ(hash.size(), 64u);
  EXPECT_EQ(hash.find_first_not_of("0123456789abcdef"), std::string::npos);
  // Pinned: a change here changes every stored workload's identity (results/ keys on it).
  EXPECT_EQ(hash, "c549c6706e707d5d59327dd51292397f9668c8b84750ad7e1a90a0d98ab0a225")
      << canonical_json(spec);
  // The same spec written differently (key order, whitespace, defaults spelled out) hashes alike.
  std::string other = R"({"sequences":[{"query_len":1,"context_len":3,"count":1}],"seed":0,
      "kv_cache":{"page_size":16},"name":"m","description":"",
      "model":{"dtype":"bf16","num_kv_heads":4,"head_dim":64,"num_q_heads":4},"schema_version":1})";
  EXPECT_EQ(content_hash(parse_workload(other, "t")), hash);
  EXPECT_EQ(content_hash(parse_workload(doc.dump(), "t")), hash);
}

TEST(WorkloadCanonical, ChangingAnyFieldChangesTheHash) {
  const WorkloadSpec base = full_spec();
  const std::string base_hash = content_hash(base);
  std::vector<std::pair<const char*, void (*)(WorkloadSpec&)>> edits = {
      {"name", [](WorkloadSpec& s) { s.name += "x"; }},
      {"description", [](WorkloadSpec& s) { s.description = ""; }},
      {"num_q_heads", [](WorkloadSpec& s) { s.model.num_q_heads = 32; }},
      {"num_kv_heads", [](WorkloadSpec& s) { s.model.num_kv_heads = 4; }},
      {"head_dim", [](WorkloadSpec& s) { s.model.head_dim = 128; }},
      {"dtype", [](WorkloadSpec& s) { s.model.dtype = DType::bf16; }},
      {"softmax_scale", [](WorkloadSpec& s) { s.model.softmax_scale = 0.0721687836487033; }},
      {"softmax_scale unset", [](WorkloadSpec& s) { s.model.softmax_scale.reset(); }},
      {"page_size", [](WorkloadSpec& s) { s.kv_cache.page_size = 8; }},
      {"layout", [](WorkloadSpec& s) { s.kv_cache.layout = KvLayout::nhd; }},
      {"allocation", [](WorkloadSpec& s) { s.kv_cache.allocation = PageAllocation::shuffled; }},
      {"context_len",
       [](WorkloadSpec& s) {
         s.sequences[1].context_len = LengthSpec(s.sequences[1].context_len.value + 1);
       }},
      {"query_len",
       [](WorkloadSpec& s) {
         s.sequences[1].query_len = LengthSpec(s.sequences[1].query_len.value + 1);
       }},
      {"count", [](WorkloadSpec& s) { s.sequences[0].count += 1; }},
      {"sequence order", [](WorkloadSpec& s) { std::swap(s.sequences[0], s.sequences[2]); }},
      {"sequence added",
       [](WorkloadSpec& s) {
         s.sequences.push_back({1, 1, 1});
       }},
      {"seed", [](WorkloadSpec& s) { s.seed -= 1; }},
  };
  std::set<std::string> hashes = {base_hash};
  for (const auto& [what, edit] : edits) {
    WorkloadSpec changed = base;
    edit(changed);
    const std::string hash = content_hash(changed);
    EXPECT_NE(hash, base_hash) << what;
    EXPECT_TRUE(hashes.insert(hash).second) << what << " collides with another edit";
  }
  EXPECT_EQ(content_hash(base), base_hash);  // and the same spec, the same hash
}

// ---- validate_workload: specs built in code --------------------------------------------------

TEST(WorkloadValidate, SpecsBuiltInCodeAreCheckedWithTheSameRules) {
  WorkloadSpec spec = full_spec();
  spec.model.num_kv_heads = 3;
  spec.kv_cache.page_size = 0;
  spec.sequences[1].query_len = 0;
  spec.model.dtype = DType::fp32;
  spec.name = "bad\xFF";
  auto problems = validate_workload(spec);
  EXPECT_PROBLEM(problems, "/model/num_kv_heads: must divide num_q_heads (64), got 3");
  EXPECT_PROBLEM(problems, "/kv_cache/page_size: must be in 1..256, got 0");
  EXPECT_PROBLEM(problems, "/sequences/1/query_len: must be >= 1, got 0");
  EXPECT_PROBLEM(problems, "/model/dtype: must be one of");
  EXPECT_PROBLEM(problems, "/name: is not valid UTF-8");
  EXPECT_EQ(problems.size(), 5u) << test::joined(problems);

  spec = full_spec();
  spec.model.softmax_scale = std::nan("");
  EXPECT_PROBLEM(validate_workload(spec), "/model/softmax_scale: must be a finite number > 0");
  spec.sequences.clear();
  EXPECT_PROBLEM(validate_workload(spec), "/sequences: must not be empty");
}

// ---- files -------------------------------------------------------------------------------------

std::string temp_path(const std::string& name) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/attn_workload_test_" + name;
}

TEST(WorkloadFile, LoadsAFile) {
  const std::string path = temp_path("ok.json");
  { std::ofstream(path) << valid_workload_json().dump(2); }
  WorkloadSpec spec = load_workload_file(path);
  EXPECT_EQ(spec.name, "unit");
  std::remove(path.c_str());
}

TEST(WorkloadFile, ProblemsNameThePath) {
  const std::string path = temp_path("bad.json");
  { std::ofstream(path) << "{\n  \"schema_version\": 1,\n  \"name\": 3\n}\n"; }
  try {
    load_workload_file(path);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.source(), path);
    EXPECT_PROBLEM(e.problems(), "/name: expected a string, got integer 3");
  }
  std::remove(path.c_str());
}

TEST(WorkloadFile, UnreadableFileNamesThePathAndTheReason) {
  const std::string missing = temp_path("does-not-exist.json");
  try {
    load_workload_file(missing);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.source(), missing);
    ASSERT_EQ(e.problems().size(), 1u);
    EXPECT_NE(e.problems()[0].find("No such file or directory"), std::string::npos)
        << e.problems()[0];
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos);
  }
  const char* dir = std::getenv("TMPDIR");
  const std::string directory = dir != nullptr ? dir : "/tmp";
  try {
    load_workload_file(directory);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.source(), directory);
    EXPECT_PROBLEM(e.problems(), "the file is a directory, not a regular file");
  }
}

TEST(WorkloadFile, HugeFileIsRefused) {
  const std::string path = temp_path("huge.json");
  {
    std::ofstream out(path);
    out << std::string((size_t(16) << 20) + 100, ' ');
  }
  try {
    load_workload_file(path);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_PROBLEM(e.problems(), "larger than the limit of 16777216 bytes");
  }
  std::remove(path.c_str());
}

}  // namespace
}  // namespace attn
