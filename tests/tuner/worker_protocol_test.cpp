#include "tuner/worker_protocol.hpp"

#include <gtest/gtest.h>

#include "base/errors.hpp"
#include "measure/phase_deadlines.hpp"
#include "tuner/worker_serve.hpp"

namespace attn {
namespace {

TEST(WorkerProtocol, RequestRoundTripKeepsThePolicy) {
  PolicyOverrides overrides;
  overrides.noise = 0.01;
  overrides.timer = TimerMode::graph;
  overrides.flush_l2 = false;
  const MeasurePolicy policy = apply_overrides(confirm_policy(), overrides);
  const std::string line =
      encode_request({"paged_decode.sm80_simt", "num_splits=4,warps=4", policy});
  EXPECT_EQ(line.find('\n'), std::string::npos);
  const WorkerRequest r = decode_request(line);
  EXPECT_EQ(r.variant, "paged_decode.sm80_simt");
  EXPECT_EQ(r.config_key, "num_splits=4,warps=4");
  EXPECT_EQ(r.policy.name, policy.name);
  EXPECT_EQ(r.policy.noise, 0.01);
  EXPECT_EQ(r.policy.timer, TimerMode::graph);
  EXPECT_FALSE(r.policy.flush_l2);
  EXPECT_EQ(r.policy.min_samples, policy.min_samples);
  EXPECT_EQ(r.policy.max_seconds, policy.max_seconds);
  EXPECT_EQ(r.policy.clock_threshold, policy.clock_threshold);
}

TEST(WorkerProtocol, BadRequestsAreInputErrors) {
  EXPECT_THROW(decode_request("not json"), InputError);
  EXPECT_THROW(decode_request("[1]"), InputError);
  EXPECT_THROW(decode_request(R"({"variant": "x", "config": ""})"), InputError);
}

TEST(WorkerFaults, ParsesKindsAndPatterns) {
  const auto faults = parse_worker_faults("hang:a.b screen;abort:warps=4;;segv:x");
  ASSERT_EQ(faults.size(), 3u);
  EXPECT_EQ(faults[0].kind, "hang");
  EXPECT_EQ(faults[0].pattern, "a.b screen");
  EXPECT_EQ(faults[1].pattern, "warps=4");
  EXPECT_FALSE(faults[0].phase.has_value());
  EXPECT_TRUE(parse_worker_faults("").empty());
  EXPECT_THROW(parse_worker_faults("explode:x"), UsageError);
  EXPECT_THROW(parse_worker_faults("hang"), UsageError);
}

TEST(WorkerFaults, PhasesAndStickyFaults) {
  const auto faults = parse_worker_faults("hang@verify:a;sleep@compile:b;sticky:c");
  ASSERT_EQ(faults.size(), 3u);
  EXPECT_EQ(faults[0].kind, "hang");
  EXPECT_EQ(faults[0].phase, EvalPhase::verify);
  EXPECT_EQ(faults[1].kind, "sleep");
  EXPECT_EQ(faults[1].phase, EvalPhase::compile);
  EXPECT_EQ(faults[2].kind, "sticky");
  EXPECT_FALSE(faults[2].phase.has_value());
  EXPECT_THROW(parse_worker_faults("hang@link:a"), UsageError);
  EXPECT_THROW(parse_worker_faults("sticky@verify:a"), UsageError);
}

TEST(WorkerFaults, StartupFaultsAreMetOnlyWhileStartingAndByTheirWorkload) {
  const auto faults = parse_worker_faults("hang@startup:slow.json;exit@verify:b");
  ASSERT_EQ(faults.size(), 2u);
  EXPECT_TRUE(faults[0].at_startup);
  EXPECT_FALSE(faults[0].phase.has_value());
  EXPECT_FALSE(faults[1].at_startup);
  EXPECT_THROW(parse_worker_faults("sticky@startup:a"), UsageError);
  // A workload the pattern is not in meets nothing (a hang would never return here).
  meet_startup_faults(faults, "/tmp/fast.json");
  meet_startup_faults(parse_worker_faults("sleep@verify:fast"), "/tmp/fast.json");
}

TEST(WorkerProtocol, PhaseLinesRoundTripAndOthersAreNotPhases) {
  for (EvalPhase p : {EvalPhase::compile, EvalPhase::verify, EvalPhase::measure}) {
    EXPECT_EQ(decode_phase(nlohmann::json::parse(encode_phase(p))), p);
  }
  EXPECT_FALSE(decode_phase(nlohmann::json::parse(R"({"measurement": {}})")).has_value());
  EXPECT_FALSE(decode_phase(nlohmann::json::parse(R"({"phase": "link"})")).has_value());
}

TEST(PhaseDeadlines, ParsesASubsetOverTheBaseAndRejectsBadEntries) {
  const PhaseDeadlines d = parse_phase_deadlines("verify=60,compile=12.5", PhaseDeadlines::all(7));
  EXPECT_EQ(d.compile, 12.5);
  EXPECT_EQ(d.verify, 60);
  EXPECT_EQ(d.measure, 7);
  EXPECT_EQ(d.of(EvalPhase::verify), 60);
  EXPECT_EQ(d.describe(), "compile 12.5s, verify 60s, measure 7s");
  EXPECT_EQ(PhaseDeadlines{}.measure, 300);
  for (const char* bad : {"", "compile", "link=3", "compile=0", "compile=-1", "compile=x",
                          "compile=1,compile=2", "verify=3,"}) {
    EXPECT_THROW(parse_phase_deadlines(bad), UsageError) << bad;
  }
}

}  // namespace
}  // namespace attn
