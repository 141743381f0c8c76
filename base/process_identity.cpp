#include "base/process_identity.hpp"

#include <unistd.h>

#include <fstream>
#include <sstream>

namespace attn {

namespace {

std::string boot_id() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

}  // namespace

std::string this_host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "unknown-host";
  return name;
}

std::optional<std::string> process_start(int64_t pid) {
  if (pid <= 0) return std::nullopt;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return std::nullopt;
  // "pid (comm) state ppid ... starttime ...": comm may hold spaces and parentheses, so the fields
  // are counted from the last ')'. After it come field 3 (state) onwards; starttime is field 22.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(stat.substr(close + 1));
  std::string field, state, start;
  for (int number = 3; number <= 22 && fields >> field; ++number) {
    if (number == 3) state = field;
    if (number == 22) start = field;
  }
  if (start.empty() || state == "Z" || state == "X") return std::nullopt;
  return start + "@" + boot_id();
}

ProcessIdentity this_process() {
  const int64_t pid = ::getpid();
  return {this_host_name(), pid, process_start(pid).value_or("")};
}

std::string to_string(OwnerState state) {
  switch (state) {
    case OwnerState::alive:
      return "alive";
    case OwnerState::gone:
      return "gone";
    case OwnerState::elsewhere:
      return "elsewhere";
  }
  return "?";
}

OwnerState owner_state(const ProcessIdentity& owner) {
  if (owner.pid <= 0 || owner.host != this_host_name()) return OwnerState::elsewhere;
  const std::optional<std::string> start = process_start(owner.pid);
  if (!start) return OwnerState::gone;
  // An owner recorded without a start time (it could not read /proc) is taken at its pid.
  return owner.start.empty() || *start == owner.start ? OwnerState::alive : OwnerState::gone;
}

}  // namespace attn
