#include "apps/interrupt.hpp"

#include <signal.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstring>

#include "base/errors.hpp"
#include "base/exit_codes.hpp"

namespace attn {

namespace {

// A signal handler can reach only globals. Written before the handler is installed, read in it.
volatile std::sig_atomic_t g_requested = 0;
bool g_installed = false;
char g_first_message[160];
char g_second_message[160];
struct sigaction g_previous;

void write_all(const char* text) {
  size_t left = std::strlen(text);
  while (left > 0) {
    const ssize_t n = ::write(STDERR_FILENO, text, left);
    if (n <= 0) return;  // nothing else can be done in a signal handler
    text += n;
    left -= size_t(n);
  }
}

extern "C" void on_sigint(int) {
  // Only async-signal-safe calls here: write(2) and _exit(2).
  if (g_requested) {
    write_all(g_second_message);
    ::_exit(to_int(ExitCode::interrupted));
  }
  g_requested = 1;
  write_all(g_first_message);
}

}  // namespace

InterruptHandler::InterruptHandler(const char* program) {
  ATTN_ASSERT(!g_installed, "one InterruptHandler at a time");
  std::snprintf(g_first_message, sizeof g_first_message,
                "\n%s: Ctrl-C: stopping after the case in progress (Ctrl-C again to quit at "
                "once)\n",
                program);
  std::snprintf(g_second_message, sizeof g_second_message,
                "\n%s: Ctrl-C again: quitting now; the database is consistent\n", program);
  g_requested = 0;
  struct sigaction action {};
  action.sa_handler = on_sigint;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // blocking calls go on after the first Ctrl-C
  ::sigaction(SIGINT, &action, &g_previous);
  g_installed = true;
}

InterruptHandler::~InterruptHandler() {
  ::sigaction(SIGINT, &g_previous, nullptr);
  g_installed = false;
}

bool InterruptHandler::requested() const {
  return g_requested != 0;
}

}  // namespace attn
