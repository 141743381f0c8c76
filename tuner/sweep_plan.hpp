// The plan of a sweep split over the n tasks of a job array (`attn-tune plan`): every config of
// every workload's pruned space gets an estimated cost (tuner/sweep_cost.hpp) and a shard, so that
// the shards cost about the same rather than hold the same number of configs. The result is the
// shard map the tasks read (`attn-tune tune --shard i/n --shard-map FILE`, tuner/shard_map.hpp).
//
// The balancing deals the configs out largest estimate first, each to the shard with the least
// estimated cost so far (ties: the lower shard; equal estimates keep the order of workloads,
// variants and configs). It is deterministic, and its largest shard is within 4/3 of the best
// split's (Graham's bound for longest-processing-time-first).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/target.hpp"
#include "kernels/variant.hpp"
#include "results/store.hpp"
#include "tuner/search_space.hpp"
#include "tuner/shard_map.hpp"
#include "tuner/strategy.hpp"
#include "workloads/batch.hpp"

namespace attn {

// The shard of each cost, in the order given: largest first to the least loaded shard.
std::vector<uint64_t> balance_by_cost(const std::vector<double>& costs, uint64_t shards);

// Recorded launch times, microseconds, by (workload hash, variant, config key): the latest passed
// measurement of each, any device and policy.
using LaunchTimes = std::map<std::tuple<std::string, std::string, std::string>, double>;
LaunchTimes recorded_launch_times(const Store& store, const std::vector<std::string>& hashes);

struct SweepPlanRequest {
  std::vector<const Batch*> batches;     // the workloads of the sweep
  std::vector<const Variant*> variants;  // those it tunes (all of `target`'s backend)
  Target target;                         // what their spaces are pruned for
  std::vector<AxisOverride> overrides;   // -a axis=v1,v2
  std::string strategy = "halving";
  Budget budget;  // per variant and shard, as `tune` takes it
  uint64_t shards = 1;
  const LaunchTimes* history = nullptr;  // recorded launch times; none: the model alone
};

// One variant on one workload in the plan.
struct PlannedSpace {
  std::string workload, workload_hash, variant;
  size_t configs = 0;
  size_t recorded = 0;  // configs whose launch time came from the history
  double seconds = 0;   // estimated, all configs
};

struct SweepPlan {
  ShardMap map{1};
  std::vector<PlannedSpace> spaces;
  std::vector<size_t> shard_configs;  // by shard
  std::vector<double> shard_seconds;  // by shard, estimated
  // The largest shard's estimate had the configs been split by the hash rule of --shard alone.
  double hash_largest_seconds = 0;
  size_t configs() const;
  double seconds() const;
};

// An estimate as the plan prints it: "850 ms", "12.3 s", "4.2 min", "3.1 h".
std::string estimate_text(double seconds);

// Throws UsageError when no config survives pruning, or there are more shards than configs.
SweepPlan plan_sweep(const SweepPlanRequest& request);

// plan_sweep one workload at a time, so that the batches of a sweep of many (a suite) need not all
// be in memory at once: add() each, then finish(). The request's batches are not used.
class SweepPlanner {
 public:
  explicit SweepPlanner(SweepPlanRequest request);
  // Every config of the workload's spaces, with its estimate.
  void add(const Batch& batch);
  // The split; throws as plan_sweep does.
  SweepPlan finish() const;

 private:
  SweepPlanRequest request_;
  std::vector<std::string> workloads_;
  std::vector<ShardMapEntry> entries_;
  std::vector<PlannedSpace> spaces_;
};

}  // namespace attn
