// Traces in other layouts: CSV with a column mapping (the Azure LLM inference trace), JSON lines
// (ShareGPT-style conversation lengths) and a JSON object of arrays (vLLM's benchmark results).
// The three shipped samples hold the first 40 requests of builtin:chat-sample, so each must give
// exactly those rows; and every way a mapped file can be wrong is refused with its line.
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "tests/workloads/test_util.hpp"
#include "workloads/trace_file.hpp"
#include "workloads/workload_spec.hpp"

namespace attn {
namespace {

using nlohmann::json;
using Rows = std::vector<std::pair<int64_t, int64_t>>;

json trace_workload(const json& trace) {
  json doc = test::valid_workload_json();
  doc["schema_version"] = 2;
  doc["sequences"] = json::array({{{"trace", trace}}});
  return doc;
}

Rows rows_of(const json& trace) {
  const WorkloadSpec spec = parse_workload(trace_workload(trace).dump(), "trace.json");
  return spec.sequences.at(0).trace->rows;
}

Rows chat_sample_head(size_t n) {
  const WorkloadSpec all =
      parse_workload(trace_workload({{"file", "builtin:chat-sample"}}).dump(), "t");
  Rows head = all.sequences[0].trace->rows;
  head.resize(n);
  return head;
}

TEST(TraceFormats, TheThreeSamplesGiveTheRowsOfTheChatSample) {
  const Rows expected = chat_sample_head(40);
  EXPECT_EQ(rows_of({{"file", "builtin:azure-llm-inference-sample"},
                     {"columns", {{"context", "ContextTokens"}, {"query", "GeneratedTokens"}}}}),
            expected);
  // The format follows the built-in file's ending (.jsonl, .json) when none is given.
  EXPECT_EQ(rows_of({{"file", "builtin:sharegpt-lengths-sample"},
                     {"columns", {{"context", "prompt_tokens"}, {"query", "completion_tokens"}}}}),
            expected);
  EXPECT_EQ(rows_of({{"file", "builtin:vllm-bench-result-sample"},
                     {"format", "json"},
                     {"columns", {{"context", "input_lens"}, {"query", "output_lens"}}}}),
            expected);
}

TEST(TraceFormats, AMappedWorkloadsSequencesAreThoseOfTheSameRowsInTheDefaultLayout) {
  json mapped =
      trace_workload({{"file", "builtin:sharegpt-lengths-sample"},
                      {"columns", {{"context", "prompt_tokens"}, {"query", "completion_tokens"}}},
                      {"phase", "chunked_prefill"},
                      {"chunk", 256}});
  json plain = trace_workload({{"file", "builtin:chat-sample"},
                               {"count", 40},
                               {"phase", "chunked_prefill"},
                               {"chunk", 256}});
  std::vector<SequenceLengths> a = expand_sequences(parse_workload(mapped.dump(), "a"));
  std::vector<SequenceLengths> b = expand_sequences(parse_workload(plain.dump(), "b"));
  ASSERT_EQ(a.size(), 40u);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].context_len, b[i].context_len) << i;
    EXPECT_EQ(a[i].query_len, b[i].query_len) << i;
  }
}

TEST(TraceFormats, FormatAndColumnsEnterTheCanonicalFormOnlyWhenWritten) {
  const json plain =
      to_json(parse_workload(trace_workload({{"file", "builtin:chat-sample"}}).dump(), "plain"));
  const json& trace = plain["sequences"][0]["trace"];
  EXPECT_FALSE(trace.contains("format"));
  EXPECT_FALSE(trace.contains("columns"));
  const json mapped_doc =
      trace_workload({{"file", "builtin:azure-llm-inference-sample"},
                      {"format", "csv"},
                      {"columns", {{"context", "ContextTokens"}, {"query", "GeneratedTokens"}}}});
  const WorkloadSpec mapped = parse_workload(mapped_doc.dump(), "mapped");
  const json canonical = to_json(mapped);
  EXPECT_EQ(canonical["sequences"][0]["trace"]["format"], "csv");
  EXPECT_EQ(canonical["sequences"][0]["trace"]["columns"]["query"], "GeneratedTokens");
  // The canonical form parses back to the same spec.
  EXPECT_EQ(content_hash(parse_workload(canonical.dump(), "again")), content_hash(mapped));
}

