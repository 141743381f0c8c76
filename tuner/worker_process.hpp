// WorkerProcess: one child process joined to the parent by a Unix socket pair. The child's end is
// passed as `--fd N` appended to its argv; its stdout goes to the parent's stderr, so stray prints
// cannot corrupt the protocol. Started with fork and an immediate exec: between the two the child
// makes only async-signal-safe calls on what the parent prepared, so the parent's threads, locks
// and CUDA context (if any) do not matter, and the parent blocks every signal across the fork, so
// that none runs the parent's handlers in the child. In that window the child
//   - asks the kernel to SIGKILL it when its parent dies (PR_SET_PDEATHSIG, kept across exec), and
//     then checks that its parent is still the process that forked it, so that a parent killed
//     with SIGKILL at any moment, even while the worker is still starting, leaves no worker;
//   - ignores SIGINT, SIGTERM and SIGHUP, which reach a whole process group (Ctrl-C, `timeout`, a
//     closed terminal): the orchestrator acts on them and stops its workers itself; and SIGPIPE,
//     so that a stray print to a closed pipe cannot kill a worker in the middle of a case; and
//     SIGUSR1 until the worker installs its own handler (tuner/worker_serve.hpp).
// PR_SET_PDEATHSIG fires when the thread that forked the child ends: construct workers on the
// thread that lives as long as they should (the sweep's). Move-only; the destructor kills
// (SIGKILL) and reaps a child still there, so no worker outlives its owner or stays a zombie.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace attn {

class WorkerProcess {
 public:
  // Throws EnvironmentError when the program cannot be started.
  explicit WorkerProcess(const std::vector<std::string>& argv);
  ~WorkerProcess();
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  pid_t pid() const { return pid_; }
  int fd() const { return fd_; }  // the orchestrator's end, to poll several workers at once
  bool running() const { return pid_ > 0; }

  // False when the child's end is gone (it died).
  bool send_line(const std::string& line);
  enum class Read { line, closed, timed_out };
  // Waits at most `seconds` for a whole line (without its newline); 0 takes only what has arrived.
  Read read_line(std::string& line, double seconds);

  // SIGKILL, then reap; says how it ended ("killed by signal 9 (Killed)").
  std::string kill_and_reap();
  // After `closed`: waits up to `grace_seconds` for the child to end by itself, then kills it.
  // Says how it ended: "killed by signal 11 (Segmentation fault)", "exited with status 3".
  std::string reap(double grace_seconds = 2);

 private:
  std::string wait_for_exit();
  pid_t pid_ = -1;
  int fd_ = -1;
  std::string buffer_;
};

// "killed by signal 6 (Aborted)" / "exited with status 1" for a waitpid status.
std::string describe_exit(int status);

}  // namespace attn
