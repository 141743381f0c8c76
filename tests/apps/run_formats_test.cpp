// `attn-bench run --format table|csv|md|json` and `--quiet`: each format of the run's table
// parses as what it claims to be and holds every case, CSV and JSON carry raw numbers, the
// formats other than the table put nothing else on stdout, and --quiet leaves only the table.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/apps/cli_runner.hpp"

namespace attn {
namespace {

using testing::Cli;
using testing::CliResult;
using testing::kUsage;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Fields of a CSV line (RFC 4180 quoting).
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      fields.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  return fields;
}

// A decode batch small enough for a CPU run of a fraction of a second.
constexpr const char* kTinyDecode = R"({
  "schema_version": 1,
  "name": "formats-tiny",
  "model": {"num_q_heads": 4, "num_kv_heads": 2, "head_dim": 64, "dtype": "bf16"},
  "kv_cache": {"page_size": 16},
  "sequences": [{"context_len": 63, "query_len": 1, "count": 3}],
  "seed": 7
})";

class RunFormats : public Cli {
 protected:
  // A short CPU run: one timed variant, four that decline the batch (one CPU reference per
  // family).
  CliResult run_with(std::vector<std::string> extra) {
    write("tiny.json", kTinyDecode);
    std::vector<std::string> args = {"run", "tiny.json", "--cpu", "--samples", "2",   "--warmup",
                                     "0",   "--noise",   "0.9",   "--db",      "r.db"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run(args);
  }
};

TEST_F(RunFormats, CsvIsOneHeaderRowAndOneRowPerCaseWithRawNumbers) {
  const CliResult r = run_with({"--format", "csv"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 6u) << r.out;  // nothing but the table on stdout
  const std::vector<std::string> header = csv_fields(lines[0]);
  EXPECT_EQ(header[0], "variant");
  const auto column = [&](const std::string& name) {
    return size_t(std::find(header.begin(), header.end(), name) - header.begin());
  };
  ASSERT_LT(column("median_us"), header.size());
  for (size_t i = 1; i < lines.size(); ++i) EXPECT_EQ(csv_fields(lines[i]).size(), header.size());
  const std::vector<std::string> timed = csv_fields(lines[1]);
  EXPECT_EQ(timed[0], "paged_decode.cpu_reference");
  EXPECT_GT(std::stod(timed[column("median_us")]), 0.0);
  EXPECT_EQ(timed[column("samples")], "2");
  // A declined case: empty numbers, the reason (which holds commas: quoted) in full.
  const std::vector<std::string> declined = csv_fields(lines[2]);
  EXPECT_EQ(declined[column("status")], "unsupported");
  EXPECT_EQ(declined[column("median_us")], "");
  EXPECT_FALSE(declined[column("reason")].empty());
  // The lines about the batch and the device went to stderr.
  EXPECT_NE(r.err.find("workload  formats-tiny"), std::string::npos) << r.err;
}

TEST_F(RunFormats, JsonIsOneObjectWithTypedRows) {
  const CliResult r = run_with({"--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json doc = nlohmann::json::parse(r.out);  // stdout is the JSON alone
  EXPECT_EQ(doc["run_id"], 1);
  EXPECT_EQ(doc["database"], "r.db");
  ASSERT_EQ(doc["rows"].size(), 5u);
  const nlohmann::json& timed = doc["rows"][0];
  EXPECT_EQ(timed["variant"], "paged_decode.cpu_reference");
  EXPECT_TRUE(timed["median_us"].is_number());
  EXPECT_EQ(timed["samples"], 2);
  EXPECT_TRUE(timed["rel_err"].is_number());
  EXPECT_TRUE(doc["rows"][1]["median_us"].is_null());
  EXPECT_FALSE(doc["rows"][1]["notes"].empty());
}

TEST_F(RunFormats, MarkdownIsATableWithTheNotesAsAList) {
  const CliResult r = run_with({"--format", "md"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> lines = lines_of(r.out);
  ASSERT_GE(lines.size(), 6u) << r.out;
  EXPECT_EQ(lines[0].rfind("| variant | status | median_us |", 0), 0u) << lines[0];
  EXPECT_EQ(lines[1].rfind("|---|---|---:|", 0), 0u) << lines[1];
  size_t rows = 0, notes = 0;
  for (size_t i = 2; i < lines.size(); ++i) {
    rows += lines[i].rfind("| ", 0) == 0;
    notes += lines[i].rfind("- ", 0) == 0;
  }
  EXPECT_EQ(rows, 5u);
  EXPECT_GE(notes, 4u);  // the four declines
  EXPECT_NE(r.out.find("Recorded as run 1 in `r.db`"), std::string::npos);
}

TEST_F(RunFormats, QuietLeavesTheTableAlone) {
  const CliResult r = run_with({"--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("variant ", 0), 0u) << "the table first:\n" << r.out;
  EXPECT_EQ(r.out.find("workload  "), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find("[1/5]"), std::string::npos) << "no progress:\n" << r.err;
  EXPECT_EQ(r.err.find("workload  "), std::string::npos) << r.err;
  // Without --quiet the table format keeps everything on stdout, as before.
  const CliResult table = run_with({});
  EXPECT_NE(table.out.find("workload  formats-tiny"), std::string::npos);
  EXPECT_NE(table.out.find("recorded  run 2 in r.db"), std::string::npos) << table.out;
  EXPECT_NE(table.err.find("[1/5]"), std::string::npos) << table.err;
}

TEST_F(RunFormats, AnUnknownFormatIsAUsageError) {
  const CliResult r = run_with({"--format", "xml"});
  EXPECT_EQ(r.exit_code, kUsage);
  EXPECT_NE(r.err.find("--format 'xml': use table, csv, md or json"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace attn
