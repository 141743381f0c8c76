// The peer runner (tools/peers/run_peers.py) under a deadline per peer: `attn-bench peers` starts
// it on the chosen peers and watches its results file, where a line appears as each peer ends. A
// peer still running `deadline_s` after the previous line (its imports, compile and timing
// included) is out of time: the runner's process group is stopped (SIGTERM, then SIGKILL after
// 3 s), the peer gets an out-of-time row, and the runner starts again on the peers after it. So
// one slow peer (a FlexAttention compile of several minutes) costs its deadline, not the run.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "measure/peer_results.hpp"

namespace attn {

// A run of the runner (`run_peers.py --list` prints one per line): a peer's name, or for one config
// of a user module's peer "<name>@<config key>" (peer.user.mine.decode@block_n=64,num_warps=4).
std::string peer_unit_name(const std::string& unit);
std::string peer_unit_config(const std::string& unit);  // "" for a peer without configs

struct PeerRunnerRequest {
  // The runner's command line without --units and --out: python, script, dump, options.
  std::vector<std::string> argv;
  std::vector<std::string> peers;  // exact runs (units), in the runner's order
  std::string folder;              // where the results files go (peers-1.jsonl, peers-2.jsonl...)
  double deadline_s = 120;         // per peer; <= 0: none
  std::string backend, policy;     // of the out-of-time rows ("cuda", "confirm")
  // Asked every 100 ms; true stops the runner at once (a stop signal came).
  std::function<bool()> stop_requested = [] { return false; };
};

struct PeerRunnerOutcome {
  std::optional<PeerResultsHeader> header;  // of the first results file
  std::vector<PeerRow> rows;                // every run asked for that ended or ran out of time
  std::vector<std::string> timed_out;       // the runs that ran out of time
  std::string failure;                      // the runner failed (exit code, no start): why
  bool stopped = false;                     // stop_requested said so
};

PeerRunnerOutcome run_peers_with_deadlines(const PeerRunnerRequest& request);

}  // namespace attn
