// Stop signals in the long-running commands (`attn-bench run`, `attn-tune tune`): SIGINT (Ctrl-C),
// SIGTERM (`timeout`, a batch scheduler, `kill`) and SIGHUP (the terminal was closed). The first
// asks the command to stop at its next safe point (between cases), finish what is in flight,
// record it, close its run as 'interrupted', print its summary and exit 130. A second one quits at
// once with 130, after closing this process's open runs as 'interrupted' from a database
// connection of its own (waiting at most 2 s for it; a third signal quits without waiting). One
// request delivered twice is not a second one: the same signal sent by the same process within
// 0.25 s (`timeout` signals its command and then its whole process group, the command included),
// and any SIGHUP after a first (the kernel and the shell both pass on a hangup). A signal the
// process was started with ignored (`nohup`, a background job of a script) stays ignored. Fatal
// signals (SIGABRT from abort(), SIGSEGV, SIGBUS, SIGFPE, SIGILL) close the open runs as
// "error: killed by signal N (name)" (within 2 s) and then take their usual course. The database
// stays consistent either way: every write is a transaction, so an exit in the middle of one loses
// only that transaction, as a kill -9 would; a run whose process died without closing it is closed
// as 'interrupted' by the next command that opens the database for writing
// (Store::close_runs_of_gone_processes).
#pragma once

#include <string>

namespace attn {

// Installs the handlers for its lifetime (and a thread that does what a handler cannot: the
// database), and restores the previous handlers after. One at a time.
class InterruptHandler {
 public:
  // `program` ("attn-bench", "attn-tune") starts the lines the handler writes to stderr.
  explicit InterruptHandler(const char* program);
  ~InterruptHandler();
  InterruptHandler(const InterruptHandler&) = delete;
  InterruptHandler& operator=(const InterruptHandler&) = delete;

  // The results database whose runs of this process are closed when it quits at once or dies of a
  // fatal signal. Without one, those runs are left to the next writer.
  void close_runs_in(const std::string& database_path);

  // A first stop signal came (the command should stop at its next safe point).
  bool requested() const;
};

}  // namespace attn
