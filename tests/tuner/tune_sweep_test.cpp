// TuneSweep with a test variant and a replayed evaluator: attempts are written around every
// evaluation, a rerun resumes without duplicates, shards merged cover the space once, a config
// that keeps crashing is quarantined, and a stop request leaves the run resumable.
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "kernels/registry.hpp"
#include "results/sqlite.hpp"
#include "tests/tuner/tuner_test_spaces.hpp"
#include "tuner/tune_sweep.hpp"
#include "workloads/presets.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

// A CPU variant with three axes whose measurements come from the replay table.
class AxesVariant : public Variant {
 public:
  std::string name() const override { return "paged_decode.test_axes"; }
  Family family() const override { return Family::paged_decode; }
  Backend backend() const override { return Backend::cpu; }
  std::string summary() const override { return "test"; }
  std::vector<ConfigAxis> space(const Batch&, const Target&) const override {
    return {{"tile_tokens", {16, 32, 64, 128}, ""},
            {"warps", {1, 2, 4, 8}, ""},
            {"num_splits", {0, 1, 2, 4, 8}, ""}};
  }
  KernelConfig default_config(const Batch&, const Target&) const override { return {}; }
  Support supports(const Batch&, const KernelConfig& c, const Target&) const override {
    if (c.get("tile_tokens") == 128 && c.get("warps") == 1) return Support::no("test refusal");
    return Support::yes();
  }
  std::unique_ptr<Launcher> prepare(Problem&, const KernelConfig&, ExecContext&) const override {
    throw std::logic_error("not run");
  }
  Work work(const Batch&) const override { return {}; }
};

// Time from the splitkv-like bowl (stages 3, heads 4); `crash_key` always crashes.
class FakeEvaluator : public CaseEvaluator {
 public:
  std::string crash_key;
  std::map<std::string, int> calls;
  Measurement evaluate(const Variant& v, const KernelConfig& config,
                       const MeasurePolicy& policy) override {
    ++calls[config.key() + "|" + policy.name];
    Measurement m;
    m.family = "paged_decode";
    m.variant = v.name();
    m.config_key = config.key();
    m.config_json = config.to_json().dump();
    m.backend = "cpu";
    m.policy = policy.name;
    if (config.key() == crash_key) {
      m.disposition = Disposition::crashed;
      m.reason = "worker died (test)";
      return m;
    }
    KernelConfig full = config;
    full.set("stages", 3).set("heads_per_cta", 4);
    const ReplayCase truth = testing::splitkv_like_landscape({full}, 1, 0.02, 0)[0];
    ReplayEvaluator replay({truth}, testing::fnv(config.key() + policy.name));
    const Outcome o = replay.evaluate({0, 0}, policy);
    m.samples_us = o.samples;
    m.stats = summarize(m.samples_us);
    m.disposition = Disposition::passed;
    return m;
  }
};

class TuneSweepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("attn-sweep-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    registry_.add(std::make_unique<AxesVariant>());
  }
  void TearDown() override { fs::remove_all(dir_); }

  TuneReport sweep(const std::string& db, TuneOptions options, FakeEvaluator& evaluator,
                   std::function<bool()> stop = {}) {
    Store store(db);
    std::ostringstream progress;
    TuneSweep s(store, batch_, registry_, device_, Target::cpu(), evaluator, options, progress);
    if (stop) s.set_stop_request(stop);
    TuneReport r = s.run({"attn-tune tune", "t", "c", "Release", "test", "h", ""});
    progress_ = progress.str();
    return r;
  }
  int64_t scalar(const std::string& db, const std::string& sql) {
    Database d(db, SQLITE_OPEN_READONLY);
    Statement s(d, sql);
    EXPECT_TRUE(s.step());
    return s.column_int64(0);
  }

  fs::path dir_;
  Registry registry_;
  Batch batch_ = generate_batch(load_preset("default"));
  DeviceRecord device_ = [] {
    DeviceRecord d;
    d.kind = "cpu";
    d.name = "test cpu";
    d.uuid = "host";
    return d;
  }();
  std::string progress_;
};

constexpr int64_t kSpace = 4 * 4 * 5 - 5;  // the product less tile 128 x warps 1

TEST_F(TuneSweepTest, ExhaustiveWritesAnAttemptPerEvaluationAndResumesWithoutDuplicates) {
  const std::string db = (dir_ / "a.db").string();
  TuneOptions options;
  options.strategy = "exhaustive";
  FakeEvaluator evaluator;
  const TuneReport first = sweep(db, options, evaluator);
  ASSERT_EQ(first.variants.size(), 1u);
  EXPECT_EQ(first.variants[0].space, size_t(kSpace));
  EXPECT_EQ(first.variants[0].evaluated, size_t(kSpace));
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM attempts WHERE status = 'finished'"), kSpace);
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM attempts WHERE status = 'started'"), 0);
  EXPECT_EQ(scalar(db,
                   "SELECT count(*) FROM attempts a JOIN measurements m ON "
                   "m.id = a.measurement_id AND m.config_key = a.config_key"),
            kSpace);
  ASSERT_TRUE(first.variants[0].winner);
  EXPECT_GE(scalar(db, "SELECT count(*) FROM winners WHERE verdict = 'winner'"), 1);
  EXPECT_NE(progress_.find("[" + std::to_string(kSpace) + "/" + std::to_string(kSpace) + "]"),
            std::string::npos)
      << progress_;
  EXPECT_NE(progress_.find("| best "), std::string::npos);
  EXPECT_NE(progress_.find("ETA"), std::string::npos);

  // The same command again: nothing measured twice, the same winner.
  FakeEvaluator again;
  const TuneReport second = sweep(db, options, again);
  EXPECT_EQ(second.variants[0].evaluated, 0u);
  EXPECT_EQ(second.variants[0].resumed, size_t(kSpace));
  EXPECT_TRUE(again.calls.empty());
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM measurements"), kSpace);
  ASSERT_TRUE(second.variants[0].winner);
  EXPECT_EQ(second.variants[0].winner->winner.config_key,
            first.variants[0].winner->winner.config_key);
}

