// TuneSweep with a test variant and a replayed evaluator: attempts are written around every
// evaluation, a rerun resumes without duplicates, shards merged cover the space once, a config
// that keeps crashing is quarantined, and a stop request leaves the run resumable.
#include <gtest/gtest.h>
#include <algorithm>

#include <unistd.h>
#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "base/errors.hpp"
#include "base/process_identity.hpp"
#include "kernels/reference/cpu_reference_variant.hpp"
#include "kernels/registry.hpp"
#include "results/sqlite.hpp"
#include "tests/tuner/tuner_test_spaces.hpp"
#include "tuner/compile_ahead.hpp"
#include "tuner/stored_winners.hpp"
#include "tuner/sweep_plan.hpp"
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
  FeatureSet features() const override { return reference_features(); }  // any batch
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
  // One program per config (never compiled for real: compile-ahead tests record them).
  std::vector<JitProgram> programs(const Batch&, const KernelConfig& c,
                                   const Target&) const override {
    return {{full_name(c), "", {}, "sm_80", {}}};
  }
};

// Time from the sm80_simt-like bowl (stages 3, heads 4); `crash_key` always crashes.
class FakeEvaluator : public CaseEvaluator {
 public:
  std::string crash_key;
  std::map<std::string, int> calls;
  std::chrono::milliseconds delay{0};  // each evaluation takes this long
  Measurement evaluate(const Variant& v, const KernelConfig& config,
                       const MeasurePolicy& policy) override {
    ++calls[config.key() + "|" + policy.name];
    if (delay.count() > 0) std::this_thread::sleep_for(delay);
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
    const ReplayCase truth = testing::sm80_simt_like_landscape({full}, 1, 0.02, 0)[0];
    ReplayEvaluator replay({truth}, testing::fnv(config.key() + policy.name));
    const Outcome o = replay.evaluate({0, 0}, policy);
    m.samples_us = o.samples;
    m.stats = summarize(m.samples_us);
    m.disposition = Disposition::passed;
    return m;
  }
};

// Reports phase seconds with each result, as a worker would: a different split for each variant and
// policy, a crash that ends in verify, and it keeps the sums it reported per variant.
class PhasedEvaluator : public FakeEvaluator {
 public:
  std::map<std::string, PhaseSeconds> reported;  // by variant

 protected:
  CaseResult evaluate_case(const CaseRequest& r) override {
    CaseResult result = FakeEvaluator::evaluate_case(r);
    const bool second = r.variant->name() != "paged_decode.test_axes";
    PhaseSeconds& s = result.phase_seconds;
    s.compile = second ? 0.5 : 0.125;
    s.verify = 0.25;
    if (result.measurement.disposition == Disposition::passed) {
      s.measure = r.policy.name == "screen" ? 1 : second ? 8 : 4;
    }
    reported[r.variant->name()].add(s);
    return result;
  }
};

// The same space under another name, for a sweep of two variants.
class SecondAxesVariant : public AxesVariant {
 public:
  std::string name() const override { return "paged_decode.test_axes_second"; }
};

// Two slots (two GPUs' workers) that finish their cases out of the order they began (mostly the
// newest first), as GPUs of different speed would.
class TwoSlotEvaluator : public FakeEvaluator {
 public:
  size_t max_in_flight = 0;
  std::vector<size_t> cases = {0, 0};
  size_t slots() const override { return 2; }
  std::optional<size_t> idle_slot() const override {
    for (size_t i = 0; i < 2; ++i) {
      if (!busy_[i]) return i;
    }
    return std::nullopt;
  }
  std::optional<int64_t> slot_process(size_t slot) override { return int64_t(1000 + slot); }
  void begin(size_t slot, CaseRequest request) override {
    ASSERT_FALSE(busy_[slot]);
    busy_[slot] = std::move(request);
    order_.push_back(slot);
    max_in_flight = std::max(max_in_flight, order_.size());
  }
  CaseResult wait() override {
    const bool oldest = ++waits_ % 3 == 0;
    const size_t slot = oldest ? order_.front() : order_.back();
    order_.erase(oldest ? order_.begin() : order_.end() - 1);
    CaseRequest r = std::move(*busy_[slot]);
    busy_[slot].reset();
    ++cases[slot];
    return {r.tag, slot, evaluate(*r.variant, r.config, r.policy)};
  }

