#include "tuner/worker_serve.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <iterator>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/errors.hpp"
#include "results/measurement_json.hpp"
#include "tuner/worker_protocol.hpp"

namespace attn {

namespace {

volatile std::sig_atomic_t g_stop_requested = 0;

extern "C" void on_stop_request(int) {
  g_stop_requested = 1;
}

bool send_all(int fd, const std::string& line) {
  const std::string text = line + "\n";
  size_t sent = 0;
  while (sent < text.size()) {
    const ssize_t n = ::send(fd, text.data() + sent, text.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    sent += size_t(n);
  }
  return true;
}

// False at EOF (the orchestrator is done).
bool read_line(int fd, std::string& buffer, std::string& line) {
  for (;;) {
    if (auto pos = buffer.find('\n'); pos != std::string::npos) {
      line = buffer.substr(0, pos);
      buffer.erase(0, pos + 1);
      return true;
    }
    char chunk[65536];
    const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    buffer.append(chunk, size_t(n));
  }
}

const char* const kFaultKinds[] = {"hang", "abort", "segv", "exit", "sleep", "sticky"};

void meet_fault(const std::string& kind) {
  if (kind == "hang") {
    for (;;) ::pause();
  }
  if (kind == "abort") std::abort();
  if (kind == "segv") ::raise(SIGSEGV);
  if (kind == "exit") std::_Exit(3);
  if (kind == "sleep") std::this_thread::sleep_for(std::chrono::milliseconds(1200));
}

// The fault's pattern is in the request's "full name policy" or its config key.
bool matches(const WorkerFault& f, const std::string& name, const std::string& key) {
  return name.find(f.pattern) != std::string::npos || key.find(f.pattern) != std::string::npos;
}

// What a sticky CUDA error makes of a case, injected (the evaluator's own is the same shape).
Measurement injected_sticky(const Variant& variant, const KernelConfig& config,
                            const MeasurePolicy& policy) {
  Measurement m = case_measurement(variant, config, policy);
  m.disposition = Disposition::crashed;
  m.reason =
      "sticky CUDA error (the context is lost): CUDA driver error 700 "
      "(CUDA_ERROR_ILLEGAL_ADDRESS), injected by ATTN_TUNE_WORKER_FAULTS";
  return m;
}

}  // namespace

bool worker_stop_requested() {
  return g_stop_requested != 0;
}

std::vector<WorkerFault> parse_worker_faults(const std::string& text) {
  std::vector<WorkerFault> faults;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find(';', start), text.size());
    const std::string entry = text.substr(start, end - start);
    start = end + 1;
    if (entry.empty()) continue;
    const size_t colon = entry.find(':');
    if (colon == std::string::npos) {
      throw UsageError("worker fault '" + entry + "': expected kind[@phase]:pattern");
    }
    std::string kind = entry.substr(0, colon);
    std::optional<EvalPhase> phase;
    bool at_startup = false;
    if (const size_t at = kind.find('@'); at != std::string::npos) {
      const std::string when = kind.substr(at + 1);
      at_startup = when == "startup";
      phase = eval_phase_from_string(when);
      if (!phase && !at_startup) {
        throw UsageError("worker fault '" + entry +
                         "': phase is startup, compile, verify or measure");
      }
      kind = kind.substr(0, at);
    }
    if (std::find(std::begin(kFaultKinds), std::end(kFaultKinds), kind) == std::end(kFaultKinds)) {
      throw UsageError("worker fault '" + entry +
                       "': kind is hang, abort, segv, exit, sleep or sticky");
    }
    if (kind == "sticky" && (phase || at_startup)) {
      throw UsageError("worker fault '" + entry + "': a sticky fault takes no phase");
    }
    faults.push_back({kind, phase, entry.substr(colon + 1), at_startup});
  }
  return faults;
}

void meet_startup_faults(const std::vector<WorkerFault>& faults, const std::string& workload) {
  for (const WorkerFault& f : faults) {
    if (f.at_startup && workload.find(f.pattern) != std::string::npos) meet_fault(f.kind);
  }
}

int serve_worker(int fd, const Registry& registry, Evaluator& evaluator,
                 const std::vector<WorkerFault>& faults) {
  // WorkerProcess set both before exec; again here for a worker started some other way.
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::signal(sig, SIG_IGN);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  struct sigaction stop {};
  stop.sa_handler = on_stop_request;
  sigemptyset(&stop.sa_mask);
  stop.sa_flags = SA_RESTART;  // the socket reads go on
  ::sigaction(SIGUSR1, &stop, nullptr);
  if (!send_all(fd, nlohmann::json{{"ready", true}}.dump())) return 0;
  std::string buffer, line;
  std::string lost;  // why this worker's CUDA context is unusable; it then serves nothing more
  while (read_line(fd, buffer, line)) {
    nlohmann::json answer;
    try {
      if (!lost.empty()) {
        throw EnvironmentError("this worker lost its CUDA context (" + lost +
                               ") and must not be given more cases");
      }
      const WorkerRequest request = decode_request(line);
      const Variant* variant = registry.find(request.variant);
      if (!variant) throw UsageError("no variant '" + request.variant + "'");
      const KernelConfig config = KernelConfig::from_key(request.config_key);
      const std::string name = variant->full_name(config) + " " + request.policy.name;
      std::optional<Measurement> injected;
      for (const WorkerFault& f : faults) {
        if (f.phase || f.at_startup || !matches(f, name, request.config_key)) continue;
        if (f.kind == "sticky") injected = injected_sticky(*variant, config, request.policy);
        meet_fault(f.kind);
      }
      const PhaseObserver on_phase = [&](EvalPhase phase) {
        if (!send_all(fd, encode_phase(phase))) std::_Exit(0);  // the orchestrator is gone
        for (const WorkerFault& f : faults) {
          if (f.phase == phase && matches(f, name, request.config_key)) meet_fault(f.kind);
        }
      };
      const Measurement m =
          injected ? *injected : evaluator.evaluate(*variant, config, request.policy, on_phase);
      answer = {{"measurement", measurement_to_json(m)}};
      if (injected) lost = m.reason;
      if (!evaluator.context_lost().empty()) lost = evaluator.context_lost();
      if (!lost.empty()) answer["sticky"] = lost;
    } catch (const std::exception& e) {
      answer = {{"error", e.what()}};
    }
    if (!send_all(fd, answer.dump())) break;
  }
  return 0;
}

}  // namespace attn