TEST_F(TuneSweepTest, InterruptedSweepResumesWhereItStopped) {
  const std::string db = (dir_ / "a.db").string();
  TuneOptions options;
  options.strategy = "halving";
  FakeEvaluator evaluator;
  int polls = 0;
  const TuneReport stopped = sweep(db, options, evaluator, [&] { return ++polls > 40; });
  EXPECT_TRUE(stopped.interrupted);
  const int64_t partial = scalar(db, "SELECT count(*) FROM measurements");
  EXPECT_GT(partial, 0);
  EXPECT_LT(partial, kSpace);
  FakeEvaluator rest;
  const TuneReport finished = sweep(db, options, rest);
  EXPECT_FALSE(finished.interrupted);
  EXPECT_EQ(finished.variants[0].resumed, size_t(partial));
  // Each (config, policy) measured once over both runs.
  EXPECT_EQ(scalar(db,
                   "SELECT count(*) FROM (SELECT config_key, policy FROM measurements "
                   "GROUP BY config_key, policy HAVING count(*) > 1)"),
            0);
  for (const auto& [key, calls] : rest.calls) EXPECT_EQ(calls, 1) << key;
  EXPECT_TRUE(finished.variants[0].winner);
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM runs WHERE status = 'interrupted'"), 1);
}

TEST_F(TuneSweepTest, ShardsMergedCoverTheSpaceOnceAndMergeIsIdempotent) {
  TuneOptions options;
  options.strategy = "exhaustive";
  std::vector<std::string> shards;
  for (int i = 0; i < 3; ++i) {
    options.shard = parse_shard(std::to_string(i) + "/3");
    shards.push_back((dir_ / ("shard" + std::to_string(i) + ".db")).string());
    FakeEvaluator evaluator;
    sweep(shards.back(), options, evaluator);
  }
  const std::string all = (dir_ / "all.db").string();
  {
    Store into(all);
    for (const std::string& s : shards) EXPECT_GT(into.merge_from(s).measurements, 0);
    const StoreCounts once = into.counts();
    EXPECT_EQ(once.measurements, kSpace);
    EXPECT_EQ(once.runs, 3);
    EXPECT_EQ(once.devices, 1);
    EXPECT_EQ(once.workloads, 1);
    for (const std::string& s : shards) {
      const MergeCounts again = into.merge_from(s);
      EXPECT_EQ(again.measurements + again.runs + again.samples + again.attempts + again.winners,
                0);
    }
    const StoreCounts twice = into.counts();
    EXPECT_EQ(twice.measurements, once.measurements);
    EXPECT_EQ(twice.runs, once.runs);
  }
  EXPECT_EQ(scalar(all, "SELECT count(DISTINCT config_key) FROM measurements"), kSpace);
  EXPECT_EQ(scalar(all, "SELECT count(*) FROM attempts"), kSpace);
  EXPECT_EQ(scalar(all,
                   "SELECT count(*) FROM samples s JOIN measurements m ON "
                   "m.id = s.measurement_id"),
            scalar(all, "SELECT sum(sample_count) FROM measurements"));
  // A sweep over the merged database measures nothing and chooses over every shard's results.
  options.shard = Shard{};
  FakeEvaluator none;
  const TuneReport merged = sweep(all, options, none);
  EXPECT_TRUE(none.calls.empty());
  EXPECT_EQ(merged.variants[0].resumed, size_t(kSpace));
  EXPECT_TRUE(merged.variants[0].winner);
}

TEST_F(TuneSweepTest, ACrashingConfigIsQuarantinedAfterRepeatedFailures) {
  const std::string db = (dir_ / "a.db").string();
  TuneOptions options;
  options.strategy = "exhaustive";
  options.quarantine_after = 2;
  FakeEvaluator evaluator;
  evaluator.crash_key = "num_splits=0,tile_tokens=16,warps=1";
  for (int run = 0; run < 3; ++run) {
    FakeEvaluator e;
    e.crash_key = evaluator.crash_key;
    const TuneReport r = sweep(db, options, e);
    EXPECT_EQ(r.variants[0].failed, 1u) << "run " << run;
    EXPECT_EQ(r.variants[0].quarantined, run >= 2 ? 1u : 0u) << "run " << run;
    EXPECT_EQ(e.calls.size(), run == 0 ? size_t(kSpace) : run == 1 ? 1u : 0u) << "run " << run;
  }
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM attempts WHERE disposition = 'crashed'"), 2);
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM runs WHERE status = 'failed_cases'"), 3);
}

}  // namespace
}  // namespace attn
