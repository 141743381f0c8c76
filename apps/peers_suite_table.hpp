// The table that ends `attn-bench peers --suite NAME`: one row per workload with our fastest
// passed variant (its name and median), each peer's median or what became of it (unsupported,
// incorrect, timed_out, ...), and the fastest passed peer's median over ours. Each workload's own
// table, printed as it ran, has the detail (spread, verification, reasons).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "measure/bench_run.hpp"

namespace attn {

// One workload's rows as `attn-bench peers` recorded them in run `run_id`: ours and the peers'.
struct PeersSuiteWorkload {
  std::string workload;
  int64_t run_id = 0;
  std::vector<BenchRow> rows;
};

// The table, a note on what its ratio means, and a last line that counts the workloads with a
// passed variant of ours and with a passed peer.
void print_peers_suite_table(const std::string& suite,
                             const std::vector<PeersSuiteWorkload>& workloads, std::ostream& out);

}  // namespace attn
