// Variant: one implementation of one kernel family (e.g. paged_decode.sm80_simt) behind a common
// interface. The registry (registry.hpp) holds every variant, filled by one explicit function.
//
// The life of one measurement: check(batch, config, target) says yes or why not; prepare()
// compiles through the JIT, allocates scratch and binds the problem's buffers, returning a
// Launcher; the timing core calls Launcher::launch() as often as it needs.
//
// check() is the one gate (docs/architecture.md, "The feature contract"): first the batch's
// features against the variant's declaration (features(): an allow-list, so a feature the variant
// does not name is declined), then the variant's own rules for the config (supports(): shared
// memory, registers, tile divisibility, target arch, limits of its parameter structs).
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/family.hpp"
#include "base/kernel_config.hpp"
#include "kernels/exec_context.hpp"
#include "kernels/feature_set.hpp"
#include "kernels/problem.hpp"
#include "kernels/support.hpp"
#include "kernels/target.hpp"
#include "workloads/batch.hpp"
#include "workloads/traffic.hpp"

namespace attn {

// Checks every CUDA variant built on mma.sync and cp.async makes first: a CUDA target of compute
// capability 8.0 or newer. `needs` names what the kernel uses (for the message).
Support supports_sm80_target(const Target& target, const std::string& needs);
// The same for the Hopper variants (TMA, mbarrier transactions, wgmma): compute capability 9.0
// or newer.
Support supports_sm90_target(const Target& target, const std::string& needs);

// A CTA's dynamic shared memory fits the target's opt-in per-block limit (when it is known).
Support supports_shared_bytes(long long shared_bytes, const Target& target);
// The launch limits a split-KV decode variant checks last: supports_shared_bytes, and num_splits
// from 0 to max_splits, where 0 means what `zero_means` says (the message's words: "auto",
// "planned").
Support supports_split_launch(long long shared_bytes, int num_splits, int max_splits,
                              const Target& target, const std::string& zero_means);

// The config names exactly `axes` (a partial config, or one of another variant, is refused).
Support config_has_exactly(const KernelConfig& config, const std::vector<std::string>& axes,
                           const std::string& variant);

// Minimum memory traffic and useful FLOPs of a problem, counted from actual lengths and the masks
// (workloads/traffic.hpp says what the bytes count).
struct Work {
  double bytes = 0;         // logical minimum: shared prefix rows once per sequence
  double unique_bytes = 0;  // unique minimum: each row in memory once
  double flops = 0;         // 2 x (head_dim + v_head_dim) x visible (q head, query, key) pairs
                            // (mla: v_head_dim is kv_lora_rank)
};

// The Work of a kernel that reads K and V from `storage`: minimum_traffic's logical and unique
// bytes, and useful_flops: a multiply-add per (q head, visible key, dim) for Q.K over head_dim and
// for P.V over v_head_dim (mla: kv_lora_rank; visible_pairs: the same visibility the traffic
// counts).
Work minimum_work(const Batch& batch, KvStorage storage);

// A problem bound to a config, ready to run. launch() enqueues the work (CUDA: on the stream the
// variant was prepared with; CPU: runs it to completion).
class Launcher {
 public:
  virtual ~Launcher() = default;
  virtual void launch() = 0;
  // What the variant's planner chose for this problem beyond the config (how the work is dealt to
  // CTAs), recorded with the measurement; empty when it plans nothing.
  virtual std::string plan() const { return {}; }
};

class Variant {
 public:
  virtual ~Variant() = default;

  virtual std::string name() const = 0;  // "<family>.<variant>"
  virtual Family family() const = 0;
  virtual Backend backend() const = 0;
  virtual std::string summary() const = 0;  // one line for `attn-bench list`

  // Every batch feature this variant implements (workloads/batch_features.hpp); it is declined
  // for any other a batch uses.
  virtual FeatureSet features() const = 0;
  // Whether this variant runs `batch` with `config` on `target`, before anything is compiled:
  // check_features(features(), batch_features(batch)), then supports(). Every caller asks this,
  // never supports().
  Support check(const Batch& batch, const KernelConfig& config, const Target& target) const;
  // The same with the batch's features computed once by the caller (batch_features(batch)), for
  // a loop over many configs of one batch.
  Support check(const Batch& batch, const BatchFeatures& used, const KernelConfig& config,
                const Target& target) const;

  // The tunable axes and the values worth trying for this batch on this target.
  virtual std::vector<ConfigAxis> space(const Batch& batch, const Target& target) const = 0;
  virtual KernelConfig default_config(const Batch& batch, const Target& target) const = 0;
  // The JIT programs this config needs (CUDA variants); compiling them is prepare()'s first step.
  virtual std::vector<JitProgram> programs(const Batch& batch, const KernelConfig& config,
                                           const Target& target) const {
    return {};
  }
  virtual std::unique_ptr<Launcher> prepare(Problem& problem, const KernelConfig& config,
                                            ExecContext& context) const = 0;
  virtual Work work(const Batch& batch) const = 0;

  // "<name>.<config label>", e.g. paged_decode.sm80_simt.h4.s0.t64.w4; the name alone when the
  // variant has no tunables.
  std::string full_name(const KernelConfig& config) const {
    const std::string label = config.label();
    return label.empty() ? name() : name() + "." + label;
  }
  // prepare() then one launch.
  void run(Problem& problem, const KernelConfig& config, ExecContext& context) const {
    prepare(problem, config, context)->launch();
  }

 protected:
  // The variant's own rules, for a batch whose features it implements (check() has checked them):
  // the config's validity (the family traits), the target, and limits of the kernel's parameters
  // (a GQA group that fits one tile, 32-bit offsets). Never a list of features it refuses: those
  // belong in features().
  virtual Support supports(const Batch& batch, const KernelConfig& config,
                           const Target& target) const = 0;

 private:
  // features(), built once: a search checks thousands of configs against it.
  const FeatureSet& declared_features() const;
  mutable std::once_flag features_once_;
  mutable FeatureSet features_;
};

}  // namespace attn