 private:
  std::optional<CaseRequest> busy_[2];
  std::vector<size_t> order_;  // busy slots, in the order their cases began
  size_t waits_ = 0;
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

  TuneReport sweep(const std::string& db, TuneOptions options, CaseEvaluator& evaluator,
                   std::function<bool()> stop = {}, std::vector<DeviceRecord> slot_devices = {},
                   bool terminal = false) {
    Store store(db);
    std::ostringstream progress;
    TuneSweep s(store, batch_, registry_, device_, Target::cpu(), evaluator, options, progress);
    s.set_progress_terminal(terminal);
    if (stop) s.set_stop_request(stop);
    if (!slot_devices.empty()) s.set_slot_devices(slot_devices);
    TuneReport r = s.run({"attn-tune tune", "t", "c", "Release", "test", "h", ""});
    progress_ = progress.str();
    return r;
  }
  // An exhaustive sweep of one variant that plans `planned` (PlannedAxesVariant, below).
  TuneReport planned_sweep(const KernelConfig& planned, const std::string& db);
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

// A variant whose planner's config (its default) is a point of the space, or lies outside it.
class PlannedAxesVariant : public AxesVariant {
 public:
  explicit PlannedAxesVariant(KernelConfig planned) : planned_(std::move(planned)) {}
  std::string name() const override { return "paged_decode.test_axes_planned"; }
  KernelConfig default_config(const Batch&, const Target&) const override { return planned_; }

