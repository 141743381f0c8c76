// attn-bench run through Google Benchmark, on the CPU reference variant: the JSON has the shape
// Google Benchmark's tools/compare.py reads, the flags behave as its users expect, and the
// A/A repeat check is printed and stored; every output format works on a batch that mixes passed,
// declined and failed cases.
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "base/exit_codes.hpp"
#include "results/store.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

class GbenchCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("attn-gbench-test-" + std::to_string(::getpid()) + "-" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static std::string slurp(const fs::path& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  // Runs attn-bench with a fast CPU policy: two samples, no warm-up wait.
  int run(const std::vector<std::string>& args) {
    std::string command =
        "cd '" + dir_.string() + "' && ATTN_DB= " + env_ + " '" + ATTN_BENCH_BINARY + "'";
    for (const auto& a : args) command += " '" + a + "'";
    command += " >stdout 2>stderr";
    const int status = std::system(command.c_str());
    out_ = slurp(dir_ / "stdout");
    err_ = slurp(dir_ / "stderr");
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  // One case: the default (decode) preset has one supporting CPU variant, and the filter keeps
  // the other families' CPU variants (which decline decode batches) from adding "unsupported" rows.
  // --max-time lifts the screen policy's 1 s cap, which a sanitized build (make test-asan) can
  // reach after one sample.
  std::vector<std::string> fast_cpu_run() {
    return {"run", "--cpu",   "--policy", "screen",     "--samples", "2",         "--warmup",
            "0",   "--noise", "0.9",      "--max-time", "30",        "--variant", "paged_decode.*"};
  }

  fs::path dir_;
  std::string env_;  // "NAME=value ..." for the binary
  std::string out_, err_;
};

// The keys compare.py (tools/gbench/report.py, util.py) reads from each file.
void expect_compare_py_shape(const nlohmann::json& j) {
  ASSERT_TRUE(j.contains("context")) << j.dump(2);
  ASSERT_TRUE(j["context"].is_object());
  EXPECT_TRUE(j["context"].contains("date"));
  EXPECT_TRUE(j["context"].contains("attn_device_fingerprint"));
  EXPECT_TRUE(j["context"].contains("attn_policy"));
  ASSERT_TRUE(j.contains("benchmarks"));
  ASSERT_TRUE(j["benchmarks"].is_array());
  ASSERT_FALSE(j["benchmarks"].empty());
  for (const auto& b : j["benchmarks"]) {
    for (const char* key :
         {"name", "run_name", "run_type", "iterations", "real_time", "cpu_time", "time_unit",
          "repetitions", "family_index", "per_family_instance_index"}) {
      EXPECT_TRUE(b.contains(key)) << key << " missing in " << b.dump();
    }
    EXPECT_TRUE(b["name"].is_string());
    EXPECT_TRUE(b["real_time"].is_number());
    EXPECT_TRUE(b["cpu_time"].is_number());
    EXPECT_EQ(b["time_unit"], "us");
    EXPECT_TRUE(b["run_type"] == "iteration" || b["run_type"] == "aggregate");
    if (b["run_type"] == "aggregate") {
      EXPECT_TRUE(b.contains("aggregate_name"));
    }
  }
}

TEST_F(GbenchCli, JsonOnStdoutHasTheShapeCompareReadsAndOurCounters) {
  auto args = fast_cpu_run();
  args.push_back("--benchmark_format=json");
  ASSERT_EQ(run(args), 0) << err_;
  const nlohmann::json j = nlohmann::json::parse(out_);  // stdout is JSON alone
  expect_compare_py_shape(j);
  const auto& b = j["benchmarks"][0];
  EXPECT_NE(b["name"].get<std::string>().find("default-decode-small/paged_decode.cpu_reference"),
            std::string::npos);
  EXPECT_EQ(b["iterations"], 1);
  EXPECT_GT(b["real_time"].get<double>(), 0);
  EXPECT_GT(b["GB/s"].get<double>(), 0);
  EXPECT_TRUE(b.contains("TFLOP/s"));
  EXPECT_EQ(b["samples"], 2);
  // attn-bench's own table went to stderr, and the result was recorded.
  EXPECT_NE(err_.find("median_us"), std::string::npos) << err_;
  Store store((dir_ / "attn-bench.db").string());
  EXPECT_EQ(store.counts().measurements, 1);
}

TEST_F(GbenchCli, RepetitionsOutFileAndFilterBehaveAsInGoogleBenchmark) {
  auto args = fast_cpu_run();
  args.push_back("--benchmark_repetitions=2");
  args.push_back("--benchmark_out=result.json");
  args.push_back("--benchmark_filter=cpu_reference");
  ASSERT_EQ(run(args), 0) << err_;
  EXPECT_NE(out_.find("median_us"), std::string::npos);  // no format chosen: our table on stdout
  const nlohmann::json j = nlohmann::json::parse(slurp(dir_ / "result.json"));
  expect_compare_py_shape(j);
  int iterations = 0, aggregates = 0;
  for (const auto& b : j["benchmarks"]) {
    (b["run_type"] == "aggregate" ? aggregates : iterations)++;
  }
  EXPECT_EQ(iterations, 2);
  EXPECT_GE(aggregates, 3);  // mean, median, stddev (and cv)
  Store store((dir_ / "attn-bench.db").string());
  EXPECT_EQ(store.counts().measurements, 2);  // each repetition is a measurement

  auto none = fast_cpu_run();
  none.push_back("--benchmark_filter=no_such_case");
  EXPECT_EQ(run(none), int(ExitCode::usage)) << err_;
  EXPECT_NE(err_.find("matched no case"), std::string::npos) << err_;
}

TEST_F(GbenchCli, CsvFormatAndBadFlags) {
  auto args = fast_cpu_run();
  args.push_back("--benchmark_format=csv");
  ASSERT_EQ(run(args), 0) << err_;
  EXPECT_EQ(out_.rfind("name,iterations,real_time,cpu_time,time_unit", 0), 0u) << out_;

  auto bad = fast_cpu_run();
  bad.push_back("--benchmark_no_such_flag=1");
  EXPECT_EQ(run(bad), int(ExitCode::usage)) << err_;
  {
    // The run this started is closed with the reason, not left "running".
    Store store((dir_ / "attn-bench.db").string());
    const auto run = store.run(2);
    ASSERT_TRUE(run.has_value());
    EXPECT_EQ(run->status.rfind("error: unknown Google Benchmark flag", 0), 0u) << run->status;
    EXPECT_TRUE(run->finished_at.has_value());
  }
  EXPECT_EQ(run({"devices", "--benchmark_format=json"}), int(ExitCode::usage)) << err_;
  EXPECT_NE(err_.find("apply to `attn-bench run` only"), std::string::npos) << err_;
}

TEST_F(GbenchCli, RepeatCheckPrintsAndStoresTheAaDifference) {
  auto args = fast_cpu_run();
  args.push_back("--repeat-check");
  ASSERT_EQ(run(args), 0) << err_;
  EXPECT_NE(out_.find("repeat-check paged_decode.cpu_reference"), std::string::npos) << out_;
  Store store((dir_ / "attn-bench.db").string());
  EXPECT_EQ(store.counts().measurements, 2);
  const auto checks = store.repeat_checks_of_run(1);
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_NE(checks[0].first_measurement_id, checks[0].second_measurement_id);
  EXPECT_TRUE(checks[0].verdict == "SAME" || checks[0].verdict == "FASTER" ||
              checks[0].verdict == "SLOWER");
}

TEST_F(GbenchCli, CalibrateWithoutAGpuIsAnEnvironmentError) {
  if (std::getenv("ATTN_TEST_HAS_GPU")) GTEST_SKIP() << "a GPU is present";
  const int code = run({"calibrate"});
  if (out_.find("device ") != std::string::npos) GTEST_SKIP() << "a GPU is present";
  EXPECT_EQ(code, int(ExitCode::environment)) << err_;
  EXPECT_NE(err_.find("needs a GPU"), std::string::npos) << err_;
}

// Google Benchmark's own compare.py (Debian: libbenchmark-tools, which needs python3-scipy) reads
// two of our JSON files and prints its comparison table. Skipped where it is not installed; the CI
// set-up installs it (scripts/install-deps.sh).
TEST_F(GbenchCli, CompareToolOfGoogleBenchmarkAcceptsOurJson) {
  const char* compare = "/usr/share/benchmark/compare.py";
  if (!fs::exists(compare) || std::system("/usr/bin/python3 -c 'import scipy' 2>/dev/null") != 0) {
    GTEST_SKIP() << "Google Benchmark's compare.py (libbenchmark-tools + python3-scipy) is not "
                    "installed";
  }
  for (const char* file : {"a.json", "b.json"}) {
    auto args = fast_cpu_run();
    args.push_back(std::string("--benchmark_out=") + file);
    ASSERT_EQ(run(args), 0) << err_;
  }
  const std::string command = "cd '" + dir_.string() + "' && /usr/bin/python3 " + compare +
                              " benchmarks a.json b.json >compare.out 2>&1";
  const int status = std::system(command.c_str());
  const std::string printed = slurp(dir_ / "compare.out");
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << printed;
  EXPECT_NE(printed.find("default-decode-small/paged_decode.cpu_reference"), std::string::npos)
      << printed;
  EXPECT_NE(printed.find("OVERALL_GEOMEAN"), std::string::npos) << printed;
}

// Strict RFC 4180: fields separated by commas, a field in double quotes may hold commas, newlines
// and doubled quotes; anything else after a closing quote is an error (the test fails on it).
std::vector<std::vector<std::string>> parse_csv_strictly(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  size_t i = 0;
  bool at_field_start = true;
  while (i < text.size()) {
    const char c = text[i];
    if (at_field_start && c == '"') {
      ++i;
      for (;;) {
        if (i >= text.size()) {
          ADD_FAILURE() << "unterminated quoted field";
          return rows;
        }
        if (text[i] == '"') {
          if (i + 1 < text.size() && text[i + 1] == '"') {
            field += '"';
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        field += text[i++];
      }
      if (i < text.size() && text[i] != ',' && text[i] != '\n') {
        ADD_FAILURE() << "text after a closing quote at offset " << i;
        return rows;
      }
      at_field_start = false;
      continue;
    }
    if (c == ',') {
      row.push_back(field);
      field.clear();
      at_field_start = true;
    } else if (c == '\n') {
      row.push_back(field);
      rows.push_back(row);
      row.clear();
      field.clear();
      at_field_start = true;
    } else if (c == '"') {
      ADD_FAILURE() << "a quote inside an unquoted field at offset " << i;
      return rows;
    } else {
      field += c;
      at_field_start = false;
    }
    ++i;
  }
  EXPECT_TRUE(row.empty() && field.empty()) << "the last row has no newline";
  return rows;
}

// A small decode batch on the CPU backend with the test variants: paged_decode.cpu_reference
// passes, the other families' CPU references and test.cpu_reference_copies decline it, and
// test.cpu_incorrect fails verification (exit 5). Two repetitions add Google Benchmark's
// aggregates, whose cv of a counter that is 0 every time has no value.
class GbenchMixedBatch : public GbenchCli {
 protected:
  std::vector<std::string> mixed_run(const std::string& format) {
    env_ = "ATTN_BENCH_TEST_VARIANTS=1";
    std::ofstream(dir_ / "mixed.json") << R"({"schema_version": 2, "name": "mixed-small",
      "model": {"num_q_heads": 8, "num_kv_heads": 2, "head_dim": 64, "dtype": "bf16"},
      "sequences": [{"context_len": 127, "query_len": 1, "count": 4}]})";
    return {"run",
            "mixed.json",
            "--cpu",
            "--policy",
            "screen",
            "--samples",
            "2",
            "--warmup",
            "0",
            "--noise",
            "0.9",
            "--max-time",
            "30",
            "--variant",
            "*cpu*",
            "--benchmark_repetitions=2",
            "--benchmark_format=" + format,
            "--benchmark_out=out." + format,
            "--benchmark_out_format=" + format};
  }

  // The run ended (it is not left "running") with some case failed.
  void expect_run_closed_with_failures() {
    Store store((dir_ / "attn-bench.db").string());
    const auto run = store.run(1);
    ASSERT_TRUE(run.has_value());
    EXPECT_EQ(run->status, "failed_cases");
    EXPECT_EQ(store.counts().measurements, 14);  // 7 cases, 2 repetitions
  }
};

constexpr const char* kPassed = "mixed-small/paged_decode.cpu_reference/iterations:1/manual_time";
constexpr const char* kDeclined = "mixed-small/flash_fwd.cpu_reference/iterations:1/manual_time";
constexpr const char* kFailed = "mixed-small/test.cpu_incorrect/iterations:1/manual_time";

TEST_F(GbenchMixedBatch, ConsoleShowsDeclinedAsSkippedAndFailedAsErrors) {
  ASSERT_EQ(run(mixed_run("console")), int(ExitCode::failed_cases)) << err_;
  for (const std::string& text : {out_, slurp(dir_ / "out.console")}) {
    EXPECT_TRUE(std::regex_search(
        text, std::regex(std::string("\n") + kDeclined + " +SKIPPED: 'unsupported: ")))
        << text;
    EXPECT_NE(text.find("ERROR OCCURRED: 'incorrect: "), std::string::npos) << text;
    EXPECT_NE(text.find(std::string(kPassed) + "_cv"), std::string::npos) << text;
    EXPECT_NE(text.find("GB/s="), std::string::npos) << text;
    EXPECT_EQ(text.find("nan"), std::string::npos) << "a counter without a value: " << text;
    EXPECT_EQ(text.find("sm_MHz"), std::string::npos) << "no SM clock on the CPU: " << text;
  }
  expect_run_closed_with_failures();
}

TEST_F(GbenchMixedBatch, JsonParsesAndSaysWhichCasesWereSkipped) {
  ASSERT_EQ(run(mixed_run("json")), int(ExitCode::failed_cases)) << err_;
  for (const std::string& text : {out_, slurp(dir_ / "out.json")}) {
    const nlohmann::json j = nlohmann::json::parse(text);  // no NaN: it would not parse
    expect_compare_py_shape(j);
    std::map<std::string, int> rows;
    for (const auto& b : j["benchmarks"]) {
      const std::string name = b["name"];
      ++rows[name];
      if (name == kPassed) {
        EXPECT_GT(b["real_time"].get<double>(), 0);
        EXPECT_GT(b["GB/s"].get<double>(), 0);
        EXPECT_EQ(b["samples"], 2);
        EXPECT_TRUE(b.contains("noise_pct"));
        EXPECT_FALSE(b.contains("sm_MHz")) << "no SM clock on the CPU";
        EXPECT_FALSE(b.contains("error_occurred"));
      } else if (name == kDeclined) {
        EXPECT_EQ(b["label"], "skipped");
        EXPECT_EQ(b["error_message"].get<std::string>().rfind("unsupported: ", 0), 0u) << b;
      } else if (name == kFailed) {
        EXPECT_EQ(b["error_occurred"], true);
        EXPECT_FALSE(b.contains("label"));
        EXPECT_EQ(b["error_message"].get<std::string>().rfind("incorrect: ", 0), 0u) << b;
      }
    }
    EXPECT_EQ(rows[kPassed], 2);
    EXPECT_EQ(rows[std::string(kPassed) + "_cv"], 1);
    EXPECT_EQ(rows[kDeclined], 2);
    EXPECT_EQ(rows[kFailed], 2);
  }
  expect_run_closed_with_failures();
}

TEST_F(GbenchMixedBatch, CsvHasTheSameColumnsOnEveryRow) {
  ASSERT_EQ(run(mixed_run("csv")), int(ExitCode::failed_cases)) << err_;
  for (const std::string& text : {out_, slurp(dir_ / "out.csv")}) {
    const auto rows = parse_csv_strictly(text);
    ASSERT_GE(rows.size(), 2u) << text;
    const std::vector<std::string>& header = rows[0];
    std::map<std::string, size_t> column;
    for (size_t i = 0; i < header.size(); ++i) column[header[i]] = i;
    for (const char* name : {"name", "real_time", "label", "error_occurred", "error_message",
                             "GB/s", "TFLOP/s", "frac_read_bw", "frac_bf16_tensor", "samples",
                             "noise_pct", "launches_per_sample", "sm_MHz"}) {
      ASSERT_EQ(column.count(name), 1u) << name << " in " << text;
    }
    std::map<std::string, int> seen;
    for (size_t r = 1; r < rows.size(); ++r) {
      const std::vector<std::string>& row = rows[r];
      ASSERT_EQ(row.size(), header.size()) << "row " << r << " of\n" << text;
      const std::string& name = row[column["name"]];
      ++seen[name];
      if (name == kPassed) {
        EXPECT_GT(std::stod(row[column["real_time"]]), 0);
        EXPECT_GT(std::stod(row[column["GB/s"]]), 0);
        EXPECT_EQ(row[column["samples"]], "2");
        EXPECT_EQ(row[column["sm_MHz"]], "") << "no SM clock on the CPU";
        EXPECT_EQ(row[column["error_occurred"]], "");
      } else if (name == kDeclined) {
        EXPECT_EQ(row[column["error_occurred"]], "false");
        EXPECT_EQ(row[column["error_message"]].rfind("unsupported: ", 0), 0u);
        EXPECT_EQ(row[column["real_time"]], "");
        EXPECT_EQ(row[column["GB/s"]], "");
      } else if (name == kFailed) {
        EXPECT_EQ(row[column["error_occurred"]], "true");
        EXPECT_EQ(row[column["error_message"]].rfind("incorrect: ", 0), 0u);
      }
    }
    EXPECT_EQ(seen[kPassed], 2);
    EXPECT_EQ(seen[std::string(kPassed) + "_cv"], 1);
    EXPECT_EQ(seen[kDeclined], 2);
    EXPECT_EQ(seen[kFailed], 2);
  }
  // Python's csv module reads the same rows, each as long as the header.
  if (std::system("/usr/bin/python3 -c pass 2>/dev/null") == 0) {
    const std::string command =
        "cd '" + dir_.string() +
        "' && /usr/bin/python3 -c 'import csv, sys; rows = list(csv.reader(open(\"out.csv\", "
        "newline=\"\"))); assert len(rows) > 1; assert all(len(r) == len(rows[0]) for r in rows), "
        "rows; print(len(rows))' >python.out 2>&1";
    const int status = std::system(command.c_str());
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << slurp(dir_ / "python.out");
    EXPECT_EQ(std::stoul(slurp(dir_ / "python.out")), parse_csv_strictly(out_).size());
  }
  expect_run_closed_with_failures();
}

// A prefill batch: the first case (paged_decode.cpu_reference) declines, the next ones pass with
// counters. Google Benchmark's own CSV reporter aborted here (exit 134: "All counters must be
// present in each run"), leaving the run "running".
TEST_F(GbenchCli, CsvWhoseFirstCaseIsDeclinedKeepsItsColumns) {
  std::ofstream(dir_ / "prefill.json") << R"({"schema_version": 2, "name": "prefill-small",
    "model": {"num_q_heads": 8, "num_kv_heads": 2, "head_dim": 64, "dtype": "bf16"},
    "sequences": [{"context_len": 0, "query_len": 32, "count": 2}]})";
  ASSERT_EQ(run({"run", "prefill.json", "--cpu", "--policy", "screen", "--samples", "2", "--warmup",
                 "0", "--noise", "0.9", "--max-time", "30", "--variant", "*cpu_reference",
                 "--benchmark_format=csv"}),
            0)
      << err_;
  const auto rows = parse_csv_strictly(out_);
  ASSERT_EQ(rows.size(), 6u) << out_;  // the header and five cases
  EXPECT_NE(rows[1][0].find("paged_decode.cpu_reference"), std::string::npos);
  EXPECT_EQ(rows[1][8], "false") << "declined, not failed";
  ASSERT_EQ(rows[0][8], "error_occurred");
  size_t passed = 0;
  for (size_t r = 1; r < rows.size(); ++r) {
    EXPECT_EQ(rows[r].size(), rows[0].size()) << out_;
    passed += rows[r][8].empty();  // error_occurred: empty for a timed row
  }
  EXPECT_EQ(passed, 2u) << out_;  // prefix_prefill and flash_fwd
  Store store((dir_ / "attn-bench.db").string());
  EXPECT_EQ(store.run(1)->status, "completed");
}

}  // namespace
}  // namespace attn
