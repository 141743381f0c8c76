#include "workloads/strict_json.hpp"

#include <string>

#include <gtest/gtest.h>

#include "tests/workloads/test_util.hpp"

namespace attn {
namespace {

TEST(WorkloadStrictJson, ParsesAValidDocument) {
  StrictJsonResult r = parse_strict_json(R"({"a": [1, -2, 3.5, "x", null, true], "b": {"c": {}}})");
  EXPECT_TRUE(r.complete);
  EXPECT_TRUE(r.problems.empty()) << test::joined(r.problems);
  EXPECT_EQ(r.value["a"][1].get<int>(), -2);
  EXPECT_EQ(r.value["a"][3].get<std::string>(), "x");
  EXPECT_TRUE(r.value["b"]["c"].is_object());
}

TEST(WorkloadStrictJson, SyntaxErrorHasLineAndColumnOnMultiLineInput) {
  // The missing comma: the parser finds "seed" where it expected ',' or '}' (line 4, column 3).
  const std::string text =
      "{\n"
      "  \"schema_version\": 1,\n"
      "  \"name\": \"x\"\n"
      "  \"seed\": 3\n"
      "}\n";
  StrictJsonResult r = parse_strict_json(text);
  EXPECT_FALSE(r.complete);
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_EQ(r.problems[0].rfind("line 4, column 3: ", 0), 0u) << r.problems[0];
  EXPECT_NE(r.problems[0].find("expected '}'"), std::string::npos) << r.problems[0];
  EXPECT_EQ(r.problems[0].find("json.exception"), std::string::npos) << r.problems[0];
}

TEST(WorkloadStrictJson, SyntaxErrorColumnCountsCharactersNotBytes) {
  // "é" is two bytes; the stray comma is the 14th character of line 2.
  StrictJsonResult r = parse_strict_json("{\n  \"\xC3\xA9\": [1, 2,, 3]}");
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_EQ(r.problems[0].rfind("line 2, column 14: ", 0), 0u) << r.problems[0];
  EXPECT_NE(r.problems[0].find("unexpected ','"), std::string::npos) << r.problems[0];
}

TEST(WorkloadStrictJson, SyntaxErrorAtEndOfInput) {
  StrictJsonResult r = parse_strict_json("{\n  \"a\": 1,\n");
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_EQ(r.problems[0].rfind("line 3, column 1: ", 0), 0u) << r.problems[0];
  EXPECT_NE(r.problems[0].find("unexpected end of input"), std::string::npos);

  r = parse_strict_json("");
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_EQ(r.problems[0].rfind("line 1, column 1: ", 0), 0u) << r.problems[0];
}

TEST(WorkloadStrictJson, TrailingGarbageAndBadLiteralsAreErrors) {
  StrictJsonResult r = parse_strict_json("{\"a\": 1} x");
  EXPECT_FALSE(r.complete);
  EXPECT_PROBLEM(r.problems, "line 1, column 10", "expected end of input");
  r = parse_strict_json("{\"a\": tru}");
  EXPECT_PROBLEM(r.problems, "line 1, column 10", "invalid literal");
  r = parse_strict_json("{\"a\": 1e999}");
  EXPECT_PROBLEM(r.problems, "line 1", "number overflow");
  r = parse_strict_json("{\"a\": 1, /* comment */ \"b\": 2}");
  EXPECT_FALSE(r.complete);
}

TEST(WorkloadStrictJson, DuplicateKeyNamesItsPointerAndKeepsTheFirstValue) {
  StrictJsonResult r = parse_strict_json(R"({"model": {"head_dim": 64, "head_dim": 128}})");
  EXPECT_TRUE(r.complete);
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_EQ(r.problems[0], "/model/head_dim: duplicate key");
  EXPECT_EQ(r.value["model"]["head_dim"].get<int>(), 64);
}

TEST(WorkloadStrictJson, DuplicatesInsideDiscardedValuesAndArraysAreFound) {
  StrictJsonResult r =
      parse_strict_json(R"({"a": 1, "a": {"b": 1, "b": 2}, "s": [{}, {"x/y": 1, "x/y": 2}]})");
  EXPECT_TRUE(r.complete);
  ASSERT_EQ(r.problems.size(), 3u) << test::joined(r.problems);
  EXPECT_EQ(r.problems[0], "/a: duplicate key");
  EXPECT_EQ(r.problems[1], "/a/b: duplicate key");
  EXPECT_EQ(r.problems[2], "/s/1/x~1y: duplicate key");
  EXPECT_EQ(r.value["a"].get<int>(), 1);
}

std::string nested_arrays(int depth) {
  return std::string(size_t(depth), '[') + std::string(size_t(depth), ']');
}

TEST(WorkloadStrictJson, NestingIsLimitedTo64Levels) {
  EXPECT_TRUE(parse_strict_json(nested_arrays(64)).complete);
  StrictJsonResult r = parse_strict_json(nested_arrays(65));
  EXPECT_FALSE(r.complete);
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_NE(r.problems[0].find("nested deeper than 64 levels"), std::string::npos);
  // The 65th array is element 0 of 64 enclosing arrays.
  std::string pointer;
  for (int i = 0; i < 64; ++i) pointer += "/0";
  EXPECT_EQ(r.problems[0].rfind(pointer + ": ", 0), 0u) << r.problems[0];
  // Far deeper input fails the same way, without recursion.
  EXPECT_FALSE(parse_strict_json(nested_arrays(100000)).complete);
}

TEST(WorkloadStrictJson, InputOverTheSizeLimitIsRefused) {
  StrictJsonLimits limits;
  limits.max_bytes = 10;
  StrictJsonResult r = parse_strict_json("{\"a\": 12345}", limits);
  EXPECT_FALSE(r.complete);
  EXPECT_PROBLEM(r.problems, "12 bytes", "limit is 10 bytes");
  EXPECT_TRUE(parse_strict_json("{\"a\": 12}", limits).complete);
}

TEST(WorkloadStrictJson, ValueCountIsLimited) {
  StrictJsonLimits limits;
  limits.max_values = 5;  // the object and four numbers
  EXPECT_TRUE(parse_strict_json(R"({"a": [1, 2], "b": 3})", limits).complete);
  StrictJsonResult r = parse_strict_json(R"({"a": [1, 2], "b": 3, "c": 4})", limits);
  EXPECT_FALSE(r.complete);
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_EQ(r.problems[0], "/c: the document holds more than 5 values");
  // Containers count too.
  EXPECT_FALSE(parse_strict_json("[[], [], [], [], []]", limits).complete);
  // The default: 2^21 values, so that 16 MiB of small numbers cannot grow a 300 MB DOM.
  std::string many = "[0";
  for (size_t i = 1; i < (size_t(1) << 21); ++i) many += ",0";
  EXPECT_FALSE(parse_strict_json(many + "]").complete);  // the array and 2^21 numbers
  many.erase(many.size() - 2);
  EXPECT_TRUE(parse_strict_json(many + "]").complete);
}

TEST(WorkloadStrictJson, PointerTokensAreEscaped) {
  EXPECT_EQ(json_pointer_token("a/b~c"), "a~1b~0c");
  EXPECT_EQ(json_pointer_token("plain"), "plain");
}

TEST(WorkloadStrictJson, TextPosition) {
  const std::string text =
      "ab\nc\xC3\xA9"
      "d\n";
  EXPECT_EQ(text_position(text, 0).line, 1u);
  EXPECT_EQ(text_position(text, 0).column, 1u);
  EXPECT_EQ(text_position(text, 2).column, 3u);
  EXPECT_EQ(text_position(text, 3).line, 2u);
  EXPECT_EQ(text_position(text, 3).column, 1u);
  EXPECT_EQ(text_position(text, 6).column, 3u);  // 'd', after the two-byte 'é'
  EXPECT_EQ(text_position(text, 100).line, 3u);  // clamped to the end
}

}  // namespace
}  // namespace attn
