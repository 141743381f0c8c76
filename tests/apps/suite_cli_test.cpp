// Suites from the command line, run as a user would: `run --suite` runs every workload and prints
// one combined table (the fastest passed case of each workload marked), records one run per
// workload; "SUITE#WORKLOAD" runs one; `tune --suite` tunes each and prints the winners (and the
// planner's config behind each); bad suites and misuse are refused before any work with the
// documented exit codes.
#include <gtest/gtest.h>

#include <string>

#include "results/store.hpp"
#include "tests/apps/cli_runner.hpp"
#include "tests/apps/tiny_suite_workloads.hpp"

namespace attn {
namespace {

using testing::CliResult;

class SuiteCli : public testing::Cli {
 protected:
  std::string tiny_suite() {
    return write("tiny.json", std::string(R"({"schema_version": 1, "name": "tiny",
      "description": "two small decode batches", "workloads": [)") +
                                  testing::kTinyDecodeWorkloads + "]}")
        .string();
  }
};

TEST_F(SuiteCli, RunPrintsOneTableOverEveryWorkloadAndRecordsEach) {
  const CliResult r = run({"run", "--suite", tiny_suite(), "--cpu", "--samples", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const size_t table = r.out.find("suite     tiny: 2 workloads with a passing variant");
  ASSERT_NE(table, std::string::npos) << r.out;
  const std::string combined = r.out.substr(table);
  EXPECT_NE(combined.find("of ceiling"), std::string::npos);
  for (const std::string workload : {"tiny-a", "tiny-b"}) {
    size_t row = combined.find("\n" + workload + " ");
    ASSERT_NE(row, std::string::npos) << workload << "\n" << combined;
    ++row;
    const std::string line = combined.substr(row, combined.find('\n', row) - row);
    EXPECT_NE(line.find(" paged_decode.cpu_reference "), std::string::npos) << line;
    EXPECT_NE(line.find(" passed "), std::string::npos) << line;
    EXPECT_EQ(line.back(), '*') << "the fastest passed case is marked: " << line;
  }
  // Declined variants stay in each workload's own table, not in the combined one.
  EXPECT_EQ(combined.find("unsupported"), std::string::npos) << combined;
  EXPECT_NE(r.err.find("suite tiny: workload 2 of 2"), std::string::npos) << r.err;
  Store store((dir_ / "attn-bench.db").string());
  EXPECT_EQ(store.runs().size(), 2u);
}

TEST_F(SuiteCli, OneWorkloadOfASuiteByName) {
  const std::string suite = tiny_suite();
  CliResult r = run({"run", suite + "#tiny-b", "--cpu", "--samples", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("workload  tiny-b ("), std::string::npos) << r.out;
  r = run({"workload", "show", "decode-shapes#shapes-g7-d128-64x4096"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("28 q heads, 4 kv heads (GQA 7)"), std::string::npos) << r.out;
  r = run({"workload", "show", "decode-shapes#shapes-nope"});
  EXPECT_EQ(r.exit_code, testing::kUsage);
  EXPECT_NE(r.err.find("has no workload named 'shapes-nope'"), std::string::npos) << r.err;
}

TEST_F(SuiteCli, AGlobAfterTheSuiteRunsTheWorkloadsItMatches) {
  const CliResult r = run({"run", "--suite", tiny_suite() + "#*-b", "--cpu", "--samples", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const size_t table = r.out.find("#*-b: 1 workloads with a passing variant");
  ASSERT_NE(table, std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\ntiny-b ", table), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("tiny-a"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("workload 1 of 1"), std::string::npos) << r.err;
  const CliResult none = run({"run", "--suite", tiny_suite() + "#nothing*", "--cpu"});
  EXPECT_EQ(none.exit_code, testing::kUsage);
  EXPECT_NE(none.err.find("matches 'nothing*'"), std::string::npos) << none.err;
}

TEST_F(SuiteCli, TuneTunesEachWorkloadAndPrintsTheWinners) {
  binary_ = ATTN_TUNE_BINARY;
  const CliResult t =
      run({"tune", "--suite", tiny_suite(), "--cpu", "--variant", "paged_decode.cpu_reference"});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  const size_t winners = t.out.find("suite     tiny: winners");
  ASSERT_NE(winners, std::string::npos) << t.out;
  EXPECT_NE(t.out.find("tiny-a    paged_decode.cpu_reference", winners), std::string::npos)
      << t.out;
  EXPECT_NE(t.out.find("tiny-b    paged_decode.cpu_reference", winners), std::string::npos)
      << t.out;
  // Beside each winner, how far the planner's config (here the winner itself) ran behind it.
  EXPECT_NE(t.out.find("planner's config behind it", winners), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("paged_decode.cpu_reference +0.0% (confirm)", winners), std::string::npos)
      << t.out;
}

TEST_F(SuiteCli, TuneTakesAGlobAfterTheSuite) {
  binary_ = ATTN_TUNE_BINARY;
  const CliResult t = run({"tune", "--suite", tiny_suite() + "#tiny-?", "--cpu", "--variant",
                           "paged_decode.cpu_reference"});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  const size_t winners = t.out.find("#tiny-?: winners");
  ASSERT_NE(winners, std::string::npos) << t.out;
  EXPECT_NE(t.out.find("tiny-a    paged_decode.cpu_reference", winners), std::string::npos)
      << t.out;
  const CliResult one = run({"tune", "--suite", tiny_suite() + "#*b", "--cpu", "--variant",
                             "paged_decode.cpu_reference"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_NE(one.out.find("tiny-b    paged_decode.cpu_reference"), std::string::npos) << one.out;
  EXPECT_EQ(one.out.find("tiny-a"), std::string::npos) << one.out;
}

TEST_F(SuiteCli, BadSuitesAndMisuseAreRefusedBeforeAnyWork) {
  const std::string bad = write("bad.json", R"({"schema_version": 1, "name": "bad",
    "workloads": ["default", {"name": "x"}]})")
                              .string();
  CliResult r = run({"run", "--suite", bad, "--cpu"});
  EXPECT_EQ(r.exit_code, testing::kInvalidInput) << r.err;
  EXPECT_NE(r.err.find("/workloads/1"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("workload  default"), std::string::npos) << "nothing ran: " << r.out;
  r = run({"run", "--suite", "no-such-suite", "--cpu"});
  EXPECT_EQ(r.exit_code, testing::kUsage);
  EXPECT_NE(r.err.find("built-in suites: decode-shapes"), std::string::npos) << r.err;
  r = run({"run", "default", "--suite", tiny_suite(), "--cpu"});
  EXPECT_EQ(r.exit_code, testing::kUsage);
  r = run({"run", "--suite", tiny_suite(), "--cpu", "--benchmark_format=json"});
  EXPECT_EQ(r.exit_code, testing::kUsage);
  EXPECT_NE(r.err.find("need a single workload"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace attn
