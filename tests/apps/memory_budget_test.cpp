// The host-memory budget through the real binary (docs/workload.md, "Memory"): a workload whose
// estimate is over the budget is refused before anything is allocated, with the estimate and the
// flag; `workload validate` estimates without building the batch, so it answers fast and small
// for any workload; the estimate is at least what a run really holds, and not wildly more; and an
// allocation that fails anyway is the environment exit code, not an internal error.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/apps/cli_runner.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kBudgetHostileDir = fs::path(ATTN_SOURCE_DIR) / "tests" / "apps" / "hostile";

// Q, pools and outputs of about 100 MiB, little to compute: 12288 pages of K and V (8 KiB each)
// and 64 query tokens.
json hundred_mib_workload() {
  return json::parse(R"({
    "schema_version": 2,
    "name": "budget",
    "model": {"num_q_heads": 4, "num_kv_heads": 2, "head_dim": 64, "dtype": "bf16"},
    "kv_cache": {"page_size": 16, "num_pages": 12288},
    "sequences": [{"context_len": 56, "query_len": 8, "count": 8}],
    "seed": 7
  })");
}

class MemoryBudget : public testing::Cli {
 protected:
  testing::MeasuredRun run_binary(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {binary_};
    argv.insert(argv.end(), args.begin(), args.end());
    return testing::run_measured(
        argv, {"ATTN_DB=", "ATTN_JIT_CACHE_DIR=" + (dir_ / "jit").string()}, dir_, 60);
  }
  std::string db() const { return (dir_ / "results.db").string(); }
};

// 210 bytes: a million one-token sequences beside one of 2047 tokens on one-token pages. Its
// padded block table alone is 8 GiB; validate built it (8.5 GiB, 3.6 s) before it estimated.
TEST_F(MemoryBudget, ValidateEstimatesAMillionSequencesWithoutBuildingThem) {
  const std::string file = (kBudgetHostileDir / "million-one-token-sequences.json").string();
  const testing::MeasuredRun r =
      run_binary({"workload", "validate", "--max-host-memory", "64GiB", file});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("ok: hostile ("), std::string::npos) << r.out;
  // 2^20 rows of 2047 int32 entries: the estimate names what a run would hold.
  EXPECT_NE(r.out.find("memory: attn-bench run needs about "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" GiB of host memory (budget 64.0 GiB)"), std::string::npos) << r.out;
  EXPECT_LT(r.cpu_seconds, 1.0) << "wall " << r.seconds << " s";
  EXPECT_LT(r.max_resident_kib, 256 * 1024) << "KiB";
}

TEST_F(MemoryBudget, OverTheBudgetIsRefusedWithTheEstimateAndTheFlag) {
  std::ofstream(dir_ / "budget.json") << hundred_mib_workload().dump();
  const std::string file = (dir_ / "budget.json").string();
  for (const std::vector<std::string>& command :
       {std::vector<std::string>{"run", "--cpu", "--db", db()},
        std::vector<std::string>{"workload", "validate"},
        std::vector<std::string>{"workload", "dump", "--out", (dir_ / "dump").string()}}) {
    std::vector<std::string> args = command;
    args.insert(args.end(), {"--max-host-memory", "32MiB", file});
    const testing::MeasuredRun r = run_binary(args);
    SCOPED_TRACE(command.front() + " " + command[1]);
    EXPECT_EQ(r.exit_code, testing::kInvalidInput) << r.out << r.err;
    EXPECT_NE(r.err.find("(host memory): this command needs about "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("K and V pools 96."), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("over the budget of 32.0 MiB (--max-host-memory)"), std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("--max-host-memory SIZE sets the budget"), std::string::npos) << r.err;
    EXPECT_LT(r.max_resident_kib, 64 * 1024) << "nothing was allocated";
  }
  EXPECT_FALSE(fs::exists(db())) << "no database was opened";
  EXPECT_FALSE(fs::exists(dir_ / "dump"));

  // The default budget (at most 16 GiB) refuses 39 GiB of pools on any machine.
  const testing::MeasuredRun r = run_binary(
      {"run", "--cpu", "--db", db(), (kBudgetHostileDir / "kv-pools-39-gib.json").string()});
  EXPECT_EQ(r.exit_code, testing::kInvalidInput) << r.err;
  EXPECT_NE(r.err.find("(the default: half of this machine's memory, at most 16 GiB)"),
            std::string::npos)
      << r.err;

  EXPECT_EQ(run_binary({"workload", "validate", "--max-host-memory", "lots", file}).exit_code,
            testing::kUsage);
}

// The estimate is at least what a run holds (its peak resident set, less the binary's own), and
// not more than three times that.
TEST_F(MemoryBudget, TheEstimateBoundsWhatARunHolds) {
  std::ofstream(dir_ / "budget.json") << hundred_mib_workload().dump();
  const std::string file = (dir_ / "budget.json").string();
  const auto run_with = [&](const std::string& budget) {
    return run_binary({"run", "--cpu", "--samples", "2", "--warmup", "0", "--noise", "0.9",
                       "--threads", "2", "--db", db(), "--max-host-memory", budget, file});
  };
  const testing::MeasuredRun measured = run_with("1GiB");
  ASSERT_EQ(measured.exit_code, 0) << measured.err;
  const long resident_mib = measured.max_resident_kib / 1024;
  ASSERT_GT(resident_mib, 96) << "the pools alone are 96 MiB";
  // attn-bench itself (code, libraries, threads) takes well under 32 MiB.
  const testing::MeasuredRun below = run_with(std::to_string(resident_mib - 32) + "MiB");
  EXPECT_EQ(below.exit_code, testing::kInvalidInput)
      << "the estimate is under the " << resident_mib << " MiB the run held\n"
      << below.err;
  const testing::MeasuredRun above = run_with(std::to_string(3 * resident_mib) + "MiB");
  EXPECT_EQ(above.exit_code, 0) << "the estimate is over three times the " << resident_mib
                                << " MiB the run held\n"
                                << above.err;
}

// With the budget lifted, an allocation the machine refuses (here: an address-space limit of
// 600 MiB) is exit 4 with what happened, not 1 (an internal error).
TEST_F(MemoryBudget, RunningOutOfMemoryIsTheEnvironmentExitCode) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer reserves terabytes of address space";
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  GTEST_SKIP() << "AddressSanitizer reserves terabytes of address space";
#endif
#endif
  json doc = hundred_mib_workload();
  doc["kv_cache"]["num_pages"] = 131072;  // 1 GiB of pools
  std::ofstream(dir_ / "large.json") << doc.dump();
  const std::string command = "cd " + testing::quote(dir_.string()) +
                              " && ulimit -v 614400 && ATTN_DB= " + testing::quote(binary_) +
                              " run --cpu --threads 2 --max-host-memory 64GiB --db results.db " +
                              "large.json >stdout 2>stderr";
  const int status = std::system(command.c_str());
  const std::string err = testing::slurp(dir_ / "stderr");
  ASSERT_TRUE(WIFEXITED(status)) << err;
  EXPECT_EQ(WEXITSTATUS(status), testing::kEnvironment) << err;
  EXPECT_NE(err.find("attn-bench: environment: out of host memory"), std::string::npos) << err;
}

}  // namespace
}  // namespace attn
