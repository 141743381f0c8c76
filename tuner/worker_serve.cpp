#include "tuner/worker_serve.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "base/errors.hpp"
#include "results/measurement_json.hpp"
#include "tuner/worker_protocol.hpp"

namespace attn {

namespace {

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

void meet_fault(const std::string& kind) {
  if (kind == "hang") {
    for (;;) ::pause();
  }
  if (kind == "abort") std::abort();
  if (kind == "segv") ::raise(SIGSEGV);
  if (kind == "exit") std::_Exit(3);
}

}  // namespace

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
      throw UsageError("worker fault '" + entry + "': expected kind:pattern");
    }
    WorkerFault f{entry.substr(0, colon), entry.substr(colon + 1)};
    if (f.kind != "hang" && f.kind != "abort" && f.kind != "segv" && f.kind != "exit") {
      throw UsageError("worker fault '" + entry + "': kind is hang, abort, segv or exit");
    }
    faults.push_back(std::move(f));
  }
  return faults;
}

int serve_worker(int fd, const Registry& registry, CaseEvaluator& evaluator,
                 const std::vector<WorkerFault>& faults) {
  ::signal(SIGINT, SIG_IGN);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() == 1) return 0;  // the orchestrator died before the line above
  if (!send_all(fd, nlohmann::json{{"ready", true}}.dump())) return 0;
  std::string buffer, line;
  while (read_line(fd, buffer, line)) {
    nlohmann::json answer;
    try {
      const WorkerRequest request = decode_request(line);
      const Variant* variant = registry.find(request.variant);
      if (!variant) throw UsageError("no variant '" + request.variant + "'");
      const KernelConfig config = KernelConfig::from_key(request.config_key);
      const std::string name = variant->full_name(config) + " " + request.policy.name;
      for (const WorkerFault& f : faults) {
        if (name.find(f.pattern) != std::string::npos ||
            request.config_key.find(f.pattern) != std::string::npos) {
          meet_fault(f.kind);
        }
      }
      answer = {{"measurement",
                 measurement_to_json(evaluator.evaluate(*variant, config, request.policy))}};
    } catch (const std::exception& e) {
      answer = {{"error", e.what()}};
    }
    if (!send_all(fd, answer.dump())) break;
  }
  return 0;
}

}  // namespace attn
