// A planned sweep: configs dealt to shards by estimated cost (largest first to the least loaded
// shard), so that a variant whose launches are slow does not make one shard the array's tail; the
// estimate taken from recorded launch times where there are some; compiles shared by the configs
// that use one program; and the plan's refusals.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>

#include "base/errors.hpp"
#include "kernels/reference/cpu_reference_variant.hpp"
#include "tuner/shard.hpp"
#include "tuner/sweep_cost.hpp"
#include "tuner/sweep_plan.hpp"
#include "workloads/presets.hpp"

namespace attn {
namespace {

// A variant of `configs` configs whose launches do `flops` of work; on CUDA, configs share
// `programs` JIT programs.
class PlannedVariant : public Variant {
 public:
  PlannedVariant(std::string name, Backend backend, int configs, double flops, int programs = 1)
      : name_(std::move(name)),
        backend_(backend),
        configs_(configs),
        flops_(flops),
        programs_(programs) {}
  std::string name() const override { return name_; }
  Family family() const override { return Family::paged_decode; }
  Backend backend() const override { return backend_; }
  std::string summary() const override { return "test"; }
  FeatureSet features() const override { return reference_features(); }
  std::vector<ConfigAxis> space(const Batch&, const Target&) const override {
    std::vector<int64_t> values(static_cast<size_t>(configs_));
    std::iota(values.begin(), values.end(), int64_t(0));
    return {{"tile_tokens", values, ""}};
  }
  KernelConfig default_config(const Batch&, const Target&) const override { return {}; }
  Support supports(const Batch&, const KernelConfig&, const Target&) const override {
    return Support::yes();
  }
  std::unique_ptr<Launcher> prepare(Problem&, const KernelConfig&, ExecContext&) const override {
    throw std::logic_error("not run");
  }
  Work work(const Batch&) const override { return {0, 0, flops_}; }
  std::vector<JitProgram> programs(const Batch&, const KernelConfig& c,
                                   const Target& t) const override {
    const std::string which = std::to_string(c.get("tile_tokens") % programs_);
    return {{name_ + ".p" + which, "#include \"x.cuh\"\n", {"f<" + which + ">"}, t.arch, {}}};
  }

