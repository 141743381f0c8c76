// On a GPU: user kernels given with --kernel through the real binaries. The example kernel
// (examples/user_kernels) passes verification on NHD and HND and is tuned exhaustively over its
// axes; a kernel with a deliberate off-by-one is recorded `incorrect`; one that writes out of
// bounds is `crashed`, its worker replaced, and the sweep goes on to measure the good config. The
// Triton example (a peer module) is tuned exhaustively through the peer runner over part of its
// space (block_n x num_warps on NHD pages, block_n on HND) and exported; it needs torch and Triton
// in $ATTN_PEERS_PYTHON (else python3), and says so in its skip when they are missing.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "base/exit_codes.hpp"
#include "results/sqlite.hpp"
#include "tests/apps/cli_runner.hpp"
#include "tests/gpu_test_support.hpp"

namespace attn {
namespace {

const std::string kExampleSpec =
    std::string(ATTN_SOURCE_DIR) + "/examples/user_kernels/simple_decode.json";
const std::string kFaultSpecs = std::string(ATTN_SOURCE_DIR) + "/tests/apps/user_kernels";
const std::string kTritonModule =
    std::string(ATTN_SOURCE_DIR) + "/examples/user_kernels/triton_decode.py";

// The interpreter the peer runner is started with, as attn-bench picks it.
std::string peers_python() {
  const char* env = std::getenv("ATTN_PEERS_PYTHON");
  return env && *env ? env : "python3";
}

constexpr const char* kUserDecode = R"({
  "schema_version": 1,
  "name": "user-kernel-decode",
  "model": {"num_q_heads": 32, "num_kv_heads": 8, "head_dim": 128, "dtype": "bf16"},
  "kv_cache": {"page_size": 16, "layout": "LAYOUT", "allocation": "shuffled"},
  "sequences": [{"context_len": 1000, "query_len": 1, "count": 6},
                {"context_len": 37, "query_len": 1, "count": 3}],
  "seed": 5
})";

class UserKernelGpu : public testing::Cli {
 protected:
  std::string workload(const std::string& layout) {
    std::string text = kUserDecode;
    text.replace(text.find("LAYOUT"), 6, layout);
    return write("user-kernel-" + layout + ".json", text).string();
  }

  // "variant config" -> (disposition, reason) of every measurement in `db`.
  std::map<std::string, std::pair<std::string, std::string>> measurements(const std::string& db) {
    std::map<std::string, std::pair<std::string, std::string>> out;
    Database database((dir_ / db).string(), SQLITE_OPEN_READONLY);
    Statement s(database, "SELECT variant, config_key, disposition, reason FROM measurements");
    while (s.step())
      out[s.column_text(0) + " " + s.column_text(1)] = {s.column_text(2), s.column_text(3)};
    return out;
  }
};

