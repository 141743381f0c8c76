// WorkerProcess (tuner/worker_process.hpp) starts its child with fork and exec, and in between:
// the child ignores the signals that reach a whole process group (SIGINT, SIGTERM, SIGHUP) and
// SIGPIPE, and dies with its parent (PR_SET_PDEATHSIG) even when the parent is killed without a
// chance to stop it. A program that cannot be executed is an EnvironmentError that says why.
#include "tuner/worker_process.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "base/errors.hpp"
#include "base/process_identity.hpp"

namespace attn {
namespace {

// `script` run by /bin/sh; WorkerProcess appends `--fd N`, which the script sees as $1 and $2.
// Scripts end in `exec sleep`, so that the worker's pid is the sleeping process itself: a shell
// killed in its place would leave its `sleep` holding the test's output open until it ends.
std::vector<std::string> shell(const std::string& script) {
  return {"/bin/sh", "-c", script, "sh"};
}

TEST(WorkerProcessStart, TheChildIgnoresGroupSignalsAndSigpipe) {
  WorkerProcess worker(shell("grep SigIgn /proc/$$/status >&$2; exec sleep 30"));
  std::string line;
  ASSERT_EQ(worker.read_line(line, 10), WorkerProcess::Read::line);
  // "SigIgn:\t0000000000001003": bit (signal - 1) of a hexadecimal mask.
  const unsigned long long ignored =
      std::stoull(line.substr(line.find_last_of(" \t") + 1), nullptr, 16);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) {
    EXPECT_TRUE(ignored & (1ULL << (sig - 1))) << "signal " << sig << " in " << line;
  }
  // So a SIGTERM to it changes nothing; the owner still stops it.
  ::kill(worker.pid(), SIGTERM);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_TRUE(process_start(worker.pid()).has_value());
  EXPECT_EQ(worker.kill_and_reap(), "killed by signal 9 (Killed)");
}

TEST(WorkerProcessStart, TheChildDiesWithAParentThatCouldNotStopIt) {
  int pids[2];
  ASSERT_EQ(::pipe(pids), 0);
  const pid_t parent = ::fork();
  if (parent == 0) {
    // A parent that starts a worker and dies at once, without running any destructor.
    WorkerProcess worker(shell("exec sleep 30"));
    const int64_t pid = worker.pid();
    if (::write(pids[1], &pid, sizeof pid) != ssize_t(sizeof pid)) std::_Exit(2);
    std::_Exit(0);
  }
  ::close(pids[1]);
  int64_t worker = 0;
  ASSERT_EQ(::read(pids[0], &worker, sizeof worker), ssize_t(sizeof worker));
  ::close(pids[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(parent, &status, 0), parent);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (process_start(worker).has_value() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_FALSE(process_start(worker).has_value()) << "the worker outlived its parent";
}

TEST(WorkerProcessStart, AProgramThatCannotBeExecutedSaysWhy) {
  try {
    WorkerProcess worker({"/nonexistent/attn-tune", "worker"});
    FAIL() << "started";
  } catch (const EnvironmentError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot start /nonexistent/attn-tune: No such file"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace attn
