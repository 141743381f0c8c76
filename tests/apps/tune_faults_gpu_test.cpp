// On a GPU: a sweep of the test-only faulting variants (ATTN_BENCH_TEST_VARIANTS=1,
// kernels/test_faults) through `attn-tune tune` with worker processes. Each faulting config gets
// its disposition (out-of-bounds write and a read through a bad page index: crashed, the worker
// replaced; hang: timed_out in verify; too much shared memory: launch_failed; NaN: incorrect),
// every good config (fault=0, which runs paged_decode.sm80_simt) is measured, the sweep goes on
// after each fault on a fresh worker, no worker is left, and the GPU is usable afterwards.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "base/exit_codes.hpp"
#include "results/sqlite.hpp"
#include "tests/apps/cli_runner.hpp"
#include "tests/gpu_test_support.hpp"

namespace attn {
namespace {

constexpr const char* kDecode = R"({
  "schema_version": 1,
  "name": "tune-faults-decode",
  "model": {"num_q_heads": 32, "num_kv_heads": 8, "head_dim": 128, "dtype": "bf16"},
  "kv_cache": {"page_size": 16, "layout": "NHD", "allocation": "shuffled"},
  "sequences": [{"context_len": 1024, "query_len": 1, "count": 8}],
  "seed": 3
})";

class TuneFaultsGpu : public testing::Cli {
 protected:
  TuneFaultsGpu() { binary_ = ATTN_TUNE_BINARY; }
  void TearDown() override {
    ::unsetenv("ATTN_BENCH_TEST_VARIANTS");
    testing::Cli::TearDown();
  }
};

TEST_F(TuneFaultsGpu, EachFaultGetsItsDispositionGoodConfigsAreMeasuredNoWorkerIsLeft) {
  ATTN_REQUIRE_GPU();
  const std::string workload = write("tune-faults-decode.json", kDecode).string();
  ::setenv("ATTN_BENCH_TEST_VARIANTS", "1", 1);
  const testing::CliResult r =
      run({"tune", workload, "--variant", "test.fault_*", "--strategy", "exhaustive", "--db",
           "faults.db", "--deadline", "compile=120,verify=15,measure=120"});
  EXPECT_EQ(r.exit_code, int(ExitCode::failed_cases)) << r.out << r.err;
  // The out-of-bounds write and the bad page read each lose their worker's CUDA context.
  EXPECT_NE(r.out.find("workers   2 replaced after a sticky CUDA error"), std::string::npos)
      << r.out;

  std::map<std::string, std::string> disposition, reason;  // "variant config" ->
  {
    Database db((dir_ / "faults.db").string(), SQLITE_OPEN_READONLY);
    Statement s(db, "SELECT variant, config_key, disposition, reason FROM measurements");
    while (s.step()) {
      const std::string key = s.column_text(0) + " " + s.column_text(1);
      EXPECT_EQ(disposition.count(key), 0u) << key << " recorded twice";
      disposition[key] = s.column_text(2);
      reason[key] = s.column_text(3);
    }
  }
  ASSERT_EQ(disposition.size(), 10u) << r.out << r.err;
  for (const char* v : {"oob_write", "bad_page", "hang", "smem", "nan"}) {
    const std::string good = std::string("test.fault_") + v + " fault=0";
    EXPECT_EQ(disposition[good], "passed") << good << ": " << reason[good];
  }
  EXPECT_EQ(disposition["test.fault_oob_write fault=1"], "crashed")
      << reason["test.fault_oob_write fault=1"];
  EXPECT_NE(reason["test.fault_oob_write fault=1"].find("sticky CUDA error"), std::string::npos)
      << reason["test.fault_oob_write fault=1"];
  const std::string bad_page = "test.fault_bad_page fault=1";
  EXPECT_EQ(disposition[bad_page], "crashed") << reason[bad_page];
  EXPECT_NE(reason[bad_page].find("sticky CUDA error"), std::string::npos) << reason[bad_page];
  EXPECT_NE(reason[bad_page].find("ILLEGAL_ADDRESS"), std::string::npos) << reason[bad_page];
  EXPECT_NE(reason[bad_page].find("replaced"), std::string::npos) << reason[bad_page];
  EXPECT_EQ(disposition["test.fault_hang fault=1"], "timed_out")
      << reason["test.fault_hang fault=1"];
  EXPECT_NE(reason["test.fault_hang fault=1"].find("verify phase"), std::string::npos)
      << reason["test.fault_hang fault=1"];
  const std::string smem = disposition["test.fault_smem fault=1"];
  EXPECT_TRUE(smem == "launch_failed" || smem == "unsupported")
      << smem << ": " << reason["test.fault_smem fault=1"];
  EXPECT_EQ(disposition["test.fault_nan fault=1"], "incorrect") << reason["test.fault_nan fault=1"];

  EXPECT_EQ(testing::processes_with(workload, "cmdline"), 0) << "a worker outlived the sweep";

  // The sweep went on after each fault that lost a worker (or had it killed), and never on the
  // same worker: every attempt after it ran in another process, and every attempt finished.
  {
    Database db((dir_ / "faults.db").string(), SQLITE_OPEN_READONLY);
    Statement unfinished(db, "SELECT count(*) FROM attempts WHERE status != 'finished'");
    ASSERT_TRUE(unfinished.step());
    EXPECT_EQ(unfinished.column_int64(0), 0);
    for (const char* v : {"test.fault_oob_write", "test.fault_bad_page", "test.fault_hang"}) {
      Statement s(db, R"sql(
        SELECT (SELECT count(*) FROM attempts later WHERE later.id > a.id),
               (SELECT count(*) FROM attempts later WHERE later.id > a.id
                                                      AND later.worker_pid = a.worker_pid),
               a.worker_pid IS NOT NULL
        FROM attempts a WHERE a.variant = ? AND a.config_key = 'fault=1')sql");
      s.bind(1, std::string(v));
      ASSERT_TRUE(s.step()) << v;
      EXPECT_GT(s.column_int64(0), 0) << v << ": nothing ran after it";
      EXPECT_EQ(s.column_int64(1), 0) << v << ": its worker was used again";
      EXPECT_EQ(s.column_int64(2), 1) << v << ": no worker pid recorded";
    }
  }

  // The GPU is usable afterwards: a plain sweep of the good configs measures them again.
  ::unsetenv("ATTN_BENCH_TEST_VARIANTS");
  binary_ = ATTN_BENCH_BINARY;
  const testing::CliResult after = run({"run", workload, "--variant", "paged_decode.sm80_simt",
                                        "--policy", "screen", "--db", "after.db"});
  EXPECT_EQ(after.exit_code, 0) << after.out << after.err;
}

}  // namespace
}  // namespace attn
