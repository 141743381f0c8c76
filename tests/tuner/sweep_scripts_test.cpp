// The scripts of a planned sweep, run for real by bash with a stand-in attn-tune (and sbatch) that
// records how it was called: the array script runs its shard with the map and its own database and
// records how it ended, run-local.sh runs every shard (or those named) then the merge, which names
// the shards that did not finish, and submit.sh makes the merge depend on the array.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "tuner/sweep_scripts.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

std::string file_text(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_script(const fs::path& path, const std::string& text) {
  std::ofstream(path) << text;
  ::chmod(path.c_str(), 0755);
}

size_t occurrences(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

class SweepScriptsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("attn-sweep-scripts-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "bin");
    // attn-tune as the scripts call it: records its arguments; `tune` creates its database and
    // exits with 4 for the shard named in $FAKE_FAIL_SHARD.
    write_script(dir_ / "bin" / "attn-tune", R"sh(#!/bin/bash
echo "$*" >> "$FAKE_LOG"
if [ "$1" = tune ]; then
  while [ $# -gt 0 ]; do
    case "$1" in --db) db=$2 ;; --shard) shard=${2%/*} ;; esac
    shift
  done
  touch "$db"
  if [ "$shard" = "${FAKE_FAIL_SHARD:-none}" ]; then exit 4; fi
  exit 0
fi
echo "the merged winners"
)sh");
    // sbatch: records its arguments and answers a job id as --parsable does.
    write_script(dir_ / "bin" / "sbatch", R"sh(#!/bin/bash
echo "sbatch $*" >> "$FAKE_LOG"
n=$(wc -l < "$FAKE_LOG")
echo "$((100 + n));cluster"
)sh");
    scripts_.dir = (dir_ / "plan").string();
    scripts_.attn_tune = (dir_ / "bin" / "attn-tune").string();
    scripts_.shards = 3;
    scripts_.tune_args = {"/work/w.json", "--variant", "paged_decode.*", "--strategy", "halving"};
    scripts_.winner_args = {"--variant", "paged_decode.*"};
    scripts_.local_parallel = 2;
  }
  void TearDown() override { fs::remove_all(dir_); }

  void write_plan() {
    fs::create_directories(scripts_.dir);
    write_script(fs::path(scripts_.dir) / "sweep.sbatch", array_script(scripts_));
    write_script(fs::path(scripts_.dir) / "merge.sbatch", merge_script(scripts_));
    write_script(fs::path(scripts_.dir) / "submit.sh", submit_script(scripts_));
    write_script(fs::path(scripts_.dir) / "run-local.sh", local_script(scripts_));
  }

  // Runs a shell command with the stand-ins first on $PATH; its exit code, output in out_.
  int shell(const std::string& command, const std::string& env = "") {
    fs::remove(dir_ / "log");
    const std::string line = "cd " + shell_word(dir_.string()) + " && env -u SLURM_ARRAY_TASK_ID " +
                             "-u ATTN_SWEEP_SHARD PATH=" + shell_word((dir_ / "bin").string()) +
                             ":$PATH FAKE_LOG=" + shell_word((dir_ / "log").string()) + " " + env +
                             " " + command + " > out 2>&1";
    const int status = std::system(line.c_str());
    out_ = file_text(dir_ / "out");
    log_ = file_text(dir_ / "log");
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  fs::path dir_;
  SweepScripts scripts_;
  std::string out_, log_;
};

TEST_F(SweepScriptsTest, EveryScriptIsValidBash) {
  scripts_.gpus_per_task = 2;
  scripts_.max_running = 2;
  scripts_.partition = "gpu";
  scripts_.time = "4:00:00";
  scripts_.sbatch_options = {"--exclusive"};
  write_plan();
  for (const char* name : {"sweep.sbatch", "merge.sbatch", "submit.sh", "run-local.sh"}) {
    EXPECT_EQ(shell("bash -n " + shell_word(scripts_.dir + "/" + name)), 0) << name << "\n" << out_;
  }
}

TEST_F(SweepScriptsTest, TheArrayAsksSlurmForARequeueAndAWarningBeforeTheTimeLimit) {
  scripts_.gpus_per_task = 2;
  scripts_.cpus_per_task = 8;
  scripts_.max_running = 2;
  scripts_.partition = "gpu";
  scripts_.account = "lab";
  scripts_.time = "4:00:00";
  scripts_.mem = "64G";
  scripts_.stop_seconds = 240;
  scripts_.sbatch_options = {"--exclusive"};
  const std::string text = array_script(scripts_);
  const std::vector<std::string> lines = {
      "#SBATCH --array=0-2%2\n",       "#SBATCH --requeue\n",
      "#SBATCH --signal=B:USR1@240\n", "#SBATCH --open-mode=append\n",
      "#SBATCH --gres=gpu:2\n",        "#SBATCH --cpus-per-task=8\n",
      "#SBATCH --partition=gpu\n",     "#SBATCH --account=lab\n",
      "#SBATCH --time=4:00:00\n",      "#SBATCH --mem=64G\n",
      "#SBATCH --exclusive\n",         "#SBATCH --output=" + scripts_.dir + "/logs/shard-%a.log\n"};
  for (const std::string& line : lines) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  }
  // Every #SBATCH line comes before the first command, or sbatch ignores it.
  EXPECT_LT(text.rfind("#SBATCH"), text.find("\nset -u"));
  const std::string merge = merge_script(scripts_);
  EXPECT_NE(merge.find("#SBATCH --partition=gpu\n"), std::string::npos) << merge;
  EXPECT_EQ(merge.find("--gres"), std::string::npos) << "the merge needs no GPU\n" << merge;
  EXPECT_EQ(merge.find("#SBATCH --time"), std::string::npos) << merge;
  scripts_.merge_time = "30:00";
  EXPECT_NE(merge_script(scripts_).find("#SBATCH --time=30:00\n"), std::string::npos);
}

TEST_F(SweepScriptsTest, RunLocalRunsEveryShardThenTheMerge) {
  write_plan();
  ASSERT_EQ(shell(shell_word(scripts_.dir + "/run-local.sh")), 0) << out_;
  const std::string plan = scripts_.dir;
  for (int i = 0; i < 3; ++i) {
    const std::string shard = std::to_string(i);
    EXPECT_EQ(occurrences(log_,
                          "tune /work/w.json --variant paged_decode.* --strategy halving "
                          "--shard " +
                              shard + "/3 --shard-map " + plan + "/shard-map.tsv --db " + plan +
                              "/shards/shard-" + shard + ".db\n"),
              1u)
        << log_;
    EXPECT_EQ(file_text(plan + "/status/shard-" + shard).rfind("exit 0 on ", 0), 0u);
    EXPECT_NE(file_text(plan + "/logs/shard-" + shard + ".log").find("ended with exit 0"),
              std::string::npos);
  }
  EXPECT_NE(log_.find("merge " + plan + "/shards/shard-0.db " + plan + "/shards/shard-1.db " +
                      plan + "/shards/shard-2.db --into " + plan +
                      "/merged.db --winners --variant paged_decode.*\n"),
            std::string::npos)
      << log_;
  EXPECT_NE(out_.find("the merged winners"), std::string::npos) << out_;
  EXPECT_NE(out_.find("every shard finished"), std::string::npos) << out_;
  EXPECT_NE(file_text(plan + "/logs/merge.log").find("the merged winners"), std::string::npos);
}

TEST_F(SweepScriptsTest, AShardThatFailsIsNamedWithTheCommandThatRunsItAgain) {
  write_plan();
  EXPECT_EQ(shell(shell_word(scripts_.dir + "/run-local.sh"), "FAKE_FAIL_SHARD=1"), 130) << out_;
  EXPECT_NE(out_.find("shard 1 did not finish: exit 4 on "), std::string::npos) << out_;
  EXPECT_NE(out_.find(scripts_.dir + "/submit.sh --shards 1 "), std::string::npos) << out_;
  EXPECT_NE(out_.find("the merged winners"), std::string::npos) << "the others are merged\n"
                                                                << out_;
  // Only shard 1 again: it alone runs, then the merge, which finds every shard finished.
  EXPECT_EQ(shell(shell_word(scripts_.dir + "/run-local.sh") + " --shards 1"), 0) << out_;
  EXPECT_EQ(occurrences(log_, "tune "), 1u) << log_;
  EXPECT_NE(log_.find("--shard 1/3 "), std::string::npos) << log_;
  EXPECT_NE(out_.find("every shard finished"), std::string::npos) << out_;
}

TEST_F(SweepScriptsTest, RunLocalRefusesWhatItCannotRun) {
  write_plan();
  const std::string run_local = shell_word(scripts_.dir + "/run-local.sh");
  EXPECT_EQ(shell(run_local + " --shards 3"), 2) << out_;
  EXPECT_NE(out_.find("the shards are 0 to 2"), std::string::npos) << out_;
  EXPECT_EQ(shell(run_local + " --shards 1,x"), 2) << out_;
  EXPECT_EQ(shell(run_local + " --parallel 0"), 2) << out_;
  EXPECT_EQ(shell(run_local + " --shards"), 2) << out_;
  EXPECT_EQ(shell(run_local + " --bogus"), 2) << out_;
  EXPECT_TRUE(log_.empty()) << "nothing may run\n" << log_;
  // The array script outside Slurm and run-local.sh.
  EXPECT_EQ(shell("bash " + shell_word(scripts_.dir + "/sweep.sbatch")), 2) << out_;
  EXPECT_NE(out_.find("run this script with submit.sh"), std::string::npos) << out_;
  // GPUs: two shards at once of two GPUs each need four.
  scripts_.gpus_per_task = 2;
  write_plan();
  EXPECT_EQ(shell(run_local, "CUDA_VISIBLE_DEVICES=4,5,6"), 2) << out_;
  EXPECT_NE(out_.find("need 4 GPUs; CUDA_VISIBLE_DEVICES lists 3"), std::string::npos) << out_;
}

TEST_F(SweepScriptsTest, RunLocalGivesEachLaneItsOwnGpus) {
  scripts_.gpus_per_task = 2;
  scripts_.tune_args.push_back("--devices");
  scripts_.tune_args.push_back("0,1");
  write_plan();
  // The stand-in tells which GPUs its shard saw.
  write_script(dir_ / "bin" / "attn-tune",
               "#!/bin/bash\necho \"$1 gpus=$CUDA_VISIBLE_DEVICES\" >> \"$FAKE_LOG\"\n"
               "for a; do if [ \"$p\" = --db ]; then touch \"$a\"; fi; p=$a; done\n");
  ASSERT_EQ(shell(shell_word(scripts_.dir + "/run-local.sh"), "CUDA_VISIBLE_DEVICES=7,6,5,4"), 0)
      << out_;
  // Lanes 0 and 1 hold GPUs 7,6 and 5,4; the third shard runs on whichever lane frees first.
  EXPECT_EQ(occurrences(log_, "tune gpus=7,6\n") + occurrences(log_, "tune gpus=5,4\n"), 3u)
      << log_;
  EXPECT_GE(occurrences(log_, "tune gpus=7,6\n"), 1u) << log_;
  EXPECT_GE(occurrences(log_, "tune gpus=5,4\n"), 1u) << log_;
}

// How a stop reaches attn-tune in a task: once, whoever sends it. Under Slurm a cancel, requeue or
// preemption signals every process of the job (the script and attn-tune); the time-limit warning
// (USR1) signals the script alone, which passes it on; run-local.sh signals the script alone.
TEST_F(SweepScriptsTest, EveryStopReachesAttnTuneOnce) {
  write_plan();
  // attn-tune running a shard: says it started, and notes each SIGTERM before it exits 130.
  write_script(dir_ / "bin" / "attn-tune", R"sh(#!/bin/bash
trap 'echo TERM >> "$FAKE_LOG"; exit 130' TERM
echo "started $$" >> "$FAKE_LOG"
for i in $(seq 300); do sleep 0.1; done
)sh");
  const std::string log = (dir_ / "log").string();
  const std::string status = scripts_.dir + "/status/shard-1";
  // Starts the task script as `env` says, waits for attn-tune; returns both pids.
  const auto start = [&](const char* shard_variable) -> std::pair<pid_t, pid_t> {
    fs::remove(log);
    const pid_t pid = ::fork();
    if (pid == 0) {
      const std::string path = "PATH=" + (dir_ / "bin").string() + ":/usr/bin:/bin";
      const std::string fake_log = "FAKE_LOG=" + log;
      const std::string shard = std::string(shard_variable) + "=1";
      const std::string script = scripts_.dir + "/sweep.sbatch";
      const std::string out = (dir_ / "task.out").string();
      std::freopen(out.c_str(), "w", stdout);
      const char* env[] = {path.c_str(), fake_log.c_str(), shard.c_str(), nullptr};
      ::execle("/bin/bash", "bash", script.c_str(), static_cast<char*>(nullptr), env);
      ::_exit(127);
    }
    pid_t child = 0;
    for (int i = 0; i < 200 && child == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
      const std::string text = file_text(log);
      if (text.rfind("started ", 0) == 0) child = std::stoi(text.substr(8));
    }
    return {pid, child};
  };
  const auto finish = [&](pid_t pid) {
    int wait_status = 0;
    ::waitpid(pid, &wait_status, 0);
    return WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1;
  };

  // Slurm's cancel: SIGTERM to the script and to attn-tune.
  auto [script, tune] = start("SLURM_ARRAY_TASK_ID");
  ASSERT_GT(tune, 0) << file_text(dir_ / "task.out");
  EXPECT_EQ(file_text(status).rfind("running on ", 0), 0u);
  ::kill(script, SIGTERM);
  ::kill(tune, SIGTERM);
  EXPECT_EQ(finish(script), 130);
  EXPECT_EQ(occurrences(file_text(log), "TERM\n"), 1u) << file_text(log);
  EXPECT_EQ(file_text(status).rfind("exit 130 on ", 0), 0u) << file_text(status);

  // The time-limit warning: USR1 to the script alone, passed on as SIGTERM.
  std::tie(script, tune) = start("SLURM_ARRAY_TASK_ID");
  ASSERT_GT(tune, 0);
  ::kill(script, SIGUSR1);
  EXPECT_EQ(finish(script), 130);
  EXPECT_EQ(occurrences(file_text(log), "TERM\n"), 1u) << file_text(log);

  // run-local.sh's stop: SIGTERM to the script alone, passed on.
  std::tie(script, tune) = start("ATTN_SWEEP_SHARD");
  ASSERT_GT(tune, 0);
  ::kill(script, SIGTERM);
  EXPECT_EQ(finish(script), 130);
  EXPECT_EQ(occurrences(file_text(log), "TERM\n"), 1u) << file_text(log);
  EXPECT_NE(file_text(dir_ / "task.out").find("shard 1/3 ended with exit 130"), std::string::npos)
      << file_text(dir_ / "task.out");
}

TEST_F(SweepScriptsTest, SubmitMakesTheMergeDependOnTheArray) {
  scripts_.max_running = 2;
  write_plan();
  const std::string submit = shell_word(scripts_.dir + "/submit.sh");
  ASSERT_EQ(shell(submit + " --partition=debug"), 0) << out_;
  EXPECT_NE(log_.find("sbatch --parsable --array=0-2%2 --partition=debug " + scripts_.dir +
                      "/sweep.sbatch\n"),
            std::string::npos)
      << log_;
  EXPECT_NE(log_.find("sbatch --parsable --dependency=afterany:101 --partition=debug " +
                      scripts_.dir + "/merge.sbatch\n"),
            std::string::npos)
      << log_;
  EXPECT_NE(out_.find("job array 101 (tasks 0-2%2), the merge as job 102"), std::string::npos)
      << out_;
  ASSERT_EQ(shell(submit + " --shards 0,2"), 0) << out_;
  EXPECT_NE(log_.find("sbatch --parsable --array=0,2%2 " + scripts_.dir + "/sweep.sbatch\n"),
            std::string::npos)
      << log_;
  EXPECT_NE(shell(submit + " --shards"), 0) << out_;
}

TEST(SlurmTime, EveryFormOfATimeLimitIsRead) {
  EXPECT_EQ(slurm_time_seconds("90"), 90 * 60);
  EXPECT_EQ(slurm_time_seconds("10:30"), 10 * 60 + 30);
  EXPECT_EQ(slurm_time_seconds("4:00:00"), 4 * 3600);
  EXPECT_EQ(slurm_time_seconds("2-12"), 2 * 86400 + 12 * 3600);
  EXPECT_EQ(slurm_time_seconds("1-02:03"), 86400 + 2 * 3600 + 3 * 60);
  EXPECT_EQ(slurm_time_seconds("1-02:03:04"), 86400 + 2 * 3600 + 3 * 60 + 4);
  for (const char* bad : {"", "infinite", "1:2:3:4", "1-", "-1", "a:00", "1h", "1-2-3", "3:"}) {
    EXPECT_EQ(slurm_time_seconds(bad), std::nullopt) << bad;
  }
}

TEST(ShellWord, TheShellReadsEachWordBack) {
  EXPECT_EQ(shell_word("paged_decode.sm80_simt"), "paged_decode.sm80_simt");
  EXPECT_EQ(shell_word("/a/b-c/d=1,2"), "/a/b-c/d=1,2");
  EXPECT_EQ(shell_word("paged_decode.*"), "'paged_decode.*'");
  EXPECT_EQ(shell_word(""), "''");
  for (const std::string& word :
       {std::string("it's"), std::string("a b"), std::string("$HOME"), std::string("`x`"),
        std::string("*"), std::string("a\nb"), std::string("'")}) {
    const std::string command =
        "printf %s " + shell_word(word) + " > /tmp/attn-shell-word-" + std::to_string(::getpid());
    ASSERT_EQ(std::system(command.c_str()), 0) << word;
    EXPECT_EQ(file_text("/tmp/attn-shell-word-" + std::to_string(::getpid())), word);
  }
  std::remove(("/tmp/attn-shell-word-" + std::to_string(::getpid())).c_str());
}

}  // namespace
}  // namespace attn
