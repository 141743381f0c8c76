// attn-tune plan as a user runs it: the files of a planned sweep, a shard taking exactly what the
// map gives it, --local running the shards and the merge on this machine, and the refusals of
// plan, of tune --shard-map and of merge --winners.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <set>
#include <sstream>

#include "base/exit_codes.hpp"
#include "tests/apps/cli_runner.hpp"
#include "tests/apps/sweep_processes.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;
using testing::CliResult;
using testing::db_number;

class PlanCli : public testing::Cli {
 protected:
  PlanCli() { binary_ = ATTN_TUNE_BINARY; }
  void SetUp() override {
    testing::Cli::SetUp();
    ::setenv("ATTN_BENCH_TEST_VARIANTS", "1", 1);
    workload_ = write("tiny.json", testing::tiny_prefill_json("tiny")).string();
  }
  void TearDown() override {
    ::unsetenv("ATTN_BENCH_TEST_VARIANTS");
    testing::Cli::TearDown();
  }
  std::vector<std::string> plan_args(const std::string& out, int shards) {
    return {"plan",
            workload_,
            "--variant",
            "test.cpu_reference_copies",
            "--strategy",
            "exhaustive",
            "--cpu",
            "--cpus-per-task",
            "1",
            "--shards",
            std::to_string(shards),
            "--out",
            out};
  }
  std::string workload_;
};

bool is_executable_file(const fs::path& path) {
  struct stat s {};
  return ::stat(path.c_str(), &s) == 0 && (s.st_mode & S_IXUSR);
}