TEST_F(UserKernelGpu, TheExampleKernelPassesOnBothLayouts) {
  ATTN_REQUIRE_GPU();
  for (const char* layout : {"NHD", "HND"}) {
    SCOPED_TRACE(layout);
    const testing::CliResult r =
        run({"run", workload(layout), "--kernel", kExampleSpec, "--variant", "user.*", "--policy",
             "screen", "--db", "run.db"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("user.simple_decode"), std::string::npos) << r.out;
  }
  for (const auto& [key, row] : measurements("run.db")) {
    if (key.rfind("user.", 0) == 0) {
      EXPECT_EQ(row.first, "passed") << key << ": " << row.second;
    }
  }
}

TEST_F(UserKernelGpu, TheExampleKernelIsTunedExhaustively) {
  ATTN_REQUIRE_GPU();
  binary_ = ATTN_TUNE_BINARY;
  const testing::CliResult r = run({"tune", workload("NHD"), "--kernel", kExampleSpec, "--variant",
                                    "user.*", "--strategy", "exhaustive", "--db", "tune.db"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto rows = measurements("tune.db");
  // 4 warps x 3 keys; the constraint warps * keys <= max(4, ceil_div(1001, 64)) = 16 keeps 11.
  size_t passed = 0, declined = 0;
  for (const auto& [key, row] : rows) {
    if (row.first == "passed") ++passed;
    if (row.first == "unsupported") ++declined;
  }
  EXPECT_EQ(passed, 11u) << r.out << r.err;
  EXPECT_LE(declined, 1u);
  // The winner exports like any variant's.
  const testing::CliResult exported = run(
      {"export", "--db", "tune.db", "--variant", "user.*", "--format", "json", "-o", "best.json"});
  EXPECT_EQ(exported.exit_code, 0) << exported.out << exported.err;
  EXPECT_NE(testing::slurp(dir_ / "best.json").find("user.simple_decode"), std::string::npos);
}

TEST_F(UserKernelGpu, AnOffByOneIsIncorrectAndAnOutOfBoundsWriteCrashesWhileTheSweepGoesOn) {
  ATTN_REQUIRE_GPU();
  binary_ = ATTN_TUNE_BINARY;
  const testing::CliResult r =
      run({"tune", workload("NHD"), "--kernel", kFaultSpecs + "/off_by_one.json", "--kernel",
           kFaultSpecs + "/out_of_bounds.json", "--variant", "user.*", "--strategy", "exhaustive",
           "--db", "faults.db", "--deadline", "compile=120,verify=15,measure=120"});
  EXPECT_EQ(r.exit_code, int(ExitCode::failed_cases)) << r.out << r.err;
  const auto rows = measurements("faults.db");
  ASSERT_EQ(rows.size(), 4u) << r.out << r.err;
  EXPECT_EQ(rows.at("user.off_by_one drop_keys=0").first, "passed");
  EXPECT_EQ(rows.at("user.off_by_one drop_keys=1").first, "incorrect")
      << rows.at("user.off_by_one drop_keys=1").second;
  EXPECT_EQ(rows.at("user.out_of_bounds stray_write=0").first, "passed");
  const auto& crashed = rows.at("user.out_of_bounds stray_write=1");
  EXPECT_EQ(crashed.first, "crashed") << crashed.second;
  EXPECT_NE(crashed.second.find("sticky CUDA error"), std::string::npos) << crashed.second;
}

TEST_F(UserKernelGpu, TheTritonExampleIsTunedExhaustivelyAndExported) {
  ATTN_REQUIRE_GPU();
  const std::string python = peers_python();
  if (std::system(("'" + python + "' -c 'import torch, triton' > /dev/null 2>&1").c_str()) != 0) {
    GTEST_SKIP() << python << " cannot import torch and triton (set ATTN_PEERS_PYTHON to one that "
                 << "can)";
  }
  binary_ = ATTN_TUNE_BINARY;
  // Every config runs in a peer runner process of its own (about 6 s each on an H200, mostly
  // start-up), so NHD sweeps block_n x num_warps at one stage count and HND block_n alone.
  for (const char* layout : {"NHD", "HND"}) {
    SCOPED_TRACE(layout);
    const bool nhd = std::string(layout) == "NHD";
    const std::string db = std::string("triton-") + layout + ".db";
    std::vector<std::string> args = {
        "tune", workload(layout), "--peer-module", kTritonModule, "--python",
        python, "--strategy",     "exhaustive",    "--db",        db};
    args.insert(args.end(), {"-a", "num_stages=2"});
    if (!nhd) args.insert(args.end(), {"-a", "num_warps=4"});
    const testing::CliResult r = run(args);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    // block_n 16..128 x num_warps 2, 4, 8 (NHD) at head_dim 128: none declined.
    size_t passed = 0;
    for (const auto& [key, row] : measurements(db)) {
      ASSERT_EQ(key.rfind("peer.user.triton_decode.paged_decode ", 0), 0u) << key;
      EXPECT_EQ(row.first, "passed") << key << ": " << row.second;
      passed += row.first == "passed";
    }
    EXPECT_EQ(passed, nhd ? 12u : 4u) << r.out << r.err;
    const testing::CliResult exported =
        run({"export", "--db", db, "--variant", "peer.user.triton_decode.*", "--format", "json",
             "-o", std::string("triton-") + layout + ".json"});
    EXPECT_EQ(exported.exit_code, 0) << exported.out << exported.err;
    EXPECT_NE(testing::slurp(dir_ / (std::string("triton-") + layout + ".json"))
                  .find("peer.user.triton_decode.paged_decode"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace attn
