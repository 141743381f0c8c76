// Claims on a sweep's cases (Store::claim_attempt): the first claim writes the attempt; a live
// claim of another process makes the case busy; a claim whose owner is gone, whose heartbeat is
// stale or whose run is closed is taken over; a stored result answers the case; a config that
// crashed or timed out `quarantine_after` times is refused, while attempts cut off by the death of
// their tuner (left 'started') count for nothing. AttemptHeartbeat renews a run's open attempts.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "base/process_identity.hpp"
#include "results/attempt_heartbeat.hpp"
#include "results/sqlite.hpp"
#include "results/store.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

class StoreClaims : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("attn-claims-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = (dir_ / "claims.db").string();
    store_ = std::make_unique<Store>(path_);
    device_ = store_->upsert_device({"cpu", "test cpu", "host"});
    workload_ = store_->upsert_workload({"hash", "w", "{}"});
    rules_.device_ids = {device_};
  }
  void TearDown() override {
    store_.reset();
    fs::remove_all(dir_);
  }

  int64_t new_run() {
    return store_->begin_run({"attn-tune tune", "0", "c", "Release", "tune", "node", ""});
  }
  AttemptRecord attempt(int64_t run, const std::string& key = "k=1") const {
    return {run, device_, workload_, "v", key, "confirm", "exhaustive", 0, "0/1", std::nullopt};
  }
  // Makes run `id` look like another process's: `owner` as its owner.
  void give_run_to(int64_t id, const ProcessIdentity& owner) {
    Statement s(store_->database(),
                "UPDATE runs SET owner_host = ?, owner_pid = ?, owner_start = ? WHERE id = ?");
    s.bind(1, owner.host).bind(2, owner.pid).bind(3, owner.start).bind(4, id);
    s.run();
  }
  // This test's parent: alive, and another process.
  static ProcessIdentity live_other_process() {
    return {this_host_name(), ::getppid(), process_start(::getppid()).value_or("")};
  }
  Measurement result(const std::string& key, Disposition disposition) const {
    Measurement m;
    m.family = "paged_decode";
    m.variant = "v";
    m.config_key = key;
    m.config_json = "{}";
    m.backend = "cpu";
    m.policy = "confirm";
    m.disposition = disposition;
    return m;
  }

  fs::path dir_;
  std::string path_;
  std::unique_ptr<Store> store_;
  int64_t device_ = 0, workload_ = 0;
  ClaimRules rules_;
};

TEST_F(StoreClaims, ALiveClaimOfAnotherTunerMakesTheCaseBusyUntilItsResultAnswersIt) {
  const int64_t other = new_run();
  give_run_to(other, live_other_process());
  const Claim first = store_->claim_attempt(attempt(other), rules_);
  ASSERT_EQ(first.kind, Claim::Kind::claimed);
  EXPECT_GT(first.attempt_id, 0);

  const int64_t mine = new_run();
  const Claim busy = store_->claim_attempt(attempt(mine), rules_);
  EXPECT_EQ(busy.kind, Claim::Kind::busy);
  ASSERT_TRUE(busy.holder.has_value());
  EXPECT_EQ(busy.holder->pid, ::getppid());
  // Another config is free.
  EXPECT_EQ(store_->claim_attempt(attempt(mine, "k=2"), rules_).kind, Claim::Kind::claimed);

  // The holder stores its result: the case is answered from it, nothing is written.
  const int64_t id = store_->finish_attempt_with(first.attempt_id, other, device_, workload_,
                                                 result("k=1", Disposition::passed));
  const Claim answered = store_->claim_attempt(attempt(mine), rules_);
  ASSERT_EQ(answered.kind, Claim::Kind::measured);
  ASSERT_TRUE(answered.measurement.has_value());
  EXPECT_EQ(answered.measurement->id, id);
  EXPECT_EQ(store_->attempts_of_run(mine, "started"), 1);  // only k=2's
}