TEST_F(PlanCli, WritesTheScriptsAndAMapThatEachShardFollows) {
  const CliResult r = run(plan_args("plan", 3));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const fs::path plan = dir_ / "plan";
  EXPECT_NE(r.out.find("24 configs of 1 variant(s) in 3 shards, balanced by estimated cost"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("shard 2    8 configs, estimated"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("next      " + plan.string() + "/submit.sh"), std::string::npos) << r.out;
  for (const char* name : {"sweep.sbatch", "merge.sbatch", "submit.sh", "run-local.sh"}) {
    EXPECT_TRUE(is_executable_file(plan / name)) << name;
  }
  const std::string readme = testing::slurp(plan / "README.md");
  EXPECT_NE(readme.find("| 2 | 8 |"), std::string::npos) << readme;
  EXPECT_NE(readme.find("--strategy exhaustive"), std::string::npos) << readme;
  const std::string sweep = testing::slurp(plan / "sweep.sbatch");
  EXPECT_NE(sweep.find(" tune " + fs::absolute(workload_).string() +
                       " --variant test.cpu_reference_copies --strategy exhaustive --cpu "
                       "--threads 1 \\\n"),
            std::string::npos)
      << sweep;
  EXPECT_NE(sweep.find("#SBATCH --array=0-2\n"), std::string::npos) << sweep;
  EXPECT_EQ(sweep.find("--gres"), std::string::npos) << "a CPU sweep asks for no GPU\n" << sweep;

  // Shard 1 of the map, run by hand: exactly the 8 configs the map gives it.
  std::set<std::string> planned;
  std::istringstream map(testing::slurp(plan / "shard-map.tsv"));
  for (std::string line; std::getline(map, line);) {
    if (line.empty() || line[0] == '#' || line.rfind("shards\t", 0) == 0 ||
        line.rfind("workload\t", 0) == 0) {
      continue;
    }
    std::vector<std::string> f;
    std::istringstream fields(line);
    for (std::string field; std::getline(fields, field, '\t');) f.push_back(field);
    ASSERT_EQ(f.size(), 5u) << line;
    if (f[3] == "1") planned.insert(f[2]);
  }
  ASSERT_EQ(planned.size(), 8u);
  const CliResult shard =
      run({"tune", workload_, "--variant", "test.cpu_reference_copies", "--strategy", "exhaustive",
           "--cpu", "--threads", "1", "--shard", "1/3", "--shard-map",
           (plan / "shard-map.tsv").string(), "--db", "one.db"});
  ASSERT_EQ(shard.exit_code, 0) << shard.err;
  EXPECT_NE(shard.out.find("shard 1/3 of the shard map"), std::string::npos) << shard.out;
  EXPECT_NE(shard.out.find("24 configs (8 in shard 1/3): 8 measured"), std::string::npos)
      << shard.out;
  for (const std::string& key : planned) {
    EXPECT_EQ(db_number(dir_ / "one.db",
                        "SELECT count(*) FROM measurements WHERE config_key = '" + key + "'"),
              1)
        << key;
  }
  // A plan with that database as its history takes the 8 launch times it recorded.
  std::vector<std::string> with_history = plan_args("plan2", 3);
  with_history.insert(with_history.end(), {"--history", "one.db"});
  ASSERT_EQ(run(with_history).exit_code, 0);
  const std::string readme2 = testing::slurp(dir_ / "plan2" / "README.md");
  EXPECT_NE(readme2.find("| test.cpu_reference_copies | 24 | 8 | "), std::string::npos) << readme2;
  EXPECT_NE(readme.find("| test.cpu_reference_copies | 24 | 0 | "), std::string::npos) << readme;
  // The same plan again rewrites the same files; another into a folder with shards is refused.
  EXPECT_EQ(run(plan_args("plan", 3)).exit_code, 0);
  fs::create_directories(plan / "shards");
  std::ofstream(plan / "shards" / "shard-0.db") << "";
  EXPECT_EQ(run(plan_args("plan", 3)).exit_code, 0);
  const CliResult other = run(plan_args("plan", 4));
  EXPECT_EQ(other.exit_code, testing::kUsage);
  EXPECT_NE(other.err.find("holds the shards of another plan"), std::string::npos) << other.err;
}

TEST_F(PlanCli, LocalRunsEveryShardThenMergesAndPrintsTheWinners) {
  std::vector<std::string> args = plan_args("plan", 3);
  args.insert(args.end(), {"--local", "--parallel", "2"});
  const CliResult r = run(args);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("local     running"), std::string::npos) << r.out;
  for (int i = 0; i < 3; ++i) {
    EXPECT_NE(r.out.find("shard " + std::to_string(i) + " ended with exit 0"), std::string::npos)
        << r.out;
  }
  EXPECT_NE(r.out.find("merged.db: 3 runs, 24 measurements"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("test.cpu_reference_copies: 24 configs\n  winner    "
                       "test.cpu_reference_copies {"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("every shard finished"), std::string::npos) << r.out;
  const fs::path merged = dir_ / "plan" / "merged.db";
  EXPECT_EQ(db_number(merged, "SELECT count(DISTINCT config_key) FROM measurements"), 24);
  EXPECT_EQ(db_number(merged, "SELECT count(*) FROM measurements"), 24);
  // Run again: every shard resumes with nothing left to measure.
  const int rc =
      std::system(("cd " + testing::quote(dir_.string()) + " && ATTN_DB= " +
                   testing::quote((dir_ / "plan" / "run-local.sh").string()) + " > again.out 2>&1")
                      .c_str());
  EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 0) << testing::slurp(dir_ / "again.out");
  EXPECT_EQ(db_number(merged, "SELECT count(*) FROM measurements"), 24);
  EXPECT_EQ(db_number(merged, "SELECT count(*) FROM runs"), 6);
}

TEST_F(PlanCli, ASuiteIsOneArrayOverAllItsWorkloads) {
  const std::string suite =
      write("two.json", R"({"schema_version": 1, "name": "two",
    "workloads": [)" + testing::tiny_prefill_json("first", 7) +
                            "," + testing::tiny_prefill_json("second", 8) + "]}")
          .string();
  std::vector<std::string> args = plan_args("plan", 4);
  args[1] = "--suite";
  args.insert(args.begin() + 2, suite);
  args.insert(args.end(), {"--local", "--parallel", "2"});
  const CliResult r = run(args);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("suite     suite " + suite + " (2 workloads)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("48 configs of 1 variant(s) in 4 shards"), std::string::npos) << r.out;
  const std::string sweep = testing::slurp(dir_ / "plan" / "sweep.sbatch");
  EXPECT_NE(sweep.find(" tune --suite " + suite + " --variant "), std::string::npos) << sweep;
  // Every shard tuned both workloads; the merge chose for each.
  EXPECT_NE(r.out.find("merged.db: 8 runs, 48 measurements"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("winners   first ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("winners   second ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("every shard finished"), std::string::npos) << r.out;
  const fs::path merged = dir_ / "plan" / "merged.db";
  EXPECT_EQ(db_number(merged,
                      "SELECT count(*) FROM (SELECT DISTINCT workload_id, config_key "
                      "FROM measurements)"),
            48);
  // No workload without a workload or a suite.
  args = plan_args("plan", 2);
  args.erase(args.begin() + 1);
  const CliResult none = run(args);
  EXPECT_EQ(none.exit_code, testing::kUsage);
  EXPECT_NE(none.err.find("plan needs a workload"), std::string::npos) << none.err;
}

TEST_F(PlanCli, RefusesWhatItCannotPlan) {
  const auto refused = [&](std::vector<std::string> args, const std::string& why) {
    const CliResult r = run(args);
    EXPECT_EQ(r.exit_code, testing::kUsage) << r.out << r.err;
    EXPECT_NE(r.err.find(why), std::string::npos) << r.err;
  };
  refused(plan_args("plan", 0), "--shards must be at least 1");
  refused(plan_args("plan", 25), "--shards 25 is more than the 24 configs");
  refused(plan_args("a plan", 2), "letters, digits and _./+,=:@- only");
  std::vector<std::string> limit = plan_args("plan", 2);
  limit.insert(limit.end(), {"--time", "2:00"});
  refused(limit, "--time 2:00 is not longer than --stop-before 180 s");
  limit.back() = "2h";
  refused(limit, "--time '2h': not a Slurm time limit");
  std::vector<std::string> history = plan_args("plan", 2);
  history.insert(history.end(), {"--history", "none.db"});
  refused(history, "--history 'none.db': no such database");
  std::vector<std::string> args = plan_args("plan", 2);
  args[3] = "nothing.*";
  refused(args, "matches no variant");
  args = plan_args("plan", 2);
  args.erase(args.begin() + 6);  // --cpu
  refused(args, "add --cpu to plan a sweep of the CPU variants");
  EXPECT_FALSE(fs::exists(dir_ / "plan")) << "nothing is written when the plan is refused";
}

TEST_F(PlanCli, TuneRefusesAMapThatDoesNotFit) {
  ASSERT_EQ(run(plan_args("plan", 3)).exit_code, 0);
  const std::string map = (dir_ / "plan" / "shard-map.tsv").string();
  const std::vector<std::string> tune = {
      "tune", workload_, "--variant", "test.cpu_reference_copies", "--cpu", "--db", "x.db"};
  std::vector<std::string> args = tune;
  args.insert(args.end(), {"--shard", "1/4", "--shard-map", map});
  CliResult r = run(args);
  EXPECT_EQ(r.exit_code, testing::kUsage);
  EXPECT_NE(r.err.find("into 3 shards, but --shard 1/4"), std::string::npos) << r.err;
  // Another workload than the plan's.
  args = tune;
  args[1] = write("other.json", testing::tiny_prefill_json("other", 8)).string();
  args.insert(args.end(), {"--shard", "1/3", "--shard-map", map});
  r = run(args);
  EXPECT_EQ(r.exit_code, testing::kUsage);
  EXPECT_NE(r.err.find("was not planned for workload other"), std::string::npos) << r.err;
  // A damaged map is an input error, with its line.
  const std::string bad = write("bad.tsv", "shards\t3\nw\tv\n").string();
  args = tune;
  args.insert(args.end(), {"--shard", "1/3", "--shard-map", bad});
  r = run(args);
  EXPECT_EQ(r.exit_code, testing::kInvalidInput);
  EXPECT_NE(r.err.find("line 2: expected 5 tab-separated fields"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "x.db")) << "nothing runs with a map that does not fit";
  // merge: --variant chooses the winners, so it needs --winners.
  EXPECT_EQ(run({"merge", map, "--into", "m.db", "--variant", "x"}).exit_code, testing::kUsage);
}

}  // namespace
}  // namespace attn
