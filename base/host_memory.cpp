#include "base/host_memory.hpp"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>

namespace attn {

namespace {

int64_t read_limit(const std::string& file) {
  std::ifstream in(file);
  std::string text;
  if (!(in >> text) || text == "max") return 0;  // cgroup v2 writes "max" for no limit
  try {
    const long long value = std::stoll(text);
    return value > 0 && value < (1LL << 62) ? int64_t(value) : 0;  // v1: ~2^63 for no limit
  } catch (const std::exception&) {
    return 0;
  }
}

// The memory limit of this process's cgroup (v2 memory.max, v1 memory.limit_in_bytes), or 0.
int64_t cgroup_memory_limit() {
  std::ifstream cgroup("/proc/self/cgroup");
  std::string line;
  while (std::getline(cgroup, line)) {
    if (line.rfind("0::", 0) == 0) {
      const std::string path = line.substr(3);
      if (int64_t v2 = read_limit("/sys/fs/cgroup" + (path == "/" ? "" : path) + "/memory.max")) {
        return v2;
      }
    }
    const size_t memory = line.find(":memory:");
    if (memory != std::string::npos) {
      const std::string path = line.substr(memory + 8);
      const std::string v1 = "/sys/fs/cgroup/memory" + (path == "/" ? "" : path);
      if (int64_t limit = read_limit(v1 + "/memory.limit_in_bytes")) return limit;
    }
  }
  return 0;
}

}  // namespace

int64_t host_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGESIZE);
  int64_t physical = pages > 0 && page_size > 0 ? int64_t(pages) * int64_t(page_size) : 0;
  const int64_t limit = cgroup_memory_limit();
  if (limit > 0 && (physical == 0 || limit < physical)) physical = limit;
  return physical;
}

int64_t default_host_memory_budget() {
  const int64_t memory = host_memory_bytes();
  if (memory <= 0) return kMaxDefaultHostMemoryBudget;
  return std::min(memory / 2, kMaxDefaultHostMemoryBudget);
}

}  // namespace attn
