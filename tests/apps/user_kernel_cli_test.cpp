// --kernel SPEC on `attn-bench run` and `attn-tune tune` through the real binaries: a bad spec
// (malformed, a missing source file, a missing spec) ends with exit code 3 and its message before
// any GPU work, and no database is created; the example spec is accepted and its variant listed.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/apps/cli_runner.hpp"

namespace attn {
namespace {

using testing::Cli;

const std::string kUserKernelsDir = std::string(ATTN_SOURCE_DIR) + "/tests/kernels/user/malformed";
const std::string kExampleKernelSpec =
    std::string(ATTN_SOURCE_DIR) + "/examples/user_kernels/simple_decode.json";

class UserKernelCli : public Cli {
 protected:
  // Runs `args` and checks it stopped with exit code 3 naming `problem`, leaving no database.
  void expect_invalid_spec(const std::vector<std::string>& args, const std::string& problem) {
    const auto r = run(args);
    EXPECT_EQ(r.exit_code, testing::kInvalidInput) << r.out << r.err;
    EXPECT_NE(r.err.find(problem), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(dir_ / "results.db")) << "nothing may be written";
  }
};

TEST_F(UserKernelCli, RunRefusesAMalformedSpecBeforeAnyWork) {
  expect_invalid_spec({"run", "default", "--db", "results.db", "--kernel",
                       kUserKernelsDir + "/launch_unknown_name_suggests.json"},
                      "/launch/grid/0: column 1: unknown name 'num_seq' (not an axis or a batch "
                      "quantity); did you mean \"num_seqs\"?");
}

TEST_F(UserKernelCli, RunRefusesASpecWhoseSourceIsMissing) {
  expect_invalid_spec({"run", "default", "--db", "results.db", "--kernel",
                       kUserKernelsDir + "/source_missing_file.json"},
                      "/sources/1: cannot read missing.cuh");
}

TEST_F(UserKernelCli, RunRefusesAMissingSpecFile) {
  expect_invalid_spec(
      {"run", "default", "--db", "results.db", "--kernel", (dir_ / "nowhere.json").string()},
      "cannot open the file");
}

TEST_F(UserKernelCli, TuneRefusesASpecThatDividesByZero) {
  binary_ = ATTN_TUNE_BINARY;
  expect_invalid_spec({"tune", "default", "--db", "results.db", "--kernel",
                       kUserKernelsDir + "/constraint_divides_by_zero.json"},
                      "/constraints/0: column 5: division by zero in 128 / 0");
}

TEST_F(UserKernelCli, TuneSuiteChecksTheSpecBeforeTheFirstWorkload) {
  binary_ = ATTN_TUNE_BINARY;
  expect_invalid_spec({"tune", "--suite", "decode-shapes", "--db", "results.db", "--kernel",
                       kUserKernelsDir + "/feature_vllm_layout.json"},
                      "/features/kv_layout/1: user kernels read the pools");
}

TEST_F(UserKernelCli, TwoSpecsWithOneNameAreAUsageError) {
  const auto r = run({"run", "default", "--db", "results.db", "--kernel", kExampleKernelSpec,
                      "--kernel", kExampleKernelSpec});
  EXPECT_EQ(r.exit_code, testing::kUsage) << r.err;
  EXPECT_NE(r.err.find("another --kernel spec is also named 'simple_decode'"), std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "results.db"));
}

TEST_F(UserKernelCli, TheExampleSpecIsAcceptedAndItsVariantIsCuda) {
  // Without a GPU the CUDA variant has nothing to run on: the run says so for user.* and stops
  // with the usage code, after the spec was loaded and checked (a bad one would exit 3).
  const auto r = run({"run", "default", "--db", "results.db", "--cpu", "--variant", "user.*",
                      "--kernel", kExampleKernelSpec});
  EXPECT_NE(r.exit_code, testing::kInvalidInput) << r.err;
  EXPECT_NE(r.err.find("no cpu variant matches 'user.*'"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace attn
