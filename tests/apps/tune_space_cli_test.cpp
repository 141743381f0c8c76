// attn-tune space as a user runs it: counts before and after pruning, refusal reasons, the
// described target, and usage errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "base/exit_codes.hpp"
#include "tests/apps/cli_runner.hpp"

namespace attn {
namespace {

using testing::CliResult;

class TuneCli : public testing::Cli {
 protected:
  TuneCli() { binary_ = ATTN_TUNE_BINARY; }
};

TEST_F(TuneCli, SpacePrintsAxesCountsAndReasons) {
  const CliResult r = run({"space", "default", "--variant", "paged_decode.*", "--arch", "sm_90a",
                           "--sm-count", "132", "--smem", "232448"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("paged_decode.sm80_simt (cuda)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tile_tokens"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("in the product"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("sm_90a (compute 9.0), 132 SMs, 232448 B"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("paged_decode.cpu_reference (cpu)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 in the product, 1 after pruning"), std::string::npos) << r.out;
}

TEST_F(TuneCli, SpaceAxisOverrideNarrowsTheProduct) {
  const CliResult r =
      run({"space", "default", "--variant", "paged_decode.sm80_simt", "-a", "warps=4", "-a",
           "tile_tokens=64", "-a", "stages=2", "-a", "heads_per_cta=4", "-a", "num_splits=0,1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("configs   2 in the product"), std::string::npos) << r.out;
}

TEST_F(TuneCli, SpaceDeclinedWorkloadShowsTheReason) {
  const CliResult r = run({"space", "default", "--variant", "flash_fwd.cpu_reference"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("0 after pruning (1 refused)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("query token"), std::string::npos) << r.out;
}

TEST_F(TuneCli, SpaceUsageErrors) {
  const int usage = int(ExitCode::usage);
  EXPECT_EQ(run({"space", "default", "--variant", "nothing.*"}).exit_code, usage);
  CliResult r = run({"space", "default", "--variant", "paged_decode.*", "-a", "bogus=1"});
  EXPECT_EQ(r.exit_code, usage);
  EXPECT_NE(r.err.find("bogus"), std::string::npos) << r.err;
  EXPECT_EQ(run({"space", "default", "-a", "warps=four"}).exit_code, usage);
  EXPECT_EQ(run({"space", "default", "--arch", "gfx90a"}).exit_code, usage);
  EXPECT_EQ(run({"space", "no-such-preset"}).exit_code, int(ExitCode::invalid_input));
  EXPECT_EQ(run({}).exit_code, usage);
}

// attn-tune compile fills the JIT cache without a GPU: every program of the narrowed space is
// compiled once (num_splits is a launch parameter: both values share one program), a second run
// finds them all cached, and the files are there for a sweep to load.
TEST_F(TuneCli, CompileFillsTheJitCacheAheadOfASweep) {
  const std::vector<std::string> args = {
      "compile", "default",         "--variant", "paged_decode.sm80_simt", "--arch", "sm_90a",
      "-a",      "warps=4",         "-a",        "tile_tokens=32,64",      "-a",     "stages=2",
      "-a",      "heads_per_cta=4", "-a",        "num_splits=0,1"};
  CliResult r = run(args);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("paged_decode.sm80_simt: 4 configs in shard 0/1, 2 programs"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("compiled  2 programs"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("0 already cached, 0 rejected"), std::string::npos) << r.out;
  size_t cubins = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir_ / "jit")) {
    cubins += e.path().extension() == ".cubin";
  }
  EXPECT_EQ(cubins, 2u);
  r = run(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("compiled  0 programs"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2 already cached"), std::string::npos) << r.out;
}

// --resources prints ptxas's register and spill figures for each program compiled.
TEST_F(TuneCli, CompileResourcesReportsRegistersAndSpills) {
  const CliResult r = run({"compile", "default", "--variant", "paged_decode.sm80_simt", "--arch",
                           "sm_90a", "-a", "warps=4", "-a", "tile_tokens=64", "-a", "stages=2",
                           "-a", "heads_per_cta=4", "-a", "num_splits=0", "--resources"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(std::regex_search(
      r.out,
      std::regex("paged_decode\\.sm80_simt\\.[^:]+: [0-9]+ registers, [0-9]+ bytes spilled")))
      << r.out;
}

TEST_F(TuneCli, CompileUsageErrors) {
  const int usage = int(ExitCode::usage);
  CliResult r = run({"compile", "default", "--variant", "paged_decode.*", "-a", "bogus=1"});
  EXPECT_EQ(r.exit_code, usage);
  EXPECT_NE(r.err.find("bogus"), std::string::npos) << r.err;
  r = run({"compile", "default", "--variant", "paged_decode.cpu_reference"});
  EXPECT_EQ(r.exit_code, usage);
  EXPECT_NE(r.err.find("no CUDA variant"), std::string::npos) << r.err;
  EXPECT_EQ(run({"compile", "default", "--shard", "3/2"}).exit_code, usage);
}

// A sweep with an axis no variant has would search the variants' own spaces instead of the one
// asked for: refused before any work, nothing recorded.
TEST_F(TuneCli, TuneRefusesAnUnknownAxis) {
  const CliResult r = run(
      {"tune", "default", "--variant", "paged_decode.*", "--cpu", "-a", "bogus=1", "--db", "t.db"});
  EXPECT_EQ(r.exit_code, int(ExitCode::usage)) << r.out;
  EXPECT_NE(r.err.find("-a bogus: no matching variant has this axis"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "t.db"));
}

}  // namespace
}  // namespace attn

namespace attn {
namespace {

// tune + resume + shards + merge end to end with the CPU reference variants on a small decode
// workload (flash_fwd.cpu_reference declines decode, so its space is empty after pruning).
constexpr const char* kSmallDecode = R"({
  "schema_version": 1,
  "name": "tune-cli-small",
  "model": {"num_q_heads": 4, "num_kv_heads": 2, "head_dim": 64, "dtype": "bf16"},
  "kv_cache": {"page_size": 16, "layout": "NHD", "allocation": "shuffled"},
  "sequences": [{"context_len": 40, "query_len": 1, "count": 2}],
  "seed": 7
})";

class TuneCliEndToEnd : public testing::Cli {
 protected:
  TuneCliEndToEnd() { binary_ = ATTN_TUNE_BINARY; }
};

TEST_F(TuneCliEndToEnd, TuneResumeShardsAndMerge) {
  const std::string workload = write("small.json", kSmallDecode).string();
  CliResult r = run({"tune", workload, "--variant", "*.cpu_reference", "--strategy", "exhaustive",
                     "--db", "a.db", "--cpu", "--threads", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(
      r.out.find("paged_decode.cpu_reference: 1 configs (1 in shard 0/1): 1 measured, 0 from"),
      std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("winner    paged_decode.cpu_reference"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("attn-tune: [1/1]"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("| failures 0 | ETA"), std::string::npos) << r.err;

  // Resume: the same command measures nothing again.
  r = run({"tune", workload, "--variant", "*.cpu_reference", "--strategy", "exhaustive", "--db",
           "a.db", "--cpu", "--threads", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("0 measured, 1 from the database"), std::string::npos) << r.out;

  // Two shards into two databases, merged twice: the second merge adds nothing.
  for (const char* shard : {"0/2", "1/2"}) {
    r = run({"tune", workload, "--variant", "paged_decode.cpu_reference", "--strategy", "halving",
             "--db", std::string("s") + shard[0] + ".db", "--shard", shard, "--cpu", "--threads",
             "1"});
    ASSERT_EQ(r.exit_code, 0) << shard << r.err;
  }
  r = run({"merge", "s0.db", "s1.db", "--into", "all.db"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Halving measures the one config under screen and confirm in whichever shard owns it.
  EXPECT_NE(r.out.find("all.db: 2 runs, 2 measurements"), std::string::npos) << r.out;
  r = run({"merge", "s0.db", "s1.db", "--into", "all.db"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("s0.db: 0 runs, 0 measurements"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("s1.db: 0 runs, 0 measurements"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("all.db: 2 runs, 2 measurements"), std::string::npos) << r.out;

  EXPECT_EQ(run({"merge", "all.db", "--into", "all.db"}).exit_code, int(ExitCode::usage));
  EXPECT_EQ(run({"merge", "missing.db", "--into", "x.db"}).exit_code, int(ExitCode::usage));
  EXPECT_EQ(run({"tune", workload, "--strategy", "annealing", "--cpu"}).exit_code,
            int(ExitCode::usage));
  EXPECT_EQ(run({"tune", workload, "--shard", "2/2", "--cpu"}).exit_code, int(ExitCode::usage));
}

}  // namespace
}  // namespace attn
