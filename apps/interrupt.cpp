#include "apps/interrupt.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>

#include "base/errors.hpp"
#include "base/exit_codes.hpp"
#include "results/store.hpp"

namespace attn {

namespace {

constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP};
constexpr int kFatalSignals[] = {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL};
constexpr int kStopCount = sizeof(kStopSignals) / sizeof(kStopSignals[0]);
constexpr int kFatalCount = sizeof(kFatalSignals) / sizeof(kFatalSignals[0]);
// How long the process waits for its runs to be closed before it quits or dies anyway.
constexpr int kCloseTimeoutMs = 2000;

// A signal handler can reach only globals. Written before the handlers are installed, read in
// them.
volatile std::sig_atomic_t g_requested = 0;  // a first stop signal came
volatile std::sig_atomic_t g_quitting = 0;   // a second one came: the watcher is closing the runs
// The first stop signal: which, from whom (si_pid; 0 from the kernel: a terminal's Ctrl-C or
// hangup) and when (CLOCK_MONOTONIC), to tell one request delivered twice from a second request.
volatile std::sig_atomic_t g_first_signal = 0;
volatile pid_t g_first_sender = 0;
timespec g_first_time{};
bool g_installed = false;
char g_first_message[kStopCount][200];
char g_second_message[kStopCount][200];
struct sigaction g_previous_stop[kStopCount];
bool g_stop_installed[kStopCount];
struct sigaction g_previous_fatal[kFatalCount];
// Handlers -> watcher: the signal number (0: the handler is being removed). Watcher -> a fatal
// signal's handler: one byte once the runs are closed.
int g_to_watcher[2] = {-1, -1};
int g_to_handler[2] = {-1, -1};

std::mutex g_path_mutex;
std::string g_database_path;  // guarded by g_path_mutex
std::thread g_watcher;

void write_all(const char* text) {
  size_t left = std::strlen(text);
  while (left > 0) {
    const ssize_t n = ::write(STDERR_FILENO, text, left);
    if (n <= 0) return;  // a closed terminal: nothing else can be done in a signal handler
    text += n;
    left -= size_t(n);
  }
}

int stop_index(int sig) {
  for (int i = 0; i < kStopCount; ++i) {
    if (kStopSignals[i] == sig) return i;
  }
  return 0;
}

void tell_watcher(int sig) {
  const unsigned char byte = static_cast<unsigned char>(sig);
  ssize_t ignored = ::write(g_to_watcher[1], &byte, 1);
  (void)ignored;
}

// Whether a stop signal after the first is the first request delivered again rather than a
// second request. `timeout` sends its SIGTERM to the command and then to its whole process group,
// the command included, so the command gets it twice within microseconds (once only when both
// arrive before the handler runs); a closed terminal's SIGHUP comes from the kernel, and the shell
// passes it on to its jobs as well. So the same signal sent by the same process (not the
// terminal's Ctrl-C, which the kernel sends once per key press) within kRepeatSeconds is one
// request, and so is every SIGHUP: nobody hangs up a terminal twice on purpose.
constexpr double kRepeatSeconds = 0.25;

bool delivered_again(int sig, const siginfo_t* info) {
  if (sig != g_first_signal) return false;
  if (sig == SIGHUP) return true;
  if (info == nullptr || info->si_pid == 0 || info->si_pid != g_first_sender) return false;
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  const double seconds =
      double(now.tv_sec - g_first_time.tv_sec) + 1e-9 * double(now.tv_nsec - g_first_time.tv_nsec);
  return seconds < kRepeatSeconds;
}

extern "C" void on_stop_signal(int sig, siginfo_t* info, void*) {
  // Only async-signal-safe calls here: write(2), clock_gettime(2), sigaction(2), _exit(2).
  const int i = stop_index(sig);
  if (g_requested && delivered_again(sig, info)) return;
  if (g_quitting) ::_exit(to_int(ExitCode::interrupted));  // a third: no more waiting
  if (g_requested) {
    g_quitting = 1;
    write_all(g_second_message[i]);
    tell_watcher(sig);  // it closes the runs and exits
    return;
  }
  g_requested = 1;
  g_first_signal = sig;
  g_first_sender = info != nullptr ? info->si_pid : 0;
  ::clock_gettime(CLOCK_MONOTONIC, &g_first_time);
  if (sig == SIGHUP) {
    // A closed terminal takes the pipes it fed with it (`| tee log`): writing to them must not
    // kill the process on its way to a clean stop.
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    ::sigaction(SIGPIPE, &ignore, nullptr);
  }
  write_all(g_first_message[i]);
}

extern "C" void on_fatal_signal(int sig) {
  tell_watcher(sig);
  // Wait (bounded: the watcher may be the thread that crashed) until the runs are closed.
  pollfd p{g_to_handler[0], POLLIN, 0};
  ::poll(&p, 1, kCloseTimeoutMs + 1000);
  // Then the signal takes its usual course: blocked while this handler runs, it is delivered
  // with the previous action on return (a fault recurs at once anyway).
  for (int i = 0; i < kFatalCount; ++i) {
    if (kFatalSignals[i] == sig) ::sigaction(sig, &g_previous_fatal[i], nullptr);
  }
  ::raise(sig);
}

std::string database_path() {
  std::lock_guard<std::mutex> lock(g_path_mutex);
  return g_database_path;
}

// What a signal handler cannot do: close the runs in the database, then quit (a second stop
// signal) or let the fatal signal's handler go on. Every signal is blocked in this thread, so the
// handlers run on the others.
void watch() {
  sigset_t all;
  sigfillset(&all);
  ::pthread_sigmask(SIG_BLOCK, &all, nullptr);
  for (;;) {
    unsigned char sig = 0;
    const ssize_t n = ::read(g_to_watcher[0], &sig, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || sig == 0) return;
    const std::string path = database_path();
    const bool stop = sig == SIGINT || sig == SIGTERM || sig == SIGHUP;
    const std::string status =
        stop ? "interrupted"
             : "error: killed by signal " + std::to_string(sig) + " (" + strsignal(sig) + ")";
    if (!path.empty()) Store::close_runs_of_this_process(path, status, kCloseTimeoutMs);
    if (stop) ::_exit(to_int(ExitCode::interrupted));
    const char done = 1;
    ssize_t ignored = ::write(g_to_handler[1], &done, 1);
    (void)ignored;
  }
}

}  // namespace

