// A user module's peers (--peer-module FILE.py) beside our variants on `attn-bench run` and in
// `attn-tune tune`: the batch is dumped once with the oracle's output, and each run of a peer (one
// config of its declared space) goes through the peer runner process, which verifies and times it
// as `attn-bench peers` does (tools/peers, docs/user-kernels.md).
//
// For the tuner a module's peer is a Variant (ModulePeerVariant: its name, its declared space as
// the axes) whose cases a ModulePeerEvaluator runs: one config, under the rung's policy, in a
// runner process of its own with the peer deadline, so a config that hangs or kills the runner is
// recorded (timed_out, crashed) and the sweep goes on. The module's declines(batch, config) is the
// peer's gate and runs in the runner (a declined config is recorded unsupported), so the variant
// itself takes every feature of the batch it was made for.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "apps/peer_runner.hpp"
#include "apps/peer_runner_setup.hpp"
#include "kernels/registry.hpp"
#include "measure/timing_policy.hpp"
#include "tuner/tune_sweep.hpp"
#include "workloads/batch.hpp"

namespace attn {

// The runner ready to run module peers on one batch: the dump written under `folder`/dump.
class ModulePeerRunner {
 public:
  struct Options {
    std::string python;
    std::filesystem::path script;
    std::vector<std::string> modules;  // absolute paths (checked_peer_modules)
    std::filesystem::path folder;      // the work folder: the dump, the results files
    std::string device = "0";          // the runner's --device: an ordinal or "cpu"
    double deadline_s = 120;           // per run; <= 0: none
    std::string backend;               // "cuda" or "cpu", of the rows the runner cannot write
  };
  // Writes the dump of `batch` with `reference` (the oracle `oracle`'s output,
  // [total_q, num_q_heads, head_dim]) that every run reads and is verified against.
  ModulePeerRunner(Options options, const Batch& batch, const std::vector<float>& reference,
                   const std::string& oracle);
  // The runs `units` under `policy`; each row is a Measurement whose family, bytes and flops are
  // filled from `registry`'s model of the batch (apply_peer_work). A runner that measured another
  // batch is an internal error.
  PeerRunnerOutcome run(
      const std::vector<std::string>& units, const MeasurePolicy& policy, const Registry& registry,
      std::function<bool()> stop_requested = [] { return false; }) const;

 private:
  Options options_;
  const Batch& batch_;
  std::filesystem::path dump_;
};

// The runs of the module peers (peer.user.*) among `listed`, in the runner's order.
std::vector<std::string> module_peer_units(const std::vector<RunnerPeer>& listed);

// One variant per module peer among `listed` (peer.user.<module>.<name>), for a sweep over `batch`:
// its axes are the peer's declared space, its family and work those of `registry`'s model of the
// batch, its backend the peer's device.
std::vector<std::unique_ptr<Variant>> module_peer_variants(const std::vector<RunnerPeer>& listed,
                                                           const Batch& batch,
                                                           const Registry& registry);

// A module peer's unit for one config: "<name>@<config key>", or the name without axes.
std::string module_peer_unit(const std::string& name, const KernelConfig& config);

// The sweep's CaseEvaluator for module peers: each case one runner process on one config. Once
// `stop_requested` says so (Ctrl-C), the runner of the case in flight is stopped and the case comes
// back with stop reason "interrupted": cut short, not a result.
class ModulePeerEvaluator : public CaseEvaluator {
 public:
  ModulePeerEvaluator(
      const ModulePeerRunner& runner, const Registry& registry,
      std::function<bool()> stop_requested = [] { return false; })
      : runner_(runner), registry_(registry), stop_requested_(std::move(stop_requested)) {}
  Measurement evaluate(const Variant& variant, const KernelConfig& config,
                       const MeasurePolicy& policy) override;

 private:
  const ModulePeerRunner& runner_;
  const Registry& registry_;
  std::function<bool()> stop_requested_;
};

}  // namespace attn