TEST_F(StoreClaims, AClaimWhoseOwnerIsGoneOrSilentOrClosedIsTakenOver) {
  // Gone: its pid is free.
  const int64_t dead = new_run();
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  give_run_to(dead, {this_host_name(), child, "1@x"});
  ASSERT_EQ(store_->claim_attempt(attempt(dead, "gone"), rules_).kind, Claim::Kind::claimed);
  // Silent: alive, but its heartbeat is older than the stale limit.
  const int64_t silent = new_run();
  give_run_to(silent, live_other_process());
  const Claim old = store_->claim_attempt(attempt(silent, "silent"), rules_);
  ASSERT_EQ(old.kind, Claim::Kind::claimed);
  {
    Statement s(store_->database(),
                "UPDATE attempts SET heartbeat_at = '2020-01-01T00:00:00.000Z' WHERE id = ?");
    s.bind(1, old.attempt_id);
    s.run();
  }
  // Closed: alive, beating, but its run is no longer running.
  const int64_t closed = new_run();
  give_run_to(closed, live_other_process());
  ASSERT_EQ(store_->claim_attempt(attempt(closed, "closed"), rules_).kind, Claim::Kind::claimed);
  store_->finish_run(closed, "interrupted");

  const int64_t mine = new_run();
  for (const char* key : {"gone", "silent", "closed"}) {
    SCOPED_TRACE(key);
    const Claim taken = store_->claim_attempt(attempt(mine, key), rules_);
    EXPECT_EQ(taken.kind, Claim::Kind::claimed);
  }
  EXPECT_EQ(store_->attempts_of_run(mine, "started"), 3);
  // The abandoned attempts stay as they were: a record of what was cut off.
  Statement open(store_->database(), "SELECT count(*) FROM attempts WHERE status = 'started'");
  ASSERT_TRUE(open.step());
  EXPECT_EQ(open.column_int64(0), 6);
  // A generous stale limit keeps the silent one busy.
  ClaimRules patient = rules_;
  patient.stale_seconds = 1e12;
  const int64_t later = new_run();
  EXPECT_EQ(store_->claim_attempt(attempt(later, "silent"), patient).kind, Claim::Kind::busy);
}

TEST_F(StoreClaims, OnlyFinishedCrashesAndTimeoutsCountTowardsTheQuarantine) {
  rules_.quarantine_after = 2;
  const int64_t run = new_run();
  // Three attempts cut off by kills (left 'started', their owner this live process's run) and
  // one crash: not quarantined.
  for (int i = 0; i < 3; ++i) store_->begin_attempt(attempt(run));
  const int64_t crashed = store_->begin_attempt(attempt(run));
  store_->finish_attempt_with(crashed, run, device_, workload_,
                              result("k=1", Disposition::crashed));
  {
    Statement s(store_->database(), "UPDATE attempts SET heartbeat_at = NULL");
    s.run();  // no live claim in the way
  }
  const std::vector<AttemptFailures> failures = store_->attempt_failures(workload_, device_, "v");
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_EQ(failures[0].count, 1);
  EXPECT_EQ(store_->claim_attempt(attempt(run), rules_).kind, Claim::Kind::claimed);
  // A second crash (a timeout counts the same) quarantines it; a crashed result answers nothing.
  Statement s(store_->database(),
              "UPDATE attempts SET status = 'finished', disposition = 'timed_out' WHERE id = "
              "(SELECT max(id) FROM attempts)");
  s.run();
  const Claim refused = store_->claim_attempt(attempt(run), rules_);
  EXPECT_EQ(refused.kind, Claim::Kind::quarantined);
  EXPECT_EQ(refused.failures, 2);
}

TEST_F(StoreClaims, AResultOnAnyOfTheSweepsDevicesAnswersTheCase) {
  const int64_t second = store_->upsert_device({"cpu", "test cpu", "host-2"});
  const int64_t run = new_run();
  const int64_t on_second = store_->begin_attempt(
      {run, second, workload_, "v", "k=1", "confirm", "exhaustive", 0, "0/1", std::nullopt});
  store_->finish_attempt_with(on_second, run, second, workload_,
                              result("k=1", Disposition::passed));
  EXPECT_EQ(store_->claim_attempt(attempt(run), rules_).kind, Claim::Kind::claimed);
  rules_.device_ids = {device_, second};
  EXPECT_EQ(store_->claim_attempt(attempt(run, "k=1"), rules_).kind, Claim::Kind::measured);
}

TEST_F(StoreClaims, TheHeartbeatRenewsTheOpenAttemptsOfItsRunOnly) {
  const int64_t run = new_run(), other = new_run();
  const int64_t open = store_->begin_attempt(attempt(run));
  const int64_t done = store_->begin_attempt(attempt(run, "k=2"));
  store_->finish_attempt(done, Disposition::passed, std::nullopt);
  const int64_t others = store_->begin_attempt(attempt(other, "k=3"));
  {
    Statement s(store_->database(),
                "UPDATE attempts SET heartbeat_at = '2020-01-01T00:00:00.000Z'");
    s.run();
  }
  auto heartbeat_of = [&](int64_t id) {
    Statement s(store_->database(), "SELECT heartbeat_at FROM attempts WHERE id = ?");
    s.bind(1, id);
    EXPECT_TRUE(s.step());
    return s.column_text(0);
  };
  {
    AttemptHeartbeat heartbeat(path_, run, 0.02);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (heartbeat.beats() < 2 && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_GE(heartbeat.beats(), 2);
  }
  EXPECT_GT(heartbeat_of(open), "2020-01-01T00:00:00.000Z");
  EXPECT_EQ(heartbeat_of(done), "2020-01-01T00:00:00.000Z");
  EXPECT_EQ(heartbeat_of(others), "2020-01-01T00:00:00.000Z");
  // An in-memory database has no other reader: no thread, no beat.
  AttemptHeartbeat none(":memory:", run, 0.001);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(none.beats(), 0);
}

}  // namespace
}  // namespace attn
