// Which process owns a row of the results database (a run, the claim on a config), so that
// another process can tell an owner that is still working from one that is gone: killed, crashed,
// or its pid reused by an unrelated process. A pid alone is not an identity (pids are reused), so
// the identity adds the process's start time as /proc/PID/stat gives it (clock ticks since boot)
// and the boot id, which together no other process on the host can share.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

namespace attn {

struct ProcessIdentity {
  std::string host;  // gethostname()
  int64_t pid = 0;
  std::string start;  // "<start time in clock ticks since boot>@<boot id>"; empty when unknown
};

// This process.
ProcessIdentity this_process();

// The host name, as gethostname() gives it ("unknown-host" if it cannot).
std::string this_host_name();

// The `start` of the live process `pid` on this host; nullopt when there is no such process (or
// only a zombie, which runs nothing).
std::optional<std::string> process_start(int64_t pid);

enum class OwnerState {
  alive,     // on this host, and the process with that pid started when the owner did
  gone,      // on this host, and no process has that pid, or another process does
  elsewhere  // another host's (or an identity without a pid): nothing here can tell
};
std::string to_string(OwnerState state);

OwnerState owner_state(const ProcessIdentity& owner);

}  // namespace attn
