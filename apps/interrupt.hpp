// Ctrl-C in the long-running commands (`attn-bench run`, `attn-tune tune`): the first SIGINT asks
// the command to stop at its next safe point (between cases), finish what is in flight, record it,
// print its summary and exit 130; a second SIGINT exits at once with 130. Either way the database
// stays consistent: every write is a transaction, so an exit in the middle of one loses only that
// transaction (as a kill -9 would), and the run row keeps status 'running'.
#pragma once

namespace attn {

// Installs the handler for its lifetime and restores the previous one after. One at a time.
class InterruptHandler {
 public:
  // `program` ("attn-bench", "attn-tune") starts the lines the handler writes to stderr.
  explicit InterruptHandler(const char* program);
  ~InterruptHandler();
  InterruptHandler(const InterruptHandler&) = delete;
  InterruptHandler& operator=(const InterruptHandler&) = delete;

  // A first Ctrl-C came (the command should stop at its next safe point).
  bool requested() const;
};

}  // namespace attn
