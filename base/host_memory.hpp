// How much host memory this machine has, and the default budget a command may plan to use
// (docs/workload.md, "Memory"): half of it, at most 16 GiB.
#pragma once

#include <cstdint>

namespace attn {

inline constexpr int64_t kMaxDefaultHostMemoryBudget = int64_t(16) << 30;

// Physical memory, or the memory limit of this process's cgroup when that is lower (a container);
// 0 when neither can be read.
int64_t host_memory_bytes();

// Half of host_memory_bytes(), at most kMaxDefaultHostMemoryBudget (that, when unknown).
int64_t default_host_memory_budget();

}  // namespace attn
