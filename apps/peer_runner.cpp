#include "apps/peer_runner.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "base/errors.hpp"
#include "results/table.hpp"

extern char** environ;

namespace attn {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// The runner in a process group of its own, so that stopping it stops what it started too (the
// compile workers of torch.compile).
pid_t spawn_group(const std::vector<std::string>& argv) {
  std::vector<std::string> storage = argv;
  std::vector<char*> pointers;
  for (std::string& a : storage) pointers.push_back(a.data());
  pointers.push_back(nullptr);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  std::cout << std::flush;
  std::cerr << std::flush;
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, pointers[0], nullptr, &attributes, pointers.data(), environ);
  posix_spawnattr_destroy(&attributes);
  if (rc != 0) {
    throw EnvironmentError("cannot start '" + argv[0] + "': " + std::strerror(rc) +
                           " (--python names the interpreter; $ATTN_PEERS_PYTHON too)");
  }
  return pid;
}

// The exit code of a child that ended, or nullopt while it runs.
std::optional<int> reap(pid_t pid, bool wait) {
  int status = 0;
  pid_t got;
  while ((got = ::waitpid(pid, &status, wait ? 0 : WNOHANG)) < 0 && errno == EINTR) {
  }
  if (got == 0) return std::nullopt;
  if (got < 0) return 128;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

// SIGTERM to the group, SIGKILL after 3 s if the runner has not ended.
void stop_group(pid_t pid) {
  ::kill(-pid, SIGTERM);
  const auto give_up = Clock::now() + std::chrono::seconds(3);
  while (Clock::now() < give_up) {
    if (reap(pid, false)) {
      ::kill(-pid, SIGKILL);  // what it started and left behind
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(-pid, SIGKILL);
  reap(pid, true);
}

// Complete lines of the results file (the header is line 1); 0 while it is missing.
size_t complete_lines(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return 0;
  size_t lines = 0;
  char buffer[65536];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    for (std::streamsize i = 0; i < in.gcount(); ++i) lines += buffer[i] == '\n';
  }
  return lines;
}

// The runs from `from` on, one per line, for the runner's --units.
void write_units(const fs::path& path, const std::vector<std::string>& units, size_t from) {
  std::ofstream out(path, std::ios::binary);
  for (size_t i = from; i < units.size(); ++i) out << units[i] << "\n";
  out.close();
  if (!out) throw EnvironmentError("cannot write " + path.string());
}

PeerRow out_of_time_row(const std::string& unit, const PeerRunnerRequest& request) {
  PeerRow row;
  const std::string name = peer_unit_name(unit);
  // "peer.<library>.<kernel>"; a user module's peer is "peer.user.<module>.<name>".
  const bool user = name.rfind("peer.user.", 0) == 0;
  const size_t dot = name.find('.', user ? 10 : 5);
  row.library = name.substr(5, dot == std::string::npos ? std::string::npos : dot - 5);
  Measurement& m = row.measurement;
  m.variant = name;
  m.config_key = peer_unit_config(unit);
  m.disposition = Disposition::timed_out;
  m.reason = format(
      "out of time: still running after its deadline of %.0f s (imports and "
      "compile included; --peer-deadline sets it)",
      request.deadline_s);
  m.backend = request.backend;
  m.policy = request.policy;
  m.config_json = nlohmann::json{{"peer_library", row.library}}.dump();
  return row;
}

}  // namespace

std::string peer_unit_name(const std::string& unit) {
  return unit.substr(0, unit.find('@'));
}

std::string peer_unit_config(const std::string& unit) {
  const size_t at = unit.find('@');
  return at == std::string::npos ? std::string() : unit.substr(at + 1);
}

PeerRunnerOutcome run_peers_with_deadlines(const PeerRunnerRequest& request) {
  PeerRunnerOutcome outcome;
  size_t next = 0;  // the first peer not yet ended
  for (int attempt = 1; next < request.peers.size(); ++attempt) {
    const fs::path results =
        fs::path(request.folder) / ("peers-" + std::to_string(attempt) + ".jsonl");
    const fs::path units = fs::path(request.folder) / ("units-" + std::to_string(attempt) + ".txt");
    write_units(units, request.peers, next);
    std::vector<std::string> argv = request.argv;
    argv.insert(argv.end(), {"--out", results.string(), "--units", units.string()});
    const pid_t pid = spawn_group(argv);
    size_t lines = 0;
    Clock::time_point since = Clock::now();  // the current peer's start (or the runner's)
    std::optional<int> code;
    bool out_of_time = false;
    while (!(code = reap(pid, false))) {
      if (request.stop_requested()) {
        stop_group(pid);
        outcome.stopped = true;
        break;
      }
      const size_t now_lines = complete_lines(results);
      if (now_lines != lines) {
        lines = now_lines;
        since = Clock::now();
      }
      const double elapsed = std::chrono::duration<double>(Clock::now() - since).count();
      if (request.deadline_s > 0 && elapsed > request.deadline_s) {
        stop_group(pid);
        out_of_time = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    // What this runner recorded before it ended or was stopped.
    size_t recorded = 0;
    if (complete_lines(results) >= 1) {
      PeerResults partial = read_peer_results(results.string());
      if (!outcome.header) outcome.header = partial.header;
      recorded = partial.rows.size();
      for (PeerRow& row : partial.rows) outcome.rows.push_back(std::move(row));
    }
    next += recorded;
    if (outcome.stopped) return outcome;
    if (out_of_time) {
      if (lines == 0) {
        outcome.failure = format("the peer runner did not start within %.0f s (no results header)",
                                 request.deadline_s);
        return outcome;
      }
      const std::string& late = request.peers.at(next);
      std::cerr << "attn-bench: " << late << " ran out of its "
                << format("%.0f", request.deadline_s)
                << " s deadline; stopped it, going on with the peers after it\n";
      outcome.rows.push_back(out_of_time_row(late, request));
      outcome.timed_out.push_back(late);
      ++next;
      continue;
    }
    if (*code != 0) {
      outcome.failure = "the peer runner exited with " + std::to_string(*code) +
                        (outcome.rows.empty() ? " and recorded no peer" : "");
      return outcome;
    }
    if (next < request.peers.size()) {
      outcome.failure = "the peer runner ended without a result for " + request.peers[next];
      return outcome;
    }
  }
  return outcome;
}

}  // namespace attn