TEST(TraceFormats, CsvFieldsMayBeQuotedAndExtraColumnsAreIgnored) {
  const std::string text =
      "id,\"prompt, tokens\",out,note\n"
      "a,12,3,\"said \"\"hi\"\"\"\n"
      "\"b\",7,1,\n";
  TraceRows parsed = parse_trace(text, TraceFormat::csv, {"prompt, tokens", "out"});
  EXPECT_EQ(test::joined(parsed.problems), "");
  EXPECT_EQ(parsed.rows, (Rows{{12, 3}, {7, 1}}));
}

TEST(TraceFormats, TheDefaultCsvLayoutStillReadsPromptLenAndOutputLen) {
  TraceRows parsed = parse_trace("prompt_len,output_len\r\n5,6\r\n", TraceFormat::csv, {});
  EXPECT_EQ(test::joined(parsed.problems), "");
  EXPECT_EQ(parsed.rows, (Rows{{5, 6}}));
  EXPECT_EQ(trace_format_for("a/b.jsonl"), TraceFormat::jsonl);
  EXPECT_EQ(trace_format_for("b.json"), TraceFormat::json);
  EXPECT_EQ(trace_format_for("b.tsv"), TraceFormat::csv);
}

TEST(TraceFormats, EachWrongCsvIsRefusedWithItsLine) {
  const TraceColumns azure{"ContextTokens", "GeneratedTokens"};
  auto problems = [&](const std::string& text) {
    return parse_trace(text, TraceFormat::csv, azure).problems;
  };
  EXPECT_TRUE(test::has_problem(problems("TIMESTAMP,Context,GeneratedTokens\nx,1,2\n"),
                                {"line 1: no column \"ContextTokens\" in the header"}));
  EXPECT_TRUE(test::has_problem(problems("ContextTokens,ContextTokens,GeneratedTokens\n1,1,2\n"),
                                {"line 1: more than one column \"ContextTokens\""}));
  EXPECT_TRUE(test::has_problem(problems("t,ContextTokens,GeneratedTokens\nx,1\n"),
                                {"line 2: expected 3 comma-separated fields"}));
  EXPECT_TRUE(test::has_problem(
      problems("t,ContextTokens,GeneratedTokens\nx,1,0\n"),
      {"line 2: column \"GeneratedTokens\": expected an integer in 1..2147483647", "got \"0\""}));
  EXPECT_TRUE(test::has_problem(problems("t,ContextTokens,GeneratedTokens\nx,\"1,2\n"),
                                {"line 2: expected 3 comma-separated fields"}));
  EXPECT_TRUE(test::has_problem(problems("t,ContextTokens,GeneratedTokens\n"),
                                {"line 2: the trace has no rows"}));
  EXPECT_TRUE(test::has_problem(problems(""), {"line 1: the file is empty"}));
  // A file with problems gives no rows, and at most 10 problems and a count.
  std::string many = "t,ContextTokens,GeneratedTokens\n";
  for (int i = 0; i < 30; ++i) many += "x,-1,2\n";
  TraceRows parsed = parse_trace(many, TraceFormat::csv, azure);
  EXPECT_TRUE(parsed.rows.empty());
  ASSERT_EQ(parsed.problems.size(), 11u);
  EXPECT_EQ(parsed.problems.back(), "... and 20 more lines");
}

TEST(TraceFormats, EachWrongJsonLinesFileIsRefusedWithItsLine) {
  const TraceColumns sharegpt{"prompt_tokens", "completion_tokens"};
  auto problems = [&](const std::string& text) {
    return parse_trace(text, TraceFormat::jsonl, sharegpt).problems;
  };
  const std::string good = "{\"prompt_tokens\": 4, \"completion_tokens\": 2}\n";
  EXPECT_EQ(parse_trace(good + good, TraceFormat::jsonl, sharegpt).rows, (Rows{{4, 2}, {4, 2}}));
  EXPECT_TRUE(test::has_problem(problems(good + "[1, 2]\n"),
                                {"line 2: expected a JSON object, got array"}));
  EXPECT_TRUE(test::has_problem(problems(good + "{\"prompt_tokens\": 4}\n"),
                                {"line 2: no key \"completion_tokens\""}));
  EXPECT_TRUE(test::has_problem(
      problems("{\"prompt_tokens\": 4.5, \"completion_tokens\": 2}\n"),
      {"line 1: \"prompt_tokens\": expected an integer in 1..2147483647", "got \"4.5\""}));
  EXPECT_TRUE(test::has_problem(problems(good + "{\"prompt_tokens\": 4, \"prompt_tokens\": 5}\n"),
                                {"line 2: expected one JSON object", "duplicate key"}));
  EXPECT_TRUE(
      test::has_problem(problems(good + "\n" + good), {"line 2: expected one JSON object"}));
  EXPECT_TRUE(test::has_problem(problems("{\"prompt_tokens\": NaN, \"completion_tokens\": 1}\n"),
                                {"line 1: expected one JSON object"}));
}

