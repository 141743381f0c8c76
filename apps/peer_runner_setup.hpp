// What a command does before it starts the peer runner (tools/peers/run_peers.py): pick the
// interpreter, make a work folder, write the runner out of the binary, check the --peer-module
// files, and ask the runner which runs it knows (`--list-json`), which imports the modules. All of
// it before any GPU work or database write, so a module that raises on import or breaks the
// protocol is invalid input (exit code 3) and an interpreter that cannot start the runner is an
// environment error (exit code 4). `attn-bench peers`, `attn-bench run --peer-module` and
// `attn-tune tune --peer-module` share it.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "workloads/batch.hpp"

namespace attn {

// What a batch dump's index says about its reference_out besides the tensor (docs/batch-dump.md):
// the oracle that computed it ("cpu_reference", "gpu_naive_fp32", "naive_dense") and the rule and
// tolerance outputs of the batch's dtype are verified with (measure/verify.hpp), for the peer
// runner.
nlohmann::json dump_verification_fields(const Batch& batch, const std::string& oracle);

// --python, else $ATTN_PEERS_PYTHON, else python3 on $PATH.
std::string peer_runner_python(const std::string& flag);

// Adds the repeatable --peer-module FILE.py option to a command.
void add_peer_module_flag(CLI::App* cmd, std::vector<std::string>& modules);

// A child process with argv only (no shell), found on $PATH; its output goes to `out_path` (or
// ours when empty). Returns the exit code; a process that cannot start is an EnvironmentError.
int run_child(const std::vector<std::string>& argv, const std::string& out_path = {});

// A folder of our own for the dump and the runner: `keep` (kept, created if needed), else a fresh
// temporary one removed at the end.
class WorkFolder {
 public:
  explicit WorkFolder(const std::string& keep = {});
  ~WorkFolder();
  WorkFolder(const WorkFolder&) = delete;
  WorkFolder& operator=(const WorkFolder&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  bool keep_ = false;
};

// The runner script: `runner_dir`'s run_peers.py (a tools/peers folder; UsageError without one),
// else the copy embedded in this binary written under `folder`.
std::filesystem::path peer_runner_script(const std::string& runner_dir,
                                         const std::filesystem::path& folder);

// The --peer-module files as absolute paths (the runner runs in another folder), each checked to
// be a readable regular .py file; InputError (exit 3) otherwise.
std::vector<std::string> checked_peer_modules(const std::vector<std::string>& modules);

// One run the runner knows: a peer, or one config of a user module's peer.
struct RunnerPeer {
  std::string unit;    // what --units names: the name, or "<name>@<config key>"
  std::string name;    // peer.<library>.<kernel>, peer.user.<module>.<name>
  std::string device;  // "cuda" or "cpu"
  std::string config;  // the config key ("block_n=64,num_warps=4"), "" for a peer without one
  std::string summary;
};

// `run_peers.py --list-json` with the modules. A module the runner refuses is an InputError
// naming the file and the problem; a runner that does not start an EnvironmentError.
std::vector<RunnerPeer> list_runner_peers(const std::string& python,
                                          const std::filesystem::path& script,
                                          const std::filesystem::path& folder,
                                          const std::vector<std::string>& peer_modules);

}  // namespace attn
