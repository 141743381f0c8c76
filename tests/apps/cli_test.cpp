// Runs the attn-bench binary as a user would and checks exit codes (docs/exit-codes.md), messages
// and what it leaves behind.
#include <gtest/gtest.h>

#include <filesystem>

#include "base/exit_codes.hpp"
#include "kernels/device/cuda_context.hpp"
#include "results/sqlite.hpp"
#include "results/store.hpp"
#include "tests/apps/cli_runner.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;
using testing::Cli;
using testing::CliResult;

using testing::kInvalidInput;
using testing::kUsage;

TEST_F(Cli, HelpAndVersionSucceed) {
  CliResult r = run({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("run"), std::string::npos);
  r = run({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("attn-bench"), std::string::npos);
}

TEST_F(Cli, UsageErrorsExitWithTwo) {
  EXPECT_EQ(run({}).exit_code, kUsage);
  EXPECT_EQ(run({"frobnicate"}).exit_code, kUsage);
  EXPECT_EQ(run({"run", "--no-such-flag"}).exit_code, kUsage);
  EXPECT_EQ(run({"run", "--cpu", "--samples", "0"}).exit_code, kUsage);
  CliResult r = run({"run", "--cpu", "--config", "warps=four"});
  EXPECT_EQ(r.exit_code, kUsage);
  EXPECT_NE(r.err.find("warps"), std::string::npos) << r.err;
  r = run({"run", "--cpu", "--variant", "nothing.*"});
  EXPECT_EQ(r.exit_code, kUsage);
  EXPECT_NE(r.err.find("nothing.*"), std::string::npos) << r.err;
  r = run({"run", "--cpu", "--reference", "double"});
  EXPECT_EQ(r.exit_code, kUsage);
  EXPECT_NE(r.err.find("--reference 'double': use cpu, gpu or auto"), std::string::npos) << r.err;
  r = run({"run", "--cpu", "--reference", "gpu"});
  EXPECT_EQ(r.exit_code, kUsage);
  EXPECT_NE(r.err.find("needs the CUDA backend"), std::string::npos) << r.err;
}

TEST_F(Cli, SyntaxErrorNamesLineAndColumnAndStartsNoWork) {
  const fs::path file =
      write("broken.json", "{\n  \"schema_version\": 1,\n  \"name\": \"x\" \"model\": {}\n}\n");
  const CliResult r = run({"run", file.string()});
  EXPECT_EQ(r.exit_code, kInvalidInput);
  EXPECT_NE(r.err.find("line 3"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("column"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("broken.json"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "attn-bench.db")) << "a database was opened before validation";
  EXPECT_EQ(r.err.find("running"), std::string::npos) << "a variant started";
}

TEST_F(Cli, WrongValueNamesTheJsonPath) {
  const fs::path file = write("bad.json", R"({
  "schema_version": 1,
  "name": "bad",
  "model": {"num_q_heads": 32, "num_kv_heads": 5, "head_dim": 100, "dtype": "bf16"},
  "sequences": [{"context_len": 10}]
})");
  const CliResult r = run({"run", file.string()});
  EXPECT_EQ(r.exit_code, kInvalidInput);
  EXPECT_NE(r.err.find("/model/head_dim"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("/model/num_kv_heads"), std::string::npos) << r.err;  // all errors, not one
  EXPECT_FALSE(fs::exists(dir_ / "attn-bench.db"));
}

TEST_F(Cli, MissingFileIsInvalidInput) {
  const CliResult r = run({"run", "no-such-workload.json"});
  EXPECT_EQ(r.exit_code, kInvalidInput);
  EXPECT_NE(r.err.find("no-such-workload.json"), std::string::npos) << r.err;
}

TEST_F(Cli, RunTakesAPresetNameButAFileWins) {
  CliResult r = run({"run", "--cpu", "--samples", "1", "--warmup", "0", "default"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("passed"), std::string::npos) << r.out;
  write("default", "{ not json");  // a file of the preset's name is read instead
  r = run({"run", "--cpu", "default"});
  EXPECT_EQ(r.exit_code, kInvalidInput) << r.err;
  EXPECT_NE(r.err.find("line 1"), std::string::npos) << r.err;
  r = run({"run", "--cpu", "no-such-preset"});
  EXPECT_EQ(r.exit_code, kInvalidInput);
  EXPECT_NE(r.err.find("no-such-preset"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("`attn-bench list` lists the presets"), std::string::npos) << r.err;
}

TEST_F(Cli, CpuRunPrintsATableAndRecordsIt) {
  // A loose noise target: two samples of a loaded CPU would otherwise be flagged unstable.
  const CliResult r = run({"run", "--cpu", "--samples", "2", "--warmup", "0", "--noise", "0.9"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("paged_decode.cpu_reference"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("reference naive_dense\n"), std::string::npos) << r.out;
  // The other families' CPU variants decline the decode batch, with their reasons, and are
  // recorded so.
  EXPECT_NE(r.out.find("prefix_prefill.cpu_reference: decode-only batch"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("flash_fwd.cpu_reference: does not implement: decode batches (one query "
                       "token per sequence) (paged_decode runs decode batches)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("blocksparse.cpu_reference: does not implement: dense causal attention "
                       "(blocksparse needs a block-sparse layout"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("passed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GB/s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("TFLOP/s"), std::string::npos) << r.out;
  Store store((dir_ / "attn-bench.db").string());
  const StoreCounts counts = store.counts();
  EXPECT_EQ(counts.runs, 1);
  EXPECT_EQ(counts.devices, 1);
  EXPECT_EQ(counts.workloads, 1);
  EXPECT_EQ(counts.measurements, 5);  // one per family's CPU reference
  const auto rows = store.measurements_of_run(1);
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[0].measurement.variant, "paged_decode.cpu_reference");
  EXPECT_EQ(rows[0].measurement.disposition, Disposition::passed);
  EXPECT_EQ(rows[0].measurement.samples_us.size(), 2u);
  for (size_t i = 1; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].measurement.disposition, Disposition::unsupported)
        << rows[i].measurement.variant;
  }
}

// A fraction above its ceiling is printed with a marker and a note that says why, and stored as
// measured. A CPU run against a read ceiling set far below what it reaches stands in for a GPU
// kernel that beats the DRAM ceiling.
TEST_F(Cli, AFractionAboveTheCeilingIsMarkedWithItsReason) {
  const std::vector<std::string> args = {"run",      "--cpu", "--samples", "2",
                                         "--warmup", "0",     "--noise",   "0.9"};
  ASSERT_EQ(run(args).exit_code, 0);
  {
    Store store((dir_ / "attn-bench.db").string());
    const std::vector<StoredDevice> devices = store.devices();
    ASSERT_EQ(devices.size(), 1u);
    store.add_ceiling(devices[0].fingerprint,
                      {kReadGbps, 1e-6, "set by the test", 1, 0, false, "t", "c", "", 1000});
  }
  const CliResult r = run(args);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("%* read_bw"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("* paged_decode.cpu_reference: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("* paged_decode.cpu_reference: above the DRAM ceiling: L2 reuse. "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("of the DRAM read ceiling (0 GB/s): the kernel read less than the logical "
                       "minimum from DRAM"),
            std::string::npos)
      << r.out;
  Store store((dir_ / "attn-bench.db").string());
  const auto rows = store.measurements_of_run(2);
  ASSERT_FALSE(rows.empty());
  ASSERT_TRUE(rows[0].measurement.ceiling_fraction.has_value());
  EXPECT_GT(*rows[0].measurement.ceiling_fraction, 1.0);
  EXPECT_TRUE(rows[0].measurement.unique_bytes.has_value());
}

TEST_F(Cli, CpuRunOfAPrefillBatchUsesThePrefixPrefillReference) {
  const fs::path file = write("prefill.json", R"({
  "schema_version": 2,
  "name": "tiny-prefix-prefill",
  "model": {"num_q_heads": 4, "num_kv_heads": 2, "head_dim": 64, "dtype": "bf16"},
  "kv_cache": {"page_size": 16},
  "sequences": [{"context_len": 40, "query_len": 9}, {"context_len": 0, "query_len": 1}],
  "seed": 3
})");
  const CliResult r =
      run({"run", "--cpu", "--samples", "2", "--warmup", "0", "--noise", "0.9", file.string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("prefix_prefill.cpu_reference"), std::string::npos) << r.out;
  Store store((dir_ / "attn-bench.db").string());
  bool passed = false;
  for (const auto& row : store.measurements_of_run(1)) {
    if (row.measurement.variant == "prefix_prefill.cpu_reference") {
      passed = row.measurement.disposition == Disposition::passed;
    } else if (row.measurement.variant != "flash_fwd.cpu_reference") {
      // paged_decode's declines several query tokens, blocksparse's a batch without a layout;
      // flash_fwd's computes the same attention over the sequences' keys.
      EXPECT_EQ(row.measurement.disposition, Disposition::unsupported) << row.measurement.variant;
    }
  }
  EXPECT_TRUE(passed) << r.out;
}

TEST_F(Cli, NewerDatabaseIsRefusedWithEnvironmentCode) {
  {
    Database db((dir_ / "future.db").string(), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    db.exec("CREATE TABLE t(x); PRAGMA user_version = 99;");
  }
  const CliResult r = run({"run", "--cpu", "--db", (dir_ / "future.db").string()});
  EXPECT_EQ(r.exit_code, int(ExitCode::environment)) << r.err;
  EXPECT_NE(r.err.find("newer"), std::string::npos) << r.err;
}

// Exit 5: the run completed but nothing passed; here no variant asked for takes the batch.
TEST_F(Cli, ARunWhereNoVariantCanRunExitsWithFive) {
  const CliResult r = run({"run", "--cpu", "--variant", "blocksparse.*", "--samples", "1"});
  EXPECT_EQ(r.exit_code, int(ExitCode::failed_cases)) << r.out << r.err;
  EXPECT_NE(r.err.find("no variant could run this workload (all unsupported)"), std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("unsupported"), std::string::npos) << r.out;
}

// Exit 1 is for a broken invariant. With no bug known to reach one, a database edited by hand to
// break one stands in: the workload's row keeps its hash but not its canonical JSON, which the
// store refuses to pair with the spec that hashes to it.
TEST_F(Cli, ABrokenInvariantExitsWithOne) {
  CliResult r = run({"run", "--cpu", "--samples", "1", "--warmup", "0", "--noise", "0.9"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  {
    Database db((dir_ / "attn-bench.db").string(), SQLITE_OPEN_READWRITE);
    db.exec("UPDATE workloads SET canonical_json = '{}'");
  }
  r = run({"run", "--cpu", "--samples", "1", "--warmup", "0", "--noise", "0.9"});
  EXPECT_EQ(r.exit_code, int(ExitCode::internal)) << r.out << r.err;
  EXPECT_NE(r.err.find("attn-bench: error: internal error: workload hash "), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("is already stored with another canonical JSON"), std::string::npos)
      << r.err;
}

TEST_F(Cli, DevicesSaysPlainlyWhenThereIsNoGpu) {
  const CliResult r = run({"devices"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  if (discover_devices().devices.empty()) {
    EXPECT_NE(r.out.find("no GPU"), std::string::npos) << r.out;
  } else {
    EXPECT_NE(r.out.find("compute capability"), std::string::npos) << r.out;
  }
}

TEST_F(Cli, ListShowsFamiliesVariantsAndPresets) {
  const CliResult r = run({"list", "--verbose"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("paged_decode.sm80_simt"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("paged_decode.cpu_reference"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tile_tokens"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("default"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace attn
