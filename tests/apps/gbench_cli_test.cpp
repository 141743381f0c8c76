// attn-bench run through Google Benchmark, on the CPU reference variant: the JSON has the shape
// Google Benchmark's tools/compare.py reads, the flags behave as its users expect, and the
// A/A repeat check is printed and stored.
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

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
    std::string command = "cd '" + dir_.string() + "' && ATTN_DB= '" + ATTN_BENCH_BINARY + "'";
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
    return {"run",      "--cpu", "--policy", "screen", "--samples", "2",     "--warmup",
            "0",        "--noise", "0.9",    "--max-time", "30",   "--variant", "paged_decode.*"};
  }

  fs::path dir_;
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

}  // namespace
}  // namespace attn
