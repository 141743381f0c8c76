#include "tuner/sweep_plan.hpp"

#include <algorithm>
#include <numeric>

#include "base/errors.hpp"
#include "results/table.hpp"
#include "tuner/shard.hpp"
#include "tuner/sweep_cost.hpp"

namespace attn {

namespace {

// What makes two JIT programs the same compile (the name is only for messages).
std::string program_identity(const JitProgram& p) {
  std::string id = p.arch + "\n" + p.source;
  for (const std::string& k : p.kernels) id += "\n" + k;
  for (const std::string& o : p.options) id += "\n" + o;
  return id;
}

}  // namespace

std::vector<uint64_t> balance_by_cost(const std::vector<double>& costs, uint64_t shards) {
  ATTN_ASSERT(shards > 0, "balance_by_cost: at least one shard");
  std::vector<size_t> order(costs.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return costs[a] > costs[b]; });
  std::vector<double> load(shards, 0.0);
  std::vector<size_t> count(shards, 0);
  std::vector<uint64_t> shard_of(costs.size(), 0);
  for (size_t item : order) {
    // The least loaded shard; among equal loads the one with fewer configs, then the lowest.
    uint64_t best = 0;
    for (uint64_t s = 1; s < shards; ++s) {
      if (load[s] < load[best] || (load[s] == load[best] && count[s] < count[best])) best = s;
    }
    shard_of[item] = best;
    load[best] += costs[item];
    ++count[best];
  }
  return shard_of;
}

LaunchTimes recorded_launch_times(const Store& store, const std::vector<std::string>& hashes) {
  LaunchTimes times;
  std::map<std::tuple<std::string, std::string, std::string>, int64_t> latest;
  for (const std::string& hash : hashes) {
    const std::optional<int64_t> workload = store.workload_id(hash);
    if (!workload) continue;
    MeasurementFilter filter;
    filter.workload_id = *workload;
    filter.passed_only = true;
    for (const MeasurementBrief& m : store.measurement_briefs(filter)) {
      if (!m.median_us || !(*m.median_us > 0)) continue;
      const auto key = std::make_tuple(hash, m.variant, m.config_key);
      auto it = latest.find(key);
      if (it != latest.end() && it->second > m.id) continue;
      latest[key] = m.id;
      times[key] = *m.median_us;
    }
  }
  return times;
}

std::string estimate_text(double seconds) {
  if (seconds < 1) return format("%.3g ms", seconds * 1000);
  if (seconds < 120) return format("%.1f s", seconds);
  if (seconds < 7200) return format("%.1f min", seconds / 60);
  return format("%.1f h", seconds / 3600);
}

size_t SweepPlan::configs() const {
  return map.entries().size();
}

double SweepPlan::seconds() const {
  return std::accumulate(shard_seconds.begin(), shard_seconds.end(), 0.0);
}

SweepPlanner::SweepPlanner(SweepPlanRequest request) : request_(std::move(request)) {
  if (request_.shards == 0) throw UsageError("a sweep needs at least one shard");
}

void SweepPlanner::add(const Batch& batch) {
  workloads_.push_back(batch.spec_hash);
  for (const Variant* variant : request_.variants) {
    const SearchSpace space = build_space(*variant, batch, request_.target, request_.overrides);
    PlannedSpace planned{batch.spec.name, batch.spec_hash, variant->name(), space.configs.size()};
    if (space.configs.empty()) {
      spaces_.push_back(planned);
      continue;
    }
    const double model_us = modelled_launch_us(variant->work(batch), request_.target);
    // Each JIT program's compile is shared by the configs that use it.
    std::vector<std::vector<std::string>> programs;
    std::map<std::string, size_t> users;
    if (request_.target.backend == Backend::cuda) {
      for (const KernelConfig& c : space.configs) {
        std::vector<std::string> ids;
        for (const JitProgram& p : variant->programs(batch, c, request_.target)) {
          ids.push_back(program_identity(p));
          ++users[ids.back()];
        }
        programs.push_back(std::move(ids));
      }
    }
    for (size_t i = 0; i < space.configs.size(); ++i) {
      const std::string key = space.configs[i].key();
      double launch_us = model_us;
      if (request_.history) {
        const auto it = request_.history->find({batch.spec_hash, variant->name(), key});
        if (it != request_.history->end()) {
          launch_us = it->second;
          ++planned.recorded;
        }
      }
      double compile = 0;
      if (!programs.empty()) {
        for (const std::string& id : programs[i]) {
          compile += kModelledCompileSeconds / double(users[id]);
        }
      }
      const double seconds =
          config_seconds(request_.strategy, space.configs.size(), request_.budget, launch_us,
                         request_.target.backend, compile);
      planned.seconds += seconds;
      entries_.push_back({batch.spec_hash, variant->name(), key, 0, seconds});
    }
    spaces_.push_back(planned);
  }
}

SweepPlan SweepPlanner::finish() const {
  if (entries_.empty()) {
    throw UsageError(
        "no config of the sweep survives pruning: nothing to plan (see attn-tune "
        "space)");
  }
  if (request_.shards > entries_.size()) {
    throw UsageError("--shards " + std::to_string(request_.shards) + " is more than the " +
                     std::to_string(entries_.size()) + " configs of the sweep");
  }
  SweepPlan plan;
  plan.spaces = spaces_;
  std::vector<double> costs;
  for (const ShardMapEntry& e : entries_) costs.push_back(e.estimated_seconds);
  const std::vector<uint64_t> shards = balance_by_cost(costs, request_.shards);
  plan.map = ShardMap(request_.shards);
  for (const std::string& w : workloads_) plan.map.add_workload(w);
  plan.shard_configs.assign(request_.shards, 0);
  plan.shard_seconds.assign(request_.shards, 0.0);
  std::vector<double> by_hash(request_.shards, 0.0);
  for (size_t i = 0; i < entries_.size(); ++i) {
    ShardMapEntry e = entries_[i];
    e.shard = shards[i];
    ++plan.shard_configs[e.shard];
    plan.shard_seconds[e.shard] += e.estimated_seconds;
    by_hash[hash_shard(e.variant, e.config_key, request_.shards)] += e.estimated_seconds;
    plan.map.add(std::move(e));
  }
  plan.hash_largest_seconds = *std::max_element(by_hash.begin(), by_hash.end());
  return plan;
}

SweepPlan plan_sweep(const SweepPlanRequest& request) {
  SweepPlanner planner(request);
  for (const Batch* batch : request.batches) planner.add(*batch);
  return planner.finish();
}

}  // namespace attn
