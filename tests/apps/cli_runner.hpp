// Runs the attn-bench binary as a user would, in a fresh folder per test, and captures its exit
// code, standard output and standard error. Shared by the CLI test files.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "base/exit_codes.hpp"

extern char** environ;

namespace attn::testing {

// The documented exit codes (docs/exit-codes.md) the CLI tests expect.
inline constexpr int kUsage = int(ExitCode::usage);
inline constexpr int kInvalidInput = int(ExitCode::invalid_input);
inline constexpr int kEnvironment = int(ExitCode::environment);
inline constexpr int kInterrupted = int(ExitCode::interrupted);

// Polls `condition` every 20 ms for up to `seconds`; its last answer.
inline bool eventually(const std::function<bool()>& condition, double seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until) {
    if (condition()) return true;
    ::usleep(20000);
  }
  return condition();
}

struct CliResult {
  int exit_code = -1;
  std::string out, err;
};

inline std::string quote(const std::string& arg) {
  std::string q = "'";
  for (char c : arg) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

inline std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Live processes whose /proc/PID/`file` ("environ" or "cmdline") holds `marker` (a zombie's reads
// empty): tests use it to check that no worker outlives its orchestrator.
inline int processes_with(const std::string& marker, const char* file = "environ") {
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / file, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    n += text.str().find(marker) != std::string::npos;
  }
  return n;
}

// A child process started with posix_spawn, its environment that of the test plus `extra_env`
// ("NAME=value" entries, which win over the inherited ones), stdout and stderr going to files. For
// tests that signal a running binary or run two at once. With `own_process_group` it leads a new
// process group (its id is its pid), as a job of an interactive shell does, so that a test can
// signal the group the way a closed terminal does.
class Child {
 public:
  Child(const std::vector<std::string>& args, const std::vector<std::string>& extra_env,
        const std::filesystem::path& out, const std::filesystem::path& err,
        bool own_process_group = false) {
    std::vector<std::string> storage = args;
    std::vector<char*> argv;
    for (std::string& a : storage) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_storage = extra_env;
    for (char** e = environ; *e != nullptr; ++e) env_storage.emplace_back(*e);
    std::vector<char*> envp;
    for (std::string& e : env_storage) envp.push_back(e.data());
    envp.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    if (own_process_group) {
      posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
      posix_spawnattr_setpgroup(&attributes, 0);
    }
    const int rc = ::posix_spawn(&pid_, argv[0], &actions, &attributes, argv.data(), envp.data());
    posix_spawnattr_destroy(&attributes);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) pid_ = -1;
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  // A child the test did not wait for (a failed assertion) is killed and reaped.
  ~Child() {
    if (pid_ > 0 && !exited_) {
      ::kill(pid_, SIGKILL);
      wait();
    }
  }
  pid_t pid() const { return pid_; }
  // The wait status; with `usage`, what the child used (ru_maxrss: its peak resident set, KiB).
  int wait(struct rusage* usage = nullptr) {
    int status = 0;
    while (::wait4(pid_, &status, 0, usage) < 0 && errno == EINTR) {
    }
    exited_ = true;
    return status;
  }
  // True (with the wait status, and with `usage` what the child used) once the child has exited.
  bool exited(int& status, struct rusage* usage = nullptr) {
    if (exited_) return true;
    exited_ = ::wait4(pid_, &status, WNOHANG, usage) == pid_;
    return exited_;
  }

 private:
  pid_t pid_ = -1;
  bool exited_ = false;
};

// One run of a binary, measured: its exit code (-1 when killed), output, wall time, peak resident
// set (KiB) and CPU time, both of the binary alone (tests/apps/peak_rss_runner.cpp says why
// wait4 on a child of the test process would count the test's own memory).
struct MeasuredRun {
  int exit_code = -1;
  std::string out, err;
  double seconds = 0;
  long max_resident_kib = 0;
  double cpu_seconds = 0;
  bool killed = false;  // still running after the time limit: killed (a hang, e.g. on a FIFO)
};

// Runs `argv` (argv[0] the binary) through attn_peak_rss with `extra_env`, its output in
// `out_dir`/stdout and stderr, killing it after `limit_seconds`, so that a test of a hang fails
// instead of hanging.
inline MeasuredRun run_measured(const std::vector<std::string>& argv,
                                const std::vector<std::string>& extra_env,
                                const std::filesystem::path& out_dir, double limit_seconds) {
  const std::filesystem::path report = out_dir / "peak-rss";
  std::filesystem::remove(report);
  std::vector<std::string> wrapped = {ATTN_PEAK_RSS_BINARY, report.string(), "--"};
  wrapped.insert(wrapped.end(), argv.begin(), argv.end());
  const auto start = std::chrono::steady_clock::now();
  Child child(wrapped, extra_env, out_dir / "stdout", out_dir / "stderr");
  int status = 0;
  MeasuredRun r;
  const bool done = eventually([&] { return child.exited(status); }, limit_seconds);
  if (!done) {
    ::kill(child.pid(), SIGKILL);  // the binary dies with its runner (PR_SET_PDEATHSIG)
    status = child.wait();
    r.killed = true;
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream(report) >> r.max_resident_kib >> r.cpu_seconds;
  r.out = slurp(out_dir / "stdout");
  r.err = slurp(out_dir / "stderr");
  return r;
}

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::temp_directory_path() /
        ("attn-cli-test-" + std::to_string(::getpid()) + "-" +
         std::string(::testing::UnitTest::GetInstance()->current_test_info()->test_suite_name()) +
         "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  CliResult run(const std::vector<std::string>& args) {
    std::string command = "cd " + quote(dir_.string()) +
                          " && ATTN_DB= ATTN_JIT_CACHE_DIR=" + quote((dir_ / "jit").string()) +
                          " " + quote(binary_);
    for (const auto& a : args) command += " " + quote(a);
    command += " >" + quote((dir_ / "stdout").string()) + " 2>" + quote((dir_ / "stderr").string());
    const int status = std::system(command.c_str());
    CliResult r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = slurp(dir_ / "stdout");
    r.err = slurp(dir_ / "stderr");
    return r;
  }

  std::filesystem::path write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return dir_ / name;
  }

  std::filesystem::path dir_;
  std::string binary_ = ATTN_BENCH_BINARY;  // the executable run() starts
};

}  // namespace attn::testing
