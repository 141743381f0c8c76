// The worker's side of tuner/worker_protocol.hpp: answer requests on one socket until the
// orchestrator closes it. The worker ignores SIGINT, SIGTERM and SIGHUP (Ctrl-C in the terminal,
// `timeout` and a closed terminal reach the whole process group; the orchestrator finishes the
// case in flight and then stops the worker) and dies with its parent (PR_SET_PDEATHSIG, set by
// tuner/worker_process.hpp before exec), so a `kill -9` of the orchestrator leaves no worker; when
// the orchestrator closes the socket, the worker exits. SIGUSR1 is the orchestrator's stop request
// (Ctrl-C seen there): from then on worker_stop_requested() is true, and an evaluator whose
// sampling hooks ask it stops after the sample in hand (the case's stop reason "interrupted").
// It reports the start of each evaluation phase, and after a sticky CUDA error (the evaluator's
// context is lost) it says so with the answer and refuses every later request with an error, so an
// orchestrator that reused it would stop instead of recording wrong results.
//
// Test-only fault injection, so the isolation is testable on a CPU: $ATTN_TUNE_WORKER_FAULTS holds
// `kind[@phase]:pattern` entries separated by `;`, kind one of
//   hang (sleep forever), abort (SIGABRT), segv (SIGSEGV), exit (exit status 3),
//   sleep (1.2 s, then go on), sticky (answer `crashed` with an injected sticky CUDA error, as a
//   kernel that wrote out of bounds would; no phase).
// A request whose "full name, space, policy name" (`paged_decode.cpu_reference screen`) or config
// key contains the pattern meets that fault: before it is evaluated, or with `@compile`, `@verify`
// or `@measure` when that phase starts. `kind@startup:pattern` is met instead while the worker
// starts, before it sets up its batch, when its workload argument contains the pattern (a worker
// that hangs or dies before it is ready).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kernels/registry.hpp"
#include "measure/evaluator.hpp"
#include "measure/phase_deadlines.hpp"

namespace attn {

struct WorkerFault {
  std::string kind;                // hang, abort, segv, exit, sleep, sticky
  std::optional<EvalPhase> phase;  // none: before the evaluation
  std::string pattern;
  bool at_startup = false;  // `@startup`: met while the worker starts (no phase, not sticky)
};
// Throws UsageError on an unknown kind or phase, a sticky fault with a phase, or an entry
// without ':'.
std::vector<WorkerFault> parse_worker_faults(const std::string& text);

// Meets the `@startup` faults whose pattern `workload` (the worker's argument) contains.
void meet_startup_faults(const std::vector<WorkerFault>& faults, const std::string& workload);

// True once this worker has been sent SIGUSR1 (serve_worker installs the handler before it says
// ready); for the evaluator's SamplingHooks::stop_requested.
bool worker_stop_requested();

// Sends {"ready": true}, then serves requests until EOF; returns the process exit code (0).
int serve_worker(int fd, const Registry& registry, Evaluator& evaluator,
                 const std::vector<WorkerFault>& faults);

}  // namespace attn