 private:
  KernelConfig planned_;
};

TuneReport TuneSweepTest::planned_sweep(const KernelConfig& planned, const std::string& db) {
  registry_ = Registry();
  registry_.add(std::make_unique<PlannedAxesVariant>(planned));
  TuneOptions options;
  options.strategy = "exhaustive";
  FakeEvaluator evaluator;
  TuneReport report = sweep(db, options, evaluator);
  EXPECT_EQ(report.variants.size(), 1u);
  return report;
}

// The planner's config against the winner, from the results the sweep stored: both confirm results
// after an exhaustive sweep, both screen results after halving where the planner's config was only
// screened, the variants' nearest overall, and nothing where the config was not in the space.
TEST_F(TuneSweepTest, ThePlannersConfigIsSetAgainstTheWinner) {
  const KernelConfig planned{{"num_splits", 2}, {"tile_tokens", 16}, {"warps", 1}};
  const std::string db = (dir_ / "p.db").string();
  const TuneReport report = planned_sweep(planned, db);
  const VariantSummary& s = report.variants[0];
  ASSERT_TRUE(s.winner);
  ASSERT_TRUE(s.planner);
  EXPECT_EQ(s.planner_key, planned.key());
  EXPECT_EQ(s.planner->policy, "confirm");
  const double stored = scalar(db,
                               "SELECT CAST(median_us * 1000000 AS INTEGER) FROM measurements "
                               "WHERE policy = 'confirm' AND config_key = '" +
                                   planned.key() + "' ORDER BY id DESC LIMIT 1") /
                        1e6;
  EXPECT_NEAR(s.planner->planner_us, stored, 1e-5);
  EXPECT_DOUBLE_EQ(s.planner->winner_us, s.winner->winner.median_us);
  EXPECT_GE(s.planner->gap(), 0);
  EXPECT_GT(s.planner->gap(), 0.01) << "the bowl's corner is slower than its bottom";
  ASSERT_TRUE(report.overall_planner);
  EXPECT_DOUBLE_EQ(report.overall_planner->gap(), s.planner->gap());
  const std::string said = describe_planner_gap(*s.planner);
  EXPECT_NE(said.find("behind the winner (confirm)"), std::string::npos) << said;
  EXPECT_NE(said.find(planned.key()), std::string::npos) << said;

  // The winner's own config as the planner's: no gap.
  const PlannerGap same =
      *planner_gap({{{"v", "a", "confirm"}, 10.0}}, "v", "a", Candidate{"v", "a", 1, {}, 10.0});
  EXPECT_DOUBLE_EQ(same.gap(), 0);
  EXPECT_NE(describe_planner_gap(same).find("as fast as the winner"), std::string::npos);
  // Only screened: both screen results; no result in common: nothing.
  const StoredMedians medians = {
      {{"v", "a", "screen"}, 11.0}, {{"v", "b", "screen"}, 10.0}, {{"v", "b", "confirm"}, 10.2}};
  const std::optional<PlannerGap> screened =
      planner_gap(medians, "v", "a", Candidate{"v", "b", 2, {}, 10.2});
  ASSERT_TRUE(screened);
  EXPECT_EQ(screened->policy, "screen");
  EXPECT_NEAR(screened->gap(), 0.1, 1e-12);
  EXPECT_FALSE(planner_gap(medians, "v", "c", Candidate{"v", "b", 2, {}, 10.2}));
  EXPECT_FALSE(nearest_planner({}));
}

// A planner's config outside the space searched is reported as not measured, not as a gap.
TEST_F(TuneSweepTest, APlannersConfigOutsideTheSpaceHasNoGap) {
  const TuneReport report =
      planned_sweep(KernelConfig{{"num_splits", 0}, {"tile_tokens", 128}, {"warps", 1}},  // refused
                    (dir_ / "o.db").string());
  EXPECT_TRUE(report.variants[0].winner);
  EXPECT_FALSE(report.variants[0].planner);
  EXPECT_FALSE(report.overall_planner);
}

// Each variant's summary sums the phase seconds of the evaluations it made, crashed ones included,
// and of no other variant's; answers from the database add none, so a resumed sweep's phases are
// unknown rather than zero-cost measurements.
TEST_F(TuneSweepTest, PhaseSecondsAreSummedPerVariant) {
  registry_.add(std::make_unique<SecondAxesVariant>());
  const std::string db = (dir_ / "phases.db").string();
  TuneOptions options;
  options.strategy = "halving";
  PhasedEvaluator evaluator;
  evaluator.crash_key = "num_splits=0,tile_tokens=16,warps=1";
  const TuneReport report = sweep(db, options, evaluator);
  ASSERT_EQ(report.variants.size(), 2u);
  ASSERT_EQ(evaluator.reported.size(), 2u);
  for (const VariantSummary& v : report.variants) {
    SCOPED_TRACE(v.variant);
    const PhaseSeconds& want = evaluator.reported.at(v.variant);
    EXPECT_GT(v.evaluated, size_t(kSpace)) << "screened every config, then confirmed some";
    EXPECT_EQ(v.failed, 1u) << "the crash";
    EXPECT_TRUE(v.phase_seconds.known());
    EXPECT_DOUBLE_EQ(v.phase_seconds.compile, want.compile);
    EXPECT_DOUBLE_EQ(v.phase_seconds.verify, want.verify);
    EXPECT_DOUBLE_EQ(v.phase_seconds.measure, want.measure);
    // Each case's compile is the variant's own: none of the other variant's cases is in the sum.
    const bool second = v.variant != "paged_decode.test_axes";
    EXPECT_DOUBLE_EQ(v.phase_seconds.compile, (second ? 0.5 : 0.125) * double(v.evaluated));
    EXPECT_DOUBLE_EQ(v.phase_seconds.verify, 0.25 * double(v.evaluated));
  }
  EXPECT_GT(report.variants[1].phase_seconds.measure, report.variants[0].phase_seconds.measure);

  PhasedEvaluator again;
  again.crash_key = evaluator.crash_key;
  options.quarantine_after = 1;
  const TuneReport resumed = sweep(db, options, again);
  for (const VariantSummary& v : resumed.variants) {
    EXPECT_EQ(v.evaluated, 0u) << v.variant;
    EXPECT_FALSE(v.phase_seconds.known()) << v.variant;
  }
}

// A variant routed to an evaluator of its own (a user module's peer through the peer runner) has
// every case of its sweep evaluated there and none by the sweep's evaluator, whose cases are the
// other variant's; both are stored and resumed alike.
TEST_F(TuneSweepTest, ARoutedVariantIsEvaluatedByItsOwnEvaluatorOnly) {
  registry_.add(std::make_unique<SecondAxesVariant>());
  const std::string db = (dir_ / "routed.db").string();
  TuneOptions options;
  options.strategy = "exhaustive";
  PhasedEvaluator ours, routed;
  {
    Store store(db);
    std::ostringstream progress;
    TuneSweep s(store, batch_, registry_, device_, Target::cpu(), ours, options, progress);
    s.evaluate_with(*registry_.find("paged_decode.test_axes_second"), routed);
    const TuneReport report = s.run({"attn-tune tune", "t", "c", "Release", "test", "h", ""});
    ASSERT_EQ(report.variants.size(), 2u);
    EXPECT_EQ(report.variants[0].evaluated, size_t(kSpace));
    EXPECT_EQ(report.variants[1].evaluated, size_t(kSpace));
  }
  EXPECT_EQ(ours.reported.count("paged_decode.test_axes_second"), 0u);
  EXPECT_EQ(routed.reported.count("paged_decode.test_axes"), 0u);
  ASSERT_EQ(routed.reported.count("paged_decode.test_axes_second"), 1u);
  EXPECT_DOUBLE_EQ(routed.reported.at("paged_decode.test_axes_second").verify, 0.25 * kSpace);
  Store store(db);
  MeasurementFilter second;
  second.variant = "paged_decode.test_axes_second";
  EXPECT_EQ(store.find_measurements(second).size(), size_t(kSpace));
}

// A config the evaluation finds unsupported (a module peer's declines() in the runner) is counted
// declined, not failed: it is no candidate, and it does not make the sweep's exit code a failure.
TEST_F(TuneSweepTest, AConfigDeclinedByTheEvaluationIsNotAFailure) {
  class DecliningEvaluator : public FakeEvaluator {
   public:
    Measurement evaluate(const Variant& v, const KernelConfig& config,
                         const MeasurePolicy& policy) override {
      Measurement m = FakeEvaluator::evaluate(v, config, policy);
      if (config.get("warps") == 8) {
        m.disposition = Disposition::unsupported;
        m.reason = "8 warps are not written yet";
        m.samples_us.clear();
      }
      return m;
    }
  } evaluator;
  TuneOptions options;
  options.strategy = "exhaustive";
  const TuneReport report = sweep((dir_ / "declined.db").string(), options, evaluator);
  ASSERT_EQ(report.variants.size(), 1u);
  const VariantSummary& v = report.variants[0];
  EXPECT_EQ(v.declined, size_t(4 * 5));  // warps 8 with every tile and split
  EXPECT_EQ(v.failed, 0u);
  EXPECT_EQ(report.failures(), 0u);
  ASSERT_TRUE(v.winner.has_value());
  EXPECT_EQ(v.winner->winner.config_key.find("warps=8"), std::string::npos);
  EXPECT_NE(progress_.find("declined: 8 warps are not written yet"), std::string::npos);
}

// With two slots both are kept busy, each config is evaluated and recorded once, with its slot's
// device and worker, and the strategy proposes exactly what it proposes with one slot (outcomes go
// back in trial order whichever slot finished first).
TEST_F(TuneSweepTest, TwoSlotsShareTheWorkAndProposeWhatOneSlotDoes) {
  TuneOptions options;
  options.strategy = "halving";
  const std::string one_db = (dir_ / "one.db").string();
  FakeEvaluator one;
  const TuneReport one_report = sweep(one_db, options, one);
  const std::string two_db = (dir_ / "two.db").string();
  TwoSlotEvaluator two;
  DeviceRecord second = device_;
  second.uuid = "second";
  const TuneReport two_report = sweep(two_db, options, two, {}, {device_, second});
  EXPECT_EQ(two.max_in_flight, 2u);
  EXPECT_GT(two.cases[0], 10u);
  EXPECT_GT(two.cases[1], 10u);
  EXPECT_EQ(two.calls, one.calls) << "the same trials, each once";
  for (const auto& [key, n] : two.calls) EXPECT_EQ(n, 1) << key;
  EXPECT_EQ(two_report.variants[0].evaluated, one_report.variants[0].evaluated);
  ASSERT_TRUE(two_report.variants[0].winner && one_report.variants[0].winner);
  EXPECT_EQ(two_report.variants[0].winner->winner.config_key,
            one_report.variants[0].winner->winner.config_key);
  EXPECT_EQ(scalar(two_db, "SELECT count(*) FROM measurements"),
            int64_t(two_report.variants[0].evaluated));
  EXPECT_EQ(scalar(two_db,
                   "SELECT count(*) FROM (SELECT config_key, policy FROM measurements "
                   "GROUP BY config_key, policy HAVING count(*) > 1)"),
            0);
  // Each slot's results are recorded with its own device, and its attempts with its worker.
  EXPECT_EQ(scalar(two_db, "SELECT count(DISTINCT device_id) FROM measurements"), 2);
  EXPECT_EQ(scalar(two_db, "SELECT count(DISTINCT worker_pid) FROM attempts"), 2);
  EXPECT_EQ(scalar(two_db,
                   "SELECT count(*) FROM attempts a JOIN measurements m ON m.id = a.measurement_id "
                   "WHERE a.device_id != m.device_id"),
            0);
  // A rerun on the two devices resumes from both: nothing evaluated again.
  TwoSlotEvaluator again;
  const TuneReport resumed = sweep(two_db, options, again, {}, {device_, second});
  EXPECT_EQ(resumed.variants[0].evaluated, 0u);
  EXPECT_TRUE(again.calls.empty());
}

// The database fills up mid-sweep (max_page_count stands in for a full disk): the sweep stops at
// once with an environment error instead of failing config after config, the case in flight does
// not count towards its quarantine, and a rerun with room finishes without duplicates.
TEST_F(TuneSweepTest, AFullDatabaseStopsTheSweepOnceAndTheRerunFinishesIt) {
  const std::string db = (dir_ / "full.db").string();
  TuneOptions options;
  options.strategy = "exhaustive";
  FakeEvaluator evaluator;
  {
    Store store(db);
    Statement count(store.database(), "PRAGMA page_count");
    ASSERT_TRUE(count.step());
    // A pragma takes no bound parameter; the value is this test's own integer.
    store.database().exec(
        ("PRAGMA max_page_count = " + std::to_string(count.column_int64(0) + 6)).c_str());
    std::ostringstream progress;
    TuneSweep s(store, batch_, registry_, device_, Target::cpu(), evaluator, options, progress);
    try {
      s.run({"attn-tune tune", "t", "c", "Release", "test", "h", ""});
      FAIL() << "the sweep went on with a full database";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::environment) << e.what();
      EXPECT_NE(std::string(e.what()).find("full"), std::string::npos) << e.what();
    }
  }
  size_t calls = 0;
  for (const auto& [key, n] : evaluator.calls) calls += size_t(n);
  EXPECT_GE(calls, 1u);
  EXPECT_LT(calls, size_t(kSpace) / 2) << "it stopped at the first failure";
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM attempts WHERE status = 'started'"), 0);
  FakeEvaluator rest;
  const TuneReport finished = sweep(db, options, rest);
  EXPECT_EQ(finished.variants[0].quarantined, 0u);
  EXPECT_EQ(scalar(db, "SELECT count(DISTINCT config_key) FROM measurements"), kSpace);
  EXPECT_EQ(scalar(db,
                   "SELECT count(*) FROM (SELECT config_key FROM measurements "
                   "GROUP BY config_key HAVING count(*) > 1)"),
            0);
}

