// The process that owns a run (schema v4): begin_run records it, and every read-write opening
// closes as 'interrupted' the runs left 'running' by a process of this host that is gone (no such
// pid, or a pid now held by another process), with the time of their last record; runs of live
// processes, of other hosts and from before v4 are left alone, and a read-only opening changes
// nothing. close_runs_of_this_process closes this process's open runs from a connection of its
// own, for a process about to quit at once.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "base/process_identity.hpp"
#include "results/sqlite.hpp"
#include "results/store.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

RunRecord owned_run_record() {
  return {"attn-tune tune", "0.1.0", "abc", "Release", "attn-tune tune w.json", "node", ""};
}

// A pid that no process holds: a child that has exited and been reaped.
int64_t pid_of_a_reaped_child() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return pid;
}

class StoreRunOwners : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("attn-run-owners-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = (dir_ / "runs.db").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Rewrites run `id`'s owner, as another process would have written it.
  void set_owner(int64_t id, const std::string& host, int64_t pid, const std::string& start) {
    Database db(path_, SQLITE_OPEN_READWRITE);
    Statement s(db, "UPDATE runs SET owner_host = ?, owner_pid = ?, owner_start = ? WHERE id = ?");
    s.bind(1, host).bind(2, pid).bind(3, start).bind(4, id);
    s.run();
  }
  std::string status_of(int64_t id) {
    Store store(path_, StoreAccess::read_only);
    return store.run(id)->status;
  }

  fs::path dir_;
  std::string path_;
};

TEST_F(StoreRunOwners, BeginRunRecordsThisProcessAsTheOwner) {
  Store store(path_);
  const int64_t id = store.begin_run(owned_run_record());
  const std::optional<StoredRun> run = store.run(id);
  ASSERT_TRUE(run.has_value());
  ASSERT_TRUE(run->owner.has_value());
  const ProcessIdentity me = this_process();
  EXPECT_EQ(run->owner->host, me.host);
  EXPECT_EQ(run->owner->pid, me.pid);
  EXPECT_EQ(run->owner->start, me.start);
  EXPECT_EQ(run->record.host, "node");  // the host the run reports is still the record's
}

TEST_F(StoreRunOwners, TheNextWriterClosesRunsWhoseProcessIsGone) {
  int64_t dead = 0, reused = 0, alive = 0, elsewhere = 0, unowned = 0, finished = 0;
  {
    Store store(path_);
    for (int64_t* id : {&dead, &reused, &alive, &elsewhere, &unowned, &finished}) {
      *id = store.begin_run(owned_run_record());
    }
    store.finish_run(finished, "completed");
    // The dead run's last record: an attempt begun after the run started.
    const int64_t device = store.upsert_device({"cpu", "test cpu", "host"});
    const int64_t workload = store.upsert_workload({"h", "w", "{}"});
    store.begin_attempt(
        {dead, device, workload, "v", "k", "confirm", "exhaustive", 0, "0/1", std::nullopt});
  }
  const ProcessIdentity me = this_process();
  set_owner(dead, me.host, pid_of_a_reaped_child(), me.start);
  set_owner(reused, me.host, me.pid, "1@" + me.start.substr(me.start.find('@') + 1));
  set_owner(elsewhere, me.host + ".other", pid_of_a_reaped_child(), "1@x");
  {
    Database db(path_, SQLITE_OPEN_READWRITE);
    Statement s(db,
                "UPDATE runs SET owner_host = NULL, owner_pid = NULL, owner_start = NULL "
                "WHERE id = ?");
    s.bind(1, unowned);
    s.run();
  }
  // Reading changes nothing.
  EXPECT_EQ(status_of(dead), "running");

  Store store(path_);
  EXPECT_EQ(store.opening().stale_runs_closed, 2);
  EXPECT_EQ(store.run(dead)->status, "interrupted");
  EXPECT_EQ(store.run(reused)->status, "interrupted");
  EXPECT_EQ(store.run(alive)->status, "running");
  EXPECT_EQ(store.run(elsewhere)->status, "running");
  EXPECT_EQ(store.run(unowned)->status, "running");
  EXPECT_EQ(store.run(finished)->status, "completed");
  // finished_at is the time of the last record, not of the closing: here the attempt's start.
  Statement last(store.database(), "SELECT max(started_at) FROM attempts WHERE run_id = ?");
  last.bind(1, dead);
  ASSERT_TRUE(last.step());
  EXPECT_EQ(store.run(dead)->finished_at, last.column_text(0));
  EXPECT_EQ(store.run(reused)->finished_at, store.run(reused)->record.started_at);
  // Closed once: the next opening finds nothing more to close.
  Store again(path_);
  EXPECT_EQ(again.opening().stale_runs_closed, 0);
}

TEST_F(StoreRunOwners, AProcessAboutToQuitClosesItsOwnOpenRunsFromItsOwnConnection) {
  Store store(path_);
  const int64_t mine = store.begin_run(owned_run_record());
  const int64_t done = store.begin_run(owned_run_record());
  store.finish_run(done, "completed");
  const int64_t others = store.begin_run(owned_run_record());
  set_owner(others, this_host_name(), ::getppid(), process_start(::getppid()).value_or(""));
  // While this connection holds a write transaction the other one cannot: it gives up in time.
  {
    Transaction busy(store.database());
    EXPECT_EQ(Store::close_runs_of_this_process(path_, "interrupted", 100), 0);
  }
  EXPECT_EQ(Store::close_runs_of_this_process(path_, "interrupted", 2000), 1);
  EXPECT_EQ(store.run(mine)->status, "interrupted");
  EXPECT_TRUE(store.run(mine)->finished_at.has_value());
  EXPECT_EQ(store.run(done)->status, "completed");
  EXPECT_EQ(store.run(others)->status, "running");
  // A path that is no database is no error.
  EXPECT_EQ(Store::close_runs_of_this_process((dir_ / "none" / "x.db").string(), "x", 100), 0);
}

}  // namespace
}  // namespace attn
