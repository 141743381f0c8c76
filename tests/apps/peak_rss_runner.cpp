// attn_peak_rss REPORT -- PROGRAM [ARGS...]: runs PROGRAM (an absolute path) with this process's
// environment and writes to the file REPORT one line, "<peak resident set in KiB> <CPU seconds>",
// of PROGRAM alone; exits with PROGRAM's exit code (or dies of its signal).
//
// Why a separate program: the ru_maxrss that wait4 returns for a child counts the address space
// the child left behind at exec, which is a copy of its parent's (fork) or the parent itself
// (vfork, posix_spawn). A child that a test binary of 70 MiB starts "uses" 70 MiB before it has
// done anything. This runner is small, so what the program it starts is charged with is its own.
// The program is killed when the runner dies (a test that kills the runner at a time limit).
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>

int main(int argc, char** argv) {
  if (argc < 4 || std::strcmp(argv[2], "--") != 0) {
    std::fprintf(stderr, "usage: attn_peak_rss REPORT -- PROGRAM [ARGS...]\n");
    return 125;
  }
  const pid_t runner = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    std::perror("attn_peak_rss: fork");
    return 125;
  }
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != runner) _exit(125);  // the runner died before the line above
    ::execv(argv[3], argv + 3);
    std::fprintf(stderr, "attn_peak_rss: cannot run %s: %s\n", argv[3], std::strerror(errno));
    _exit(127);
  }
  int status = 0;
  struct rusage usage {};
  while (::wait4(pid, &status, 0, &usage) < 0) {
    if (errno != EINTR) {
      std::perror("attn_peak_rss: wait4");
      return 125;
    }
  }
  const double cpu_seconds = double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                             double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
  if (std::FILE* report = std::fopen(argv[1], "w")) {
    std::fprintf(report, "%ld %.6f\n", usage.ru_maxrss, cpu_seconds);
    std::fclose(report);
  }
  if (WIFSIGNALED(status)) {
    std::signal(WTERMSIG(status), SIG_DFL);
    std::raise(WTERMSIG(status));
    return 128 + WTERMSIG(status);
  }
  return WEXITSTATUS(status);
}