 private:
  std::string name_;
  Backend backend_;
  int configs_;
  double flops_;
  int programs_;
};

Target planned_cuda_target() {
  Target t;
  t.backend = Backend::cuda;
  t.arch = "sm_90a";
  t.sm_count = 132;
  return t;
}

double largest_load(const std::vector<double>& loads) {
  return *std::max_element(loads.begin(), loads.end());
}

TEST(SweepPlan, BalanceByCostPutsTheLargestFirstOnTheLeastLoadedShard) {
  // One config as costly as the other nine together: alone on its shard, the rest on the other.
  std::vector<double> costs = {1, 1, 1, 9, 1, 1, 1, 1, 1, 1};
  std::vector<uint64_t> shards = balance_by_cost(costs, 2);
  std::vector<double> load(2, 0);
  for (size_t i = 0; i < costs.size(); ++i) load[shards[i]] += costs[i];
  EXPECT_EQ(load[0], 9);
  EXPECT_EQ(load[1], 9);
  EXPECT_EQ(shards[3], 0u);
  // Equal costs: dealt round-robin in the order given, the same every time.
  costs.assign(10, 2.0);
  shards = balance_by_cost(costs, 4);
  EXPECT_EQ(shards, (std::vector<uint64_t>{0, 1, 2, 3, 0, 1, 2, 3, 0, 1}));
  EXPECT_EQ(balance_by_cost(costs, 4), shards);
  // Graham's bound on a skewed random-looking set: within 4/3 of the lower bound of any split.
  costs.clear();
  for (int i = 0; i < 200; ++i) costs.push_back(double((i * 7919) % 97 + 1) * (i % 13 ? 1 : 40));
  for (uint64_t n : {2, 3, 7, 16}) {
    shards = balance_by_cost(costs, n);
    std::vector<double> loads(n, 0);
    for (size_t i = 0; i < costs.size(); ++i) loads[shards[i]] += costs[i];
    const double total = std::accumulate(costs.begin(), costs.end(), 0.0);
    const double bound = std::max(*std::max_element(costs.begin(), costs.end()), total / n);
    EXPECT_LE(largest_load(loads), 4.0 / 3.0 * bound) << n << " shards";
  }
}

class SweepPlanTest : public ::testing::Test {
 protected:
  SweepPlanRequest request(std::vector<const Variant*> variants, uint64_t shards) {
    SweepPlanRequest r;
    r.batches = {&batch_};
    r.variants = std::move(variants);
    r.target = Target::cpu();
    r.strategy = "exhaustive";
    r.shards = shards;
    return r;
  }
  Batch batch_ = generate_batch(load_preset("default"));
};

TEST_F(SweepPlanTest, AShardOfSlowLaunchesIsNotTheTail) {
  // 4 configs of 100 ms launches and 20 of 1 ms: by count or by hash a shard can hold two slow
  // configs; by cost each of 4 shards gets one and a fifth of the fast ones.
  const PlannedVariant slow("test.slow", Backend::cpu, 4, 1e8);
  const PlannedVariant fast("test.fast", Backend::cpu, 20, 1e6);
  const SweepPlan plan = plan_sweep(request({&slow, &fast}, 4));
  EXPECT_EQ(plan.configs(), 24u);
  EXPECT_EQ(plan.map.shards(), 4u);
  std::map<uint64_t, int> slow_per_shard;
  for (const ShardMapEntry& e : plan.map.entries()) {
    EXPECT_EQ(e.workload_hash, batch_.spec_hash);
    if (e.variant == "test.slow") ++slow_per_shard[e.shard];
  }
  EXPECT_EQ(slow_per_shard.size(), 4u);
  for (const auto& [shard, count] : slow_per_shard) EXPECT_EQ(count, 1) << shard;
  EXPECT_EQ(plan.shard_configs, (std::vector<size_t>{6, 6, 6, 6}));
  const auto [low, high] =
      std::minmax_element(plan.shard_seconds.begin(), plan.shard_seconds.end());
  EXPECT_LT(*high / *low, 1.05);
  EXPECT_GE(plan.hash_largest_seconds, *high);
  EXPECT_NEAR(plan.seconds(), plan.spaces[0].seconds + plan.spaces[1].seconds, 1e-9);
  ASSERT_EQ(plan.spaces.size(), 2u);
  EXPECT_EQ(plan.spaces[0].variant, "test.slow");
  EXPECT_EQ(plan.spaces[0].configs, 4u);
  EXPECT_EQ(plan.spaces[0].recorded, 0u);
  // The map's estimates are the model's for each config.
  const double slow_seconds = config_seconds(
      "exhaustive", 4, {}, modelled_launch_us({0, 0, 1e8}, Target::cpu()), Backend::cpu, 0);
  EXPECT_NEAR(plan.spaces[0].seconds, 4 * slow_seconds, 1e-9);
  // The same request plans the same map.
  EXPECT_EQ(plan_sweep(request({&slow, &fast}, 4)).map.text(""), plan.map.text(""));
}

TEST_F(SweepPlanTest, RecordedLaunchTimesOverrideTheModel) {
  const PlannedVariant fast("test.fast", Backend::cpu, 8, 1e6);
  LaunchTimes history;
  history[{batch_.spec_hash, "test.fast", "tile_tokens=5"}] = 4e6;  // 4 s a launch, once seen
  history[{"another workload", "test.fast", "tile_tokens=6"}] = 4e6;
  SweepPlanRequest r = request({&fast}, 2);
  r.history = &history;
  const SweepPlan plan = plan_sweep(r);
  EXPECT_EQ(plan.spaces[0].recorded, 1u);
  const std::optional<uint64_t> alone =
      plan.map.shard_of(batch_.spec_hash, "test.fast", "tile_tokens=5");
  ASSERT_TRUE(alone);
  EXPECT_EQ(plan.shard_configs[*alone], 1u) << "the slow config should have a shard to itself";
  EXPECT_EQ(plan.shard_configs[1 - *alone], 7u);
}

TEST_F(SweepPlanTest, ConfigsThatShareAProgramShareItsCompile) {
  // 6 CUDA configs over 2 programs: each program's 2 s of compiling split among its 3 users.
  const PlannedVariant shared("test.shared", Backend::cuda, 6, 0, 2);
  SweepPlanRequest r = request({&shared}, 2);
  r.target = planned_cuda_target();
  const SweepPlan plan = plan_sweep(r);
  const double launch = modelled_launch_us({0, 0, 0}, planned_cuda_target());
  const double each =
      config_seconds("exhaustive", 6, {}, launch, Backend::cuda, kModelledCompileSeconds / 3);
  for (const ShardMapEntry& e : plan.map.entries()) {
    EXPECT_NEAR(e.estimated_seconds, each, 1e-9) << e.config_key;
  }
  // One program per config: each pays a whole compile.
  const PlannedVariant own("test.own", Backend::cuda, 6, 0, 6);
  r.variants = {&own};
  const SweepPlan apart = plan_sweep(r);
  EXPECT_NEAR(apart.map.entries()[0].estimated_seconds - each,
              kModelledCompileSeconds * (1 - 1.0 / 3), 1e-9);
}

// A variant that declines one workload by name: that workload's space is empty.
class DecliningVariant : public PlannedVariant {
 public:
  DecliningVariant() : PlannedVariant("test.declining", Backend::cpu, 6, 1e6) {}
  Support supports(const Batch& batch, const KernelConfig&, const Target&) const override {
    return batch.spec.name == "declined" ? Support::no("test") : Support::yes();
  }
};

TEST_F(SweepPlanTest, APlannerTakesWorkloadsOneAtATimeAndListsEvenThoseWithoutConfigs) {
  const DecliningVariant variant;
  WorkloadSpec other = load_preset("default");
  other.name = "declined";
  const Batch declined = generate_batch(other);
  SweepPlanRequest r = request({&variant}, 4);
  SweepPlanner planner(r);
  planner.add(batch_);
  planner.add(declined);
  const SweepPlan plan = planner.finish();
  EXPECT_EQ(plan.configs(), 6u);
  ASSERT_EQ(plan.spaces.size(), 2u);
  EXPECT_EQ(plan.spaces[1].workload, "declined");
  EXPECT_EQ(plan.spaces[1].configs, 0u);
  EXPECT_TRUE(plan.map.lists_workload(batch_.spec_hash));
  EXPECT_TRUE(plan.map.lists_workload(declined.spec_hash));
  // The same as plan_sweep over both batches.
  r.batches = {&batch_, &declined};
  EXPECT_EQ(plan_sweep(r).map.text(""), plan.map.text(""));
}

TEST_F(SweepPlanTest, RefusesMoreShardsThanConfigsAndAnEmptySweep) {
  const PlannedVariant three("test.three", Backend::cpu, 3, 1e6);
  EXPECT_NO_THROW(plan_sweep(request({&three}, 3)));
  try {
    plan_sweep(request({&three}, 4));
    ADD_FAILURE() << "4 shards of 3 configs were planned";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--shards 4 is more than the 3 configs"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(plan_sweep(request({}, 1)), UsageError);
  EXPECT_THROW(plan_sweep(request({&three}, 0)), UsageError);
}

TEST(SweepPlan, EstimatesArePrintedInAUnitThatFits) {
  EXPECT_EQ(estimate_text(0.0123), "12.3 ms");
  EXPECT_EQ(estimate_text(12.34), "12.3 s");
  EXPECT_EQ(estimate_text(600), "10.0 min");
  EXPECT_EQ(estimate_text(3 * 3600), "3.0 h");
}

}  // namespace
}  // namespace attn
