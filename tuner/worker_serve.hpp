// The worker's side of tuner/worker_protocol.hpp: answer requests on one socket until the
// orchestrator closes it. The worker ignores SIGINT (Ctrl-C in the terminal reaches the whole
// process group; the orchestrator finishes the case in flight and then stops the worker) and asks
// the kernel to kill it when its parent dies, so a `kill -9` of the orchestrator leaves no worker.
//
// Test-only fault injection, so the isolation is testable on a CPU: $ATTN_TUNE_WORKER_FAULTS holds
// `kind:pattern` entries separated by `;`, kind one of hang (sleep forever), abort (SIGABRT),
// segv (SIGSEGV), exit (exit status 3). A request whose "full name, space, policy name"
// (`paged_decode.cpu_reference screen`) or config key contains the pattern meets that fault
// instead of being evaluated.
#pragma once

#include <string>
#include <vector>

#include "kernels/registry.hpp"
#include "tuner/tune_sweep.hpp"

namespace attn {

struct WorkerFault {
  std::string kind;  // hang, abort, segv, exit
  std::string pattern;
};
// Throws UsageError on an unknown kind or an entry without ':'.
std::vector<WorkerFault> parse_worker_faults(const std::string& text);

// Sends {"ready": true}, then serves requests until EOF; returns the process exit code (0).
int serve_worker(int fd, const Registry& registry, CaseEvaluator& evaluator,
                 const std::vector<WorkerFault>& faults);

}  // namespace attn