TEST(TraceFormats, EachWrongJsonArraysFileIsRefused) {
  const TraceColumns vllm{"input_lens", "output_lens"};
  auto problems = [&](const std::string& text) {
    return parse_trace(text, TraceFormat::json, vllm).problems;
  };
  EXPECT_EQ(parse_trace("{\"input_lens\": [3, 4], \"output_lens\": [1, 2], \"ttfts\": [0.1]}",
                        TraceFormat::json, vllm)
                .rows,
            (Rows{{3, 1}, {4, 2}}));
  EXPECT_TRUE(test::has_problem(problems("{\"input_lens\": [3, 4], \"output_lens\": [1]}"),
                                {"\"input_lens\" has 2 entries, \"output_lens\" 1"}));
  EXPECT_TRUE(test::has_problem(problems("{\"input_lens\": [3], \"output_lens\": [\"1\"]}"),
                                {"/output_lens/0: expected an integer in 1..2147483647"}));
  EXPECT_TRUE(test::has_problem(problems("{\"input_lens\": 3, \"output_lens\": [1]}"),
                                {"/input_lens: expected an array, got integer"}));
  EXPECT_TRUE(
      test::has_problem(problems("{\"output_lens\": [1]}"), {"/input_lens: missing member"}));
  EXPECT_TRUE(test::has_problem(problems("[1]"), {"(top level): expected an object"}));
  EXPECT_TRUE(
      test::has_problem(problems("{\"input_lens\": [], \"output_lens\": []}"), {"no rows"}));
}

TEST(TraceFormats, TheWorkloadRefusesAWrongFormatOrMappingAndNamesTheFormatItRead) {
  auto problems = [](const json& trace) { return test::problems_of(trace_workload(trace)); };
  EXPECT_TRUE(test::has_problem(
      problems({{"file", "builtin:chat-sample"}, {"format", "tsv"}}),
      {"/sequences/0/trace/format: must be one of \"csv\", \"jsonl\", \"json\""}));
  EXPECT_TRUE(test::has_problem(
      problems({{"file", "builtin:chat-sample"}, {"columns", {{"context", "a"}, {"query", "a"}}}}),
      {"/sequences/0/trace/columns: context and query must name different columns"}));
  EXPECT_TRUE(test::has_problem(
      problems({{"file", "builtin:chat-sample"}, {"columns", {{"context", "a"}}}}),
      {"/sequences/0/trace/columns/query: missing required key"}));
  EXPECT_TRUE(
      test::has_problem(problems({{"file", "builtin:chat-sample"},
                                  {"columns", {{"context", "a"}, {"query", "b"}, {"qurey", "c"}}}}),
                        {"/sequences/0/trace/columns/qurey: unknown key"}));
  EXPECT_TRUE(test::has_problem(
      problems({{"file", "builtin:chat-sample"},
                {"columns", {{"context", "ContextTokens"}, {"query", "GeneratedTokens"}}}}),
      {"/sequences/0/trace/file: \"builtin:chat-sample\" (csv) line 1: no column "
       "\"ContextTokens\""}));
  // A JSON lines file read as CSV: the format named in the message says what was assumed.
  EXPECT_TRUE(
      test::has_problem(problems({{"file", "builtin:sharegpt-lengths-sample"}, {"format", "csv"}}),
                        {"(csv) line 1: the header's quoting is broken"}));
  // Version 1 files have no traces at all.
  json v1 = trace_workload({{"file", "builtin:chat-sample"}});
  v1["schema_version"] = 1;
  EXPECT_TRUE(test::has_problem(test::problems_of(v1), {"needs schema_version 2"}));
}

}  // namespace
}  // namespace attn
