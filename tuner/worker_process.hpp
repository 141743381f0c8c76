// WorkerProcess: one child process started with posix_spawn (never fork: the orchestrator may hold
// a CUDA context), joined to the parent by a Unix socket pair. The child's end is passed as
// `--fd N` appended to its argv; its stdout goes to the parent's stderr, so stray prints cannot
// corrupt the protocol. Move-only; the destructor kills (SIGKILL) and reaps a child still there,
// so no worker outlives its owner or stays a zombie.
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