InterruptHandler::InterruptHandler(const char* program) {
  ATTN_ASSERT(!g_installed, "one InterruptHandler at a time");
  for (int i = 0; i < kStopCount; ++i) {
    const int sig = kStopSignals[i];
    const bool ctrl_c = sig == SIGINT;
    const char* name = ctrl_c ? "Ctrl-C" : sig == SIGTERM ? "SIGTERM" : "SIGHUP";
    // A hangup is never taken as a second request (delivered_again): another signal quits.
    const char* again = ctrl_c ? "Ctrl-C again" : sig == SIGTERM ? "send it again" : "SIGTERM";
    std::snprintf(g_first_message[i], sizeof g_first_message[i],
                  "\n%s: %s: stopping after the sample in hand (%s to quit at once)\n", program,
                  name, again);
    std::snprintf(g_second_message[i], sizeof g_second_message[i],
                  "\n%s: %s again: quitting now; the database is consistent\n", program, name);
  }
  g_requested = 0;
  g_quitting = 0;
  g_first_signal = 0;
  ATTN_ASSERT(::pipe2(g_to_watcher, O_CLOEXEC) == 0 && ::pipe2(g_to_handler, O_CLOEXEC) == 0,
              "InterruptHandler: pipe2 failed");
  // A handler never blocks on the pipe (a full pipe already holds a request).
  ::fcntl(g_to_watcher[1], F_SETFL, O_NONBLOCK);
  ::fcntl(g_to_handler[1], F_SETFL, O_NONBLOCK);
  g_watcher = std::thread(watch);

  for (int i = 0; i < kStopCount; ++i) {
    struct sigaction previous {};
    ::sigaction(kStopSignals[i], nullptr, &previous);
    g_stop_installed[i] = previous.sa_handler != SIG_IGN;  // nohup, a background job: keep it
    if (!g_stop_installed[i]) continue;
    struct sigaction action {};
    action.sa_sigaction = on_stop_signal;
    sigemptyset(&action.sa_mask);
    for (int other : kStopSignals) sigaddset(&action.sa_mask, other);  // one handler at a time
    // SA_RESTART: blocking calls go on after the first signal; SA_SIGINFO: the sender.
    action.sa_flags = SA_RESTART | SA_SIGINFO;
    ::sigaction(kStopSignals[i], &action, &g_previous_stop[i]);
  }
  for (int i = 0; i < kFatalCount; ++i) {
    struct sigaction action {};
    action.sa_handler = on_fatal_signal;
    sigemptyset(&action.sa_mask);
    ::sigaction(kFatalSignals[i], &action, &g_previous_fatal[i]);
  }
  g_installed = true;
}

InterruptHandler::~InterruptHandler() {
  for (int i = 0; i < kStopCount; ++i) {
    if (g_stop_installed[i]) ::sigaction(kStopSignals[i], &g_previous_stop[i], nullptr);
  }
  for (int i = 0; i < kFatalCount; ++i) {
    ::sigaction(kFatalSignals[i], &g_previous_fatal[i], nullptr);
  }
  tell_watcher(0);
  if (g_watcher.joinable()) g_watcher.join();
  for (int* pipe : {g_to_watcher, g_to_handler}) {
    ::close(pipe[0]);
    ::close(pipe[1]);
    pipe[0] = pipe[1] = -1;
  }
  {
    std::lock_guard<std::mutex> lock(g_path_mutex);
    g_database_path.clear();
  }
  g_installed = false;
}

void InterruptHandler::close_runs_in(const std::string& database_path) {
  std::lock_guard<std::mutex> lock(g_path_mutex);
  g_database_path = database_path;
}

bool InterruptHandler::requested() const {
  return g_requested != 0;
}

}  // namespace attn
