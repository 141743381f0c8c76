#include "tuner/worker_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "base/errors.hpp"

extern char** environ;

namespace attn {

std::string describe_exit(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return "killed by signal " + std::to_string(sig) + " (" + strsignal(sig) + ")";
  }
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  return "ended with wait status " + std::to_string(status);
}

WorkerProcess::WorkerProcess(const std::vector<std::string>& argv) {
  if (argv.empty()) throw EnvironmentError("worker: no program to start");
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    throw EnvironmentError(std::string("worker: socketpair: ") + std::strerror(errno));
  }
  // The child's end must survive exec; the parent's end must not leak into the child.
  ::fcntl(fds[1], F_SETFD, 0);
  std::vector<std::string> args = argv;
  args.push_back("--fd");
  args.push_back(std::to_string(fds[1]));
  std::vector<char*> cargs;
  for (std::string& a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);

  // The child reports a failed exec on this pipe; a successful exec closes it (O_CLOEXEC).
  int exec_error[2];
  if (::pipe2(exec_error, O_CLOEXEC) != 0) {
    const int e = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    throw EnvironmentError(std::string("worker: pipe: ") + std::strerror(e));
  }
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigset_t no_signals;
  sigemptyset(&no_signals);
  const pid_t parent = ::getpid();
  // Every signal blocked across the fork: until the child has set its own dispositions, a signal
  // to the process group would run the parent's handlers (apps/interrupt.hpp) in the child.
  sigset_t all_signals, parent_mask;
  sigfillset(&all_signals);
  ::pthread_sigmask(SIG_BLOCK, &all_signals, &parent_mask);

  const pid_t pid = ::fork();
  if (pid == 0) {
    // The child: async-signal-safe calls only, until exec.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the parent died before the line above
    // SIGUSR1 (stop sampling) too, until the worker installs its handler: a stop request that
    // comes while it starts must not kill it.
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGUSR1}) ::sigaction(sig, &ignore, nullptr);
    ::sigprocmask(SIG_SETMASK, &no_signals, nullptr);  // a mask survives exec
    ::dup2(STDERR_FILENO, STDOUT_FILENO);
    ::execve(cargs[0], cargs.data(), environ);
    const int e = errno;
    ssize_t ignored = ::write(exec_error[1], &e, sizeof e);
    (void)ignored;
    ::_exit(127);
  }
  const int fork_errno = errno;
  ::pthread_sigmask(SIG_SETMASK, &parent_mask, nullptr);
  ::close(exec_error[1]);
  ::close(fds[1]);
  if (pid < 0) {
    ::close(exec_error[0]);
    ::close(fds[0]);
    throw EnvironmentError("worker: cannot start " + argv[0] +
                           ": fork: " + std::strerror(fork_errno));
  }
  int child_errno = 0;
  ssize_t n = 0;
  while ((n = ::read(exec_error[0], &child_errno, sizeof child_errno)) < 0 && errno == EINTR) {
  }
  ::close(exec_error[0]);
  if (n == ssize_t(sizeof child_errno)) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    ::close(fds[0]);
    throw EnvironmentError("worker: cannot start " + argv[0] + ": " + std::strerror(child_errno));
  }
  pid_ = pid;
  fd_ = fds[0];
}

WorkerProcess::~WorkerProcess() {
  if (running()) kill_and_reap();
  if (fd_ >= 0) ::close(fd_);
}

bool WorkerProcess::send_line(const std::string& line) {
  const std::string text = line + "\n";
  size_t sent = 0;
  while (sent < text.size()) {
    // MSG_NOSIGNAL: a dead worker is an answer (false), not a SIGPIPE for the orchestrator.
    const ssize_t n = ::send(fd_, text.data() + sent, text.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    sent += size_t(n);
  }
  return true;
}

WorkerProcess::Read WorkerProcess::read_line(std::string& line, double seconds) {
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + std::chrono::duration<double>(seconds);
  for (;;) {
    if (auto pos = buffer_.find('\n'); pos != std::string::npos) {
      line = buffer_.substr(0, pos);
      buffer_.erase(0, pos + 1);
      return Read::line;
    }
    // With `seconds` 0 (or past the deadline) this still takes what has already arrived.
    const long long left = std::max<long long>(
        0, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()).count());
    pollfd p{fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, int(std::min<long long>(left, 1 << 30)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {
      if (clock::now() >= deadline) return Read::timed_out;
      continue;
    }
    char chunk[65536];
    const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Read::closed;
    buffer_.append(chunk, size_t(n));
  }
}

std::string WorkerProcess::wait_for_exit() {
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0) {
    if (errno != EINTR) {
      pid_ = -1;
      return std::string("lost (waitpid: ") + std::strerror(errno) + ")";
    }
  }
  pid_ = -1;
  return describe_exit(status);
}

std::string WorkerProcess::kill_and_reap() {
  if (!running()) return "not running";
  ::kill(pid_, SIGKILL);
  return wait_for_exit();
}

std::string WorkerProcess::reap(double grace_seconds) {
  if (!running()) return "not running";
  const auto until =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(grace_seconds);
  while (std::chrono::steady_clock::now() < until) {
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      pid_ = -1;
      return describe_exit(status);
    }
    if (r < 0 && errno != EINTR) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return kill_and_reap();
}

}  // namespace attn