// A read-only database stops the sweep before any evaluation.
TEST_F(TuneSweepTest, AReadOnlyDatabaseStopsTheSweepBeforeAnyEvaluation) {
  Store store((dir_ / "ro.db").string());
  store.database().exec("PRAGMA query_only = ON");
  FakeEvaluator evaluator;
  std::ostringstream progress;
  TuneOptions options;
  options.strategy = "exhaustive";
  TuneSweep s(store, batch_, registry_, device_, Target::cpu(), evaluator, options, progress);
  try {
    s.run({"attn-tune tune", "t", "c", "Release", "test", "h", ""});
    FAIL() << "the sweep ran on a read-only database";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::environment) << e.what();
  }
  EXPECT_TRUE(evaluator.calls.empty());
}

// Compile-ahead: when a config is evaluated, the programs of the next ones were already handed to
// the compile pool, each program once; the results are those of a sweep without it.
TEST_F(TuneSweepTest, CompileAheadQueuesTheNextConfigsProgramsAndChangesNoResult) {
  TuneOptions options;
  options.strategy = "halving";
  FakeEvaluator plain;
  const TuneReport without = sweep((dir_ / "plain.db").string(), options, plain);

  std::mutex mutex;
  std::set<std::string> compiled;
  CompileAhead ahead(
      [&](const JitProgram& p) {
        std::lock_guard<std::mutex> lock(mutex);
        compiled.insert(p.name);
      },
      [](const JitProgram& p) { return p.name; });
  // Checks, at each evaluation, that the next config of the batch was queued before it.
  struct Checking : FakeEvaluator {
    CompileAhead* ahead = nullptr;
    size_t evaluations = 0;
    Measurement evaluate(const Variant& v, const KernelConfig& c, const MeasurePolicy& p) override {
      ++evaluations;
      // Trial k (from 0) of the screening batch queued trials k+1 and k+2 (the first is never).
      EXPECT_GE(ahead->queued(), std::min(evaluations + 1, size_t(kSpace) - 1))
          << "evaluation " << evaluations << " began before the next program was queued";
      return FakeEvaluator::evaluate(v, c, p);
    }
  } checking;
  checking.ahead = &ahead;
  Store store((dir_ / "ahead.db").string());
  std::ostringstream progress;
  TuneSweep s(store, batch_, registry_, device_, Target::cpu(), checking, options, progress);
  s.set_compile_ahead(&ahead, 2);
  const TuneReport with = s.run({"attn-tune tune", "t", "c", "Release", "test", "h", ""});
  ahead.wait_idle();
  // Every config is screened, so every program was compiled ahead, once (the confirm rung finds
  // them queued already), except the very first, which its worker compiles (the confirm rung may
  // queue it).
  EXPECT_GE(ahead.queued(), size_t(kSpace) - 1);
  EXPECT_LE(ahead.queued(), size_t(kSpace));
  EXPECT_EQ(ahead.compiled(), ahead.queued());
  EXPECT_EQ(compiled.size(), ahead.queued());
  EXPECT_EQ(checking.calls, plain.calls);
  ASSERT_TRUE(with.variants[0].winner && without.variants[0].winner);
  EXPECT_EQ(with.variants[0].winner->winner.config_key,
            without.variants[0].winner->winner.config_key);
  EXPECT_EQ(with.variants[0].failed, without.variants[0].failed);
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

// A planned sweep (a shard map balanced by cost) whose shards ran on different boards of one
// model: each shard takes exactly what the map gives it, and the winners chosen over the merged
// shards measuring nothing are the winners of one sweep over the whole space.
TEST_F(TuneSweepTest, PlannedShardsOnSeveralBoardsMergeToTheWinnersOfOneSweep) {
  registry_.add(std::make_unique<SecondAxesVariant>());
  SweepPlanRequest request;
  request.batches = {&batch_};
  request.variants = registry_.matching("paged_decode.test_axes*");
  request.target = Target::cpu();
  request.strategy = "exhaustive";
  request.shards = 3;
  const auto map = std::make_shared<const ShardMap>(plan_sweep(request).map);
  ASSERT_EQ(map->entries().size(), size_t(2 * kSpace));

  TuneOptions options;
  options.strategy = "exhaustive";
  std::vector<std::string> shards;
  for (uint64_t i = 0; i < 3; ++i) {
    options.shard = parse_shard(std::to_string(i) + "/3");
    options.shard.map = map;
    shards.push_back((dir_ / ("shard" + std::to_string(i) + ".db")).string());
    DeviceRecord board = device_;
    board.uuid = "board-" + std::to_string(i);
    FakeEvaluator evaluator;
    sweep(shards.back(), options, evaluator, {}, {board});
    std::set<std::string> planned, measured;
    for (const ShardMapEntry& e : map->entries()) {
      if (e.shard == i) planned.insert(e.variant + " " + e.config_key);
    }
    Store store(shards.back());
    const std::vector<StoredMeasurement> rows = store.find_measurements({});
    for (const StoredMeasurement& m : rows) {
      measured.insert(m.measurement.variant + " " + m.measurement.config_key);
    }
    EXPECT_EQ(rows.size(), planned.size()) << "shard " << i;
    EXPECT_EQ(measured, planned) << "shard " << i;
  }
  const std::string all = (dir_ / "all.db").string();
  Store into(all);
  for (const std::string& s : shards) into.merge_from(s);
  EXPECT_EQ(into.counts().measurements, 2 * kSpace);
  EXPECT_EQ(into.counts().devices, 4);  // the sweep's device row, and a board per shard

  options.shard = Shard{};
  FakeEvaluator whole;
  const TuneReport one = sweep((dir_ / "one.db").string(), options, whole);
  DeviceRecord board0 = device_;
  board0.uuid = "board-0";
  const std::vector<StoredWinners> pooled =
      choose_stored_winners(into, {batch_.spec_hash}, {board0.fingerprint()}, "");
  ASSERT_EQ(pooled.size(), 1u);
  EXPECT_EQ(pooled[0].devices, 3u);
  ASSERT_EQ(pooled[0].variants.size(), one.variants.size());
  for (size_t v = 0; v < one.variants.size(); ++v) {
    ASSERT_TRUE(one.variants[v].winner);
    EXPECT_EQ(pooled[0].variants[v].configs, size_t(kSpace));
    EXPECT_EQ(describe_choice(pooled[0].variants[v].choice),
              describe_choice(*one.variants[v].winner));
  }
  ASSERT_TRUE(pooled[0].overall && one.overall);
  EXPECT_EQ(describe_choice(*pooled[0].overall), describe_choice(*one.overall));
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

// Two sweeps of one space on one database at once (two tuners): each case is claimed before it is
// evaluated, so between them they evaluate every config once; each ends with the whole space
// measured, answering the other's configs from the database, and both choose the same winner.
TEST_F(TuneSweepTest, TwoSweepsOnOneDatabaseShareTheSpaceAndEvaluateEachConfigOnce) {
  const std::string db = (dir_ / "shared.db").string();
  { Store create(db); }  // the schema once, before the race
  TuneOptions options;
  options.strategy = "exhaustive";
  options.claim_poll_seconds = 0.002;
  FakeEvaluator evaluators[2];
  TuneReport reports[2];
  std::thread tuners[2];
  for (int i = 0; i < 2; ++i) {
    evaluators[i].delay = std::chrono::milliseconds(3);
    tuners[i] = std::thread([&, i] {
      Store store(db);
      std::ostringstream progress;
      TuneSweep s(store, batch_, registry_, device_, Target::cpu(), evaluators[i], options,
                  progress);
      reports[i] = s.run({"attn-tune tune", "t", "c", "Release", "test", "h", ""});
    });
  }
  for (std::thread& t : tuners) t.join();
  EXPECT_EQ(evaluators[0].calls.size() + evaluators[1].calls.size(), size_t(kSpace));
  for (int i = 0; i < 2; ++i) {
    SCOPED_TRACE("tuner " + std::to_string(i));
    EXPECT_GT(evaluators[i].calls.size(), 0u);
    for (const auto& [key, n] : evaluators[i].calls) EXPECT_EQ(n, 1) << key;
    const VariantSummary& v = reports[i].variants.at(0);
    EXPECT_EQ(v.evaluated, evaluators[i].calls.size());
    EXPECT_EQ(v.evaluated + v.resumed, size_t(kSpace));
    ASSERT_TRUE(v.winner);
    EXPECT_EQ(v.winner->winner.config_key, reports[0].variants.at(0).winner->winner.config_key);
  }
  EXPECT_GT(reports[0].variants[0].by_other_tuners + reports[1].variants[0].by_other_tuners, 0u);
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM measurements"), kSpace);
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM attempts"), kSpace);
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM runs WHERE status = 'completed'"), 2);
}

// A config another live tuner holds is waited for, then answered from the result it stores; the
// rest of the space is evaluated meanwhile.
TEST_F(TuneSweepTest, AConfigAnotherTunerHoldsIsAnsweredFromItsResult) {
  const std::string db = (dir_ / "held.db").string();
  const std::string held_key = "num_splits=0,tile_tokens=16,warps=1";
  int64_t holder_run = 0, holder_attempt = 0, device = 0, workload = 0;
  {
    Store store(db);
    holder_run = store.begin_run({"attn-tune tune", "t", "c", "Release", "other", "h", ""});
    device = store.upsert_device(device_);
    workload =
        store.upsert_workload({batch_.spec_hash, batch_.spec.name, canonical_json(batch_.spec)});
    holder_attempt =
        store.begin_attempt({holder_run, device, workload, "paged_decode.test_axes", held_key,
                             "confirm", "exhaustive", 0, "0/1", std::nullopt});
    // Its owner: another live process (this test's parent).
    Statement s(store.database(),
                "UPDATE runs SET owner_host = ?, owner_pid = ?, owner_start = ? WHERE id = ?");
    s.bind(1, this_host_name())
        .bind(2, int64_t(::getppid()))
        .bind(3, process_start(::getppid()).value_or(""))
        .bind(4, holder_run);
    s.run();
  }
  std::thread holder([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    Store store(db);
    FakeEvaluator its_evaluator;
    KernelConfig config;
    for (const auto& [axis, value] : std::vector<std::pair<std::string, int64_t>>{
             {"num_splits", 0}, {"tile_tokens", 16}, {"warps", 1}}) {
      config.set(axis, value);
    }
    const Measurement m =
        its_evaluator.evaluate(*registry_.find("paged_decode.test_axes"), config, confirm_policy());
    store.finish_attempt_with(holder_attempt, holder_run, device, workload, m);
    store.finish_run(holder_run, "completed");
  });
  TuneOptions options;
  options.strategy = "exhaustive";
  options.claim_poll_seconds = 0.01;
  FakeEvaluator evaluator;
  const TuneReport report = sweep(db, options, evaluator);
  holder.join();
  const VariantSummary& v = report.variants.at(0);
  EXPECT_EQ(v.evaluated, size_t(kSpace - 1));
  EXPECT_EQ(v.resumed, 1u);
  EXPECT_EQ(v.by_other_tuners, 1u);
  EXPECT_EQ(evaluator.calls.count(held_key + "|confirm"), 0u);
  EXPECT_NE(progress_.find("another tuner is evaluating it"), std::string::npos) << progress_;
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM measurements"), kSpace);
}

TEST_F(TuneSweepTest, OnATerminalTheProgressIsOneBarClearedAtTheEnd) {
  TuneOptions options;
  options.strategy = "exhaustive";
  FakeEvaluator evaluator;
  sweep((dir_ / "bar.db").string(), options, evaluator, {}, {}, /*terminal=*/true);
  EXPECT_EQ(progress_.find('\n'), std::string::npos) << "a bar leaves no lines behind";
  EXPECT_NE(progress_.find("\r\033[K["), std::string::npos) << progress_;
  EXPECT_NE(progress_.find(std::to_string(kSpace) + "/" + std::to_string(kSpace)),
            std::string::npos);
  ASSERT_GE(progress_.size(), 4u);
  EXPECT_EQ(progress_.substr(progress_.size() - 4), "\r\033[K") << "cleared at the end";

  FakeEvaluator again;
  sweep((dir_ / "lines.db").string(), options, again);  // not a terminal: a line per trial
  EXPECT_EQ(size_t(std::count(progress_.begin(), progress_.end(), '\n')), size_t(kSpace));
  EXPECT_EQ(progress_.find('\r'), std::string::npos);
}

}  // namespace
}  // namespace attn
