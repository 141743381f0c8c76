#include "results/store.hpp"

#include <gtest/gtest.h>

#include <unistd.h>
#include "tests/results/sample_records.hpp"

#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <thread>
#include <vector>

#include "base/errors.hpp"
#include "results/sqlite.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

RunRecord sample_run() {
  RunRecord run;
  run.tool = "attn-bench run";
  run.tool_version = "0.1.0";
  run.git_commit = "0123abcd+dirty";
  run.build_type = "Release";
  run.command_line = "attn-bench run 'my workload.json' --db=\"x.db\"";
  run.host = "node-17";
  run.started_at = "2025-01-31T12:34:56.789Z";
  return run;
}

DeviceRecord sample_device() {
  return testing::sample_h100();
}

WorkloadRecord sample_workload() {
  return {"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", "llama3_70b_decode",
          R"({"batch":8,"name":"llama3_70b_decode","page_size":16})"};
}

Measurement stored_sample() {
  Measurement m;
  m.family = "paged_decode";
  m.variant = "paged_decode.sm80_simt";
  m.config_key = "heads_per_cta=4,num_splits=0,tile_tokens=64,warps=4";
  m.config_json = R"({"heads_per_cta":4,"num_splits":0,"tile_tokens":64,"warps":4})";
  m.backend = "cuda";
  m.disposition = Disposition::passed;
  m.policy = "confirm";
  m.samples_us = {12.5, 11.25, 13.0625, 12.0, 11.875, 0.1};
  m.stats = summarize(m.samples_us);
  m.verification.checked = true;
  m.verification.max_abs_error = 0.00390625;
  m.verification.rel_l2_error = 1.5e-3;
  m.verification.nonfinite = 0;
  m.verification.elements = 8 * 64 * 128;
  m.verification.tolerance = 2e-2;
  m.verification.reference = "cpu_reference";
  m.bytes = 1.25e9;
  m.flops = 3.5e11;
  return m;
}

void expect_same(const Measurement& a, const Measurement& b) {
  EXPECT_EQ(a.family, b.family);
  EXPECT_EQ(a.variant, b.variant);
  EXPECT_EQ(a.config_key, b.config_key);
  EXPECT_EQ(a.config_json, b.config_json);
  EXPECT_EQ(a.backend, b.backend);
  EXPECT_EQ(a.disposition, b.disposition);
  EXPECT_EQ(a.reason, b.reason);
  EXPECT_EQ(a.policy, b.policy);
  EXPECT_EQ(a.samples_us, b.samples_us);  // exact: REAL is a binary64
  EXPECT_EQ(a.stats.count, b.stats.count);
  EXPECT_EQ(a.stats.median, b.stats.median);
  EXPECT_EQ(a.stats.mean, b.stats.mean);
  EXPECT_EQ(a.stats.stddev, b.stats.stddev);
  EXPECT_EQ(a.stats.min, b.stats.min);
  EXPECT_EQ(a.stats.max, b.stats.max);
  EXPECT_EQ(a.stats.p10, b.stats.p10);
  EXPECT_EQ(a.stats.p90, b.stats.p90);
  EXPECT_EQ(a.verification.checked, b.verification.checked);
  EXPECT_EQ(a.verification.max_abs_error, b.verification.max_abs_error);
  EXPECT_EQ(a.verification.rel_l2_error, b.verification.rel_l2_error);
  EXPECT_EQ(a.verification.nonfinite, b.verification.nonfinite);
  EXPECT_EQ(a.verification.elements, b.verification.elements);
  EXPECT_EQ(a.verification.tolerance, b.verification.tolerance);
  EXPECT_EQ(a.verification.reference, b.verification.reference);
  EXPECT_EQ(a.bytes, b.bytes);
  EXPECT_EQ(a.flops, b.flops);
  EXPECT_EQ(a.gbps(), b.gbps());
  EXPECT_EQ(a.tflops(), b.tflops());
}

// ----------------------------------------------------------------------------- :memory:

TEST(StoreMemory, OpensAtTheCurrentSchemaVersion) {
  Store store(":memory:");
  EXPECT_EQ(Store::kSchemaVersion, 7);
  EXPECT_EQ(store.schema_version(), Store::kSchemaVersion);
  StoreCounts c = store.counts();
  EXPECT_EQ(c.runs, 0);
  EXPECT_EQ(c.devices, 0);
  EXPECT_EQ(c.workloads, 0);
  EXPECT_EQ(c.measurements, 0);
}

TEST(StoreMemory, EmptyPathIsRefused) {
  EXPECT_THROW(Store(""), UsageError);
}

TEST(StoreMemory, BeginAndFinishRun) {
  Store store(":memory:");
  const RunRecord record = sample_run();
  const int64_t id = store.begin_run(record);
  EXPECT_GT(id, 0);
  auto running = store.run(id);
  ASSERT_TRUE(running.has_value());
  EXPECT_EQ(running->status, "running");
  EXPECT_FALSE(running->finished_at.has_value());
  EXPECT_EQ(running->record.tool, record.tool);
  EXPECT_EQ(running->record.tool_version, record.tool_version);
  EXPECT_EQ(running->record.git_commit, record.git_commit);
  EXPECT_EQ(running->record.build_type, record.build_type);
  EXPECT_EQ(running->record.command_line, record.command_line);
  EXPECT_EQ(running->record.host, record.host);
  EXPECT_EQ(running->record.started_at, record.started_at);

  store.finish_run(id, "completed");
  auto finished = store.run(id);
  ASSERT_TRUE(finished.has_value());
  EXPECT_EQ(finished->status, "completed");
  ASSERT_TRUE(finished->finished_at.has_value());
  EXPECT_TRUE(is_utc_timestamp(*finished->finished_at)) << *finished->finished_at;
  EXPECT_GE(*finished->finished_at, record.started_at);  // ISO 8601 text sorts by time

  EXPECT_EQ(store.counts().runs, 1);
  EXPECT_NE(store.begin_run(record), id);
  EXPECT_EQ(store.counts().runs, 2);
  EXPECT_FALSE(store.run(12345).has_value());
}

TEST(StoreMemory, RunStartTimeDefaultsToNowAndMustBeIso8601) {
  Store store(":memory:");
  RunRecord record = sample_run();
  record.started_at.clear();
  const std::string before = utc_timestamp_now();
  auto run = store.run(store.begin_run(record));
  ASSERT_TRUE(run.has_value());
  EXPECT_TRUE(is_utc_timestamp(run->record.started_at)) << run->record.started_at;
  EXPECT_GE(run->record.started_at, before);

  record.started_at = "31/01/2025 12:00";
  EXPECT_THROW(store.begin_run(record), Error);
  EXPECT_EQ(store.counts().runs, 1);
}

TEST(StoreMemory, FinishingAnUnknownRunThrows) {
  Store store(":memory:");
  EXPECT_THROW(store.finish_run(99, "completed"), Error);
}

TEST(StoreMemory, DeviceUpsertIsIdempotentAndRefreshesClocks) {
  Store store(":memory:");
  DeviceRecord device = sample_device();
  const int64_t id = store.upsert_device(device);
  EXPECT_EQ(store.upsert_device(device), id);
  EXPECT_EQ(store.counts().devices, 1);

  device.sm_clock_khz = 1755000;  // clocks are state, not identity
  device.memory_clock_khz = 2600000;
  EXPECT_EQ(store.upsert_device(device), id);
  EXPECT_EQ(store.counts().devices, 1);
  auto stored = store.device(id);
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(stored->sm_clock_khz, 1755000);
  EXPECT_EQ(stored->memory_clock_khz, 2600000);
  EXPECT_EQ(stored->name, device.name);
  EXPECT_EQ(stored->uuid, device.uuid);
  EXPECT_EQ(stored->memory_bytes, device.memory_bytes);
  EXPECT_EQ(stored->l2_bytes, device.l2_bytes);
  EXPECT_EQ(stored->memory_bus_bits, device.memory_bus_bits);
  EXPECT_EQ(stored->nvrtc_version, device.nvrtc_version);
  EXPECT_EQ(stored->fingerprint(), device.fingerprint());

  DeviceRecord other = sample_device();
  other.uuid = "GPU-another";
  const int64_t other_id = store.upsert_device(other);
  EXPECT_NE(other_id, id);
  other.driver_version = "580.95.05";  // the driver, known: a new device row
  const int64_t with_driver = store.upsert_device(other);
  EXPECT_NE(with_driver, other_id);
  other.driver_version = "580.159.04";  // a driver upgrade is another new row
  const int64_t upgraded = store.upsert_device(other);
  EXPECT_NE(upgraded, with_driver);
  EXPECT_EQ(store.device(upgraded)->driver_version, "580.159.04");
  EXPECT_EQ(store.device(upgraded)->cuda_driver_version, other.cuda_driver_version);
  EXPECT_EQ(store.device(with_driver)->driver_version, "580.95.05");
  EXPECT_EQ(store.device(other_id)->driver_version, "");  // unknown
  other.cuda_driver_version = "13.1";  // the driver API's CUDA version alone also tells them apart
  EXPECT_NE(store.upsert_device(other), upgraded);
  EXPECT_EQ(store.counts().devices, 5);
  EXPECT_FALSE(store.device(999).has_value());
}

TEST(StoreMemory, DeviceKindIsChecked) {
  Store store(":memory:");
  DeviceRecord device = sample_device();
  device.kind = "tpu";
  EXPECT_THROW(store.upsert_device(device), CallError);
  EXPECT_EQ(store.counts().devices, 0);
}

TEST(StoreMemory, WorkloadUpsertIsIdempotent) {
  Store store(":memory:");
  const WorkloadRecord workload = sample_workload();
  const int64_t id = store.upsert_workload(workload);
  EXPECT_EQ(store.upsert_workload(workload), id);
  EXPECT_EQ(store.counts().workloads, 1);
  auto stored = store.workload(id);
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(stored->hash, workload.hash);
  EXPECT_EQ(stored->name, workload.name);
  EXPECT_EQ(stored->canonical_json, workload.canonical_json);

  WorkloadRecord other = workload;
  other.hash = std::string(64, 'e');
  EXPECT_NE(store.upsert_workload(other), id);
  EXPECT_EQ(store.counts().workloads, 2);

  WorkloadRecord clash = workload;  // same hash, different text: a hashing bug
  clash.canonical_json = "{}";
  EXPECT_THROW(store.upsert_workload(clash), Error);
}

TEST(StoreMemory, MeasurementRoundTrip) {
  Store store(":memory:");
  const int64_t run = store.begin_run(sample_run());
  const int64_t device = store.upsert_device(sample_device());
  const int64_t workload = store.upsert_workload(sample_workload());

  const Measurement passed = stored_sample();
  Measurement incorrect = stored_sample();
  incorrect.variant = "paged_decode.sm90_wgmma";
  incorrect.disposition = Disposition::incorrect;
  incorrect.reason = "rel_l2 0.31 > 0.02; 'quoted' \"text\"; DROP TABLE samples;--";
  incorrect.verification.max_abs_error = std::numeric_limits<double>::quiet_NaN();
  incorrect.verification.rel_l2_error = std::numeric_limits<double>::infinity();
  incorrect.verification.nonfinite = 17;
  Measurement unsupported;
  unsupported.family = "paged_decode";
  unsupported.variant = "paged_decode.sm90_wgmma";
  unsupported.config_key = "warps=8";
  unsupported.config_json = R"({"warps":8})";
  unsupported.backend = "cuda";
  unsupported.disposition = Disposition::unsupported;
  unsupported.reason = "needs sm_90a";
  unsupported.policy = "screen";
  unsupported.bytes = 1.25e9;

  const int64_t id1 = store.add_measurement(run, device, workload, passed);
  const int64_t id2 = store.add_measurement(run, device, workload, incorrect);
  const int64_t id3 = store.add_measurement(run, device, workload, unsupported);
  EXPECT_EQ(store.counts().measurements, 3);

  auto rows = store.measurements_of_run(run);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].id, id1);
  EXPECT_EQ(rows[1].id, id2);
  EXPECT_EQ(rows[2].id, id3);
  for (const auto& row : rows) {
    EXPECT_EQ(row.run_id, run);
    EXPECT_EQ(row.device_id, device);
    EXPECT_EQ(row.workload_id, workload);
  }
  expect_same(rows[0].measurement, passed);
  EXPECT_EQ(rows[0].measurement.samples_us.size(), 6u);
  EXPECT_EQ(rows[0].measurement.stats.median, 11.9375);  // (11.875 + 12) / 2
  EXPECT_GT(rows[0].measurement.gbps(), 0);

  // A NaN error is stored as NULL and read back as NaN; infinity survives as it is.
  const Measurement& back = rows[1].measurement;
  EXPECT_TRUE(std::isnan(back.verification.max_abs_error));
  EXPECT_TRUE(std::isinf(back.verification.rel_l2_error));
  EXPECT_EQ(back.verification.nonfinite, 17);
  EXPECT_EQ(back.reason, incorrect.reason);
  EXPECT_EQ(back.disposition, Disposition::incorrect);

  expect_same(rows[2].measurement, unsupported);
  EXPECT_TRUE(rows[2].measurement.samples_us.empty());
  EXPECT_FALSE(rows[2].measurement.verification.checked);

  EXPECT_TRUE(store.measurements_of_run(run + 1).empty());
}

TEST(StoreMemory, EveryDispositionRoundTrips) {
  Store store(":memory:");
  const int64_t run = store.begin_run(sample_run());
  const int64_t device = store.upsert_device(sample_device());
  const int64_t workload = store.upsert_workload(sample_workload());
  const Disposition all[] = {Disposition::passed,        Disposition::incorrect,
                             Disposition::unsupported,   Disposition::compile_failed,
                             Disposition::launch_failed, Disposition::crashed,
                             Disposition::timed_out};
  for (Disposition d : all) {
    Measurement m = stored_sample();
    m.disposition = d;
    store.add_measurement(run, device, workload, m);
  }
  auto rows = store.measurements_of_run(run);
  ASSERT_EQ(rows.size(), std::size(all));
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].measurement.disposition, all[i]) << to_string(all[i]);
  }
}

TEST(StoreMemory, MeasurementNeedsExistingRunDeviceAndWorkload) {
  Store store(":memory:");
  const int64_t run = store.begin_run(sample_run());
  const int64_t device = store.upsert_device(sample_device());
  const int64_t workload = store.upsert_workload(sample_workload());
  try {
    store.add_measurement(run + 100, device, workload, stored_sample());
    FAIL() << "a measurement of an unknown run was accepted";
  } catch (const CallError& e) {
    EXPECT_EQ(e.status(), SQLITE_CONSTRAINT_FOREIGNKEY);
  }
  EXPECT_THROW(store.add_measurement(run, device + 100, workload, stored_sample()), CallError);
  EXPECT_THROW(store.add_measurement(run, device, workload + 100, stored_sample()), CallError);
  EXPECT_EQ(store.counts().measurements, 0);
}

TEST(StoreMemory, FailedMeasurementWritesNothing) {
  Store store(":memory:");
  const int64_t run = store.begin_run(sample_run());
  const int64_t device = store.upsert_device(sample_device());
  const int64_t workload = store.upsert_workload(sample_workload());
  Measurement m = stored_sample();
  m.samples_us.push_back(std::numeric_limits<double>::quiet_NaN());  // time_us is NOT NULL
  EXPECT_THROW(store.add_measurement(run, device, workload, m), CallError);
  // The measurement row went in before the bad sample: the transaction took it back out.
  EXPECT_EQ(store.counts().measurements, 0);
  EXPECT_TRUE(store.measurements_of_run(run).empty());
  // And the store is usable afterwards.
  EXPECT_GT(store.add_measurement(run, device, workload, stored_sample()), 0);
  EXPECT_EQ(store.counts().measurements, 1);
}

// An attempt's measurement and the attempt's finish are one transaction: both land, or (when either
// fails) neither, and the attempt stays 'started'.
TEST(StoreMemory, FinishAttemptWithWritesTheMeasurementAndTheAttemptTogether) {
  Store store(":memory:");
  const int64_t run = store.begin_run(sample_run());
  const int64_t device = store.upsert_device(sample_device());
  const int64_t workload = store.upsert_workload(sample_workload());
  const Measurement good = stored_sample();
  AttemptRecord attempt{run,       device,       workload, good.variant, good.config_key,
                        "confirm", "exhaustive", 0,        "0/1",        std::nullopt};
  const int64_t first = store.begin_attempt(attempt);
  const int64_t id = store.finish_attempt_with(first, run, device, workload, good);
  EXPECT_EQ(store.attempts_of_run(run, "finished"), 1);
  EXPECT_EQ(store.attempts_of_run(run, "started"), 0);
  {
    Statement s(store.database(), "SELECT measurement_id, disposition FROM attempts WHERE id = ?");
    s.bind(1, first);
    ASSERT_TRUE(s.step());
    EXPECT_EQ(s.column_int64(0), id);
    EXPECT_EQ(s.column_text(1), "passed");
  }

  // A bad sample fails the measurement: the attempt is not finished either.
  const int64_t second = store.begin_attempt(attempt);
  Measurement bad = stored_sample();
  bad.samples_us.push_back(std::numeric_limits<double>::quiet_NaN());  // time_us is NOT NULL
  EXPECT_THROW(store.finish_attempt_with(second, run, device, workload, bad), CallError);
  EXPECT_EQ(store.counts().measurements, 1);
  EXPECT_EQ(store.attempts_of_run(run, "started"), 1);
  EXPECT_FALSE(store.database().in_transaction());

  // An attempt that is not 'started' (finished already): the measurement is taken back out.
  EXPECT_THROW(store.finish_attempt_with(first, run, device, workload, good), Error);
  EXPECT_EQ(store.counts().measurements, 1);
  {
    Statement s(store.database(), "SELECT count(*) FROM samples");
    ASSERT_TRUE(s.step());
    EXPECT_EQ(s.column_int64(0), int64_t(good.samples_us.size()));
  }
  EXPECT_FALSE(store.database().in_transaction());
  // The started one can still be finished.
  EXPECT_GT(store.finish_attempt_with(second, run, device, workload, good), id);
  EXPECT_EQ(store.attempts_of_run(run, "started"), 0);
}

TEST(StoreMemory, HostileTextIsStoredVerbatim) {
  Store store(":memory:");
  RunRecord record = sample_run();
  record.command_line = "'); DROP TABLE runs;--";
  record.host = "x\"; DELETE FROM devices; --";
  const int64_t id = store.begin_run(record);
  store.finish_run(id, "error: '); DROP TABLE measurements;--");
  auto run = store.run(id);
  ASSERT_TRUE(run.has_value());
  EXPECT_EQ(run->record.command_line, record.command_line);
  EXPECT_EQ(run->record.host, record.host);
  EXPECT_EQ(run->status, "error: '); DROP TABLE measurements;--");
  EXPECT_EQ(store.counts().runs, 1);
}

// ------------------------------------------------------------------------------- on disk

class StoreFile : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> counter{0};
    dir_ = fs::temp_directory_path() /
           ("attn_store_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = (dir_ / "results.db").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  static std::string read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
  }

  // Runs fixed SQL on the file with a plain connection, as the sqlite3 CLI would.
  void raw_exec(const char* sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    char* error = nullptr;
    int rc = sqlite3_exec(db, sql, nullptr, nullptr, &error);
    std::string message = error != nullptr ? error : "";
    sqlite3_free(error);
    sqlite3_close(db);
    ASSERT_EQ(rc, SQLITE_OK) << message;
  }

  int64_t raw_int(const char* sql) {
    Database db(path_, SQLITE_OPEN_READONLY);
    Statement s(db, sql);
    EXPECT_TRUE(s.step());
    return s.column_int64(0);
  }

  std::string raw_text(const char* sql) {
    Database db(path_, SQLITE_OPEN_READONLY);
    Statement s(db, sql);
    EXPECT_TRUE(s.step());
    return s.column_text(0);
  }

  bool side_files_exist() const {
    return fs::exists(path_ + "-wal") || fs::exists(path_ + "-shm") ||
           fs::exists(path_ + "-journal");
  }

  fs::path dir_;
  std::string path_;
};

TEST_F(StoreFile, CreatesAWalDatabase) {
  { Store store(path_); }
  ASSERT_TRUE(fs::exists(path_));
  Database db(path_, SQLITE_OPEN_READONLY);
  Statement mode(db, "PRAGMA journal_mode");
  ASSERT_TRUE(mode.step());
  EXPECT_EQ(mode.column_text(0), "wal");
  EXPECT_EQ(raw_int("PRAGMA user_version"), Store::kSchemaVersion);
  EXPECT_EQ(raw_int("PRAGMA application_id"), 0x6174746e);
}

// Processes (here: threads with their own connections) that open one new file at the same moment
// all succeed: they race to switch it to WAL, which SQLite refuses with SQLITE_BUSY without
// waiting, and to migrate it, which one of them does while the others must not mistake the
// half-made file for another program's.
TEST_F(StoreFile, ManyOpenersOfANewFileAtOnceAllSucceed) {
  constexpr int kOpeners = 6;
  for (int round = 0; round < 15; ++round) {
    const std::string path = (dir_ / ("race" + std::to_string(round) + ".db")).string();
    std::atomic<int> ready{0};
    std::vector<std::string> errors(kOpeners);
    std::vector<std::thread> threads;
    for (int i = 0; i < kOpeners; ++i) {
      threads.emplace_back([&, i] {
        ++ready;
        while (ready.load() < kOpeners) {
        }
        try {
          Store store(path);
          store.begin_run(sample_run());
        } catch (const std::exception& e) {
          errors[size_t(i)] = e.what();
        }
      });
    }
    for (std::thread& t : threads) t.join();
    for (const std::string& e : errors) EXPECT_EQ(e, "") << "round " << round;
    Store store(path);
    EXPECT_EQ(store.counts().runs, kOpeners);
    EXPECT_EQ(store.schema_version(), Store::kSchemaVersion);
  }
}

TEST_F(StoreFile, ReopenKeepsDataAndDoesNotMigrateAgain) {
  int64_t run = 0;
  Measurement m = stored_sample();
  {
    Store store(path_);
    run = store.begin_run(sample_run());
    int64_t device = store.upsert_device(sample_device());
    int64_t workload = store.upsert_workload(sample_workload());
    store.add_measurement(run, device, workload, m);
    store.finish_run(run, "completed");
  }
  EXPECT_EQ(raw_int("SELECT count(*) FROM schema_migrations"), Store::kSchemaVersion);
  const std::string applied_at = raw_text("SELECT max(applied_at) FROM schema_migrations");

  {
    Store store(path_);
    EXPECT_EQ(store.schema_version(), Store::kSchemaVersion);
    StoreCounts c = store.counts();
    EXPECT_EQ(c.runs, 1);
    EXPECT_EQ(c.devices, 1);
    EXPECT_EQ(c.workloads, 1);
    EXPECT_EQ(c.measurements, 1);
    auto rows = store.measurements_of_run(run);
    ASSERT_EQ(rows.size(), 1u);
    expect_same(rows[0].measurement, m);
    ASSERT_TRUE(store.run(run).has_value());
    EXPECT_EQ(store.run(run)->status, "completed");
    // Upserts find the rows written by the first session.
    EXPECT_EQ(store.upsert_device(sample_device()), rows[0].device_id);
    EXPECT_EQ(store.upsert_workload(sample_workload()), rows[0].workload_id);
  }
  // A second migration would have failed on CREATE TABLE, or added a schema_migrations row.
  EXPECT_EQ(raw_int("SELECT count(*) FROM schema_migrations"), Store::kSchemaVersion);
  EXPECT_EQ(raw_text("SELECT max(applied_at) FROM schema_migrations"), applied_at);
}

TEST_F(StoreFile, TwoStoresOnOneFileSeeEachOthersRows) {
  Store writer(path_);
  Store reader(path_);
  const int64_t run = writer.begin_run(sample_run());
  EXPECT_EQ(reader.counts().runs, 1);
  ASSERT_TRUE(reader.run(run).has_value());
}

TEST_F(StoreFile, NewerSchemaIsRefusedAndLeftUntouched) {
  {
    Store store(path_);
    store.begin_run(sample_run());
  }
  raw_exec("PRAGMA user_version = 99");
  ASSERT_FALSE(side_files_exist());
  const std::string before = read_bytes(path_);
  ASSERT_FALSE(before.empty());
  try {
    Store store(path_);
    FAIL() << "a database of schema 99 was opened";
  } catch (const EnvironmentError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("newer attn-bench"), std::string::npos) << what;
    EXPECT_NE(what.find("99"), std::string::npos) << what;
    EXPECT_NE(what.find("up to " + std::to_string(Store::kSchemaVersion)), std::string::npos)
        << what;
    EXPECT_NE(what.find(path_), std::string::npos) << what;
    EXPECT_EQ(e.code(), ExitCode::environment);
  }
  EXPECT_EQ(read_bytes(path_), before);
  EXPECT_FALSE(side_files_exist());
  EXPECT_EQ(raw_int("PRAGMA user_version"), 99);
}

TEST_F(StoreFile, NewerSchemaInARollbackJournalFileIsLeftUntouched) {
  // A file the newer tool left in rollback-journal mode: refusing it must not switch it to WAL.
  raw_exec("CREATE TABLE future (x); PRAGMA user_version = 99;");
  const std::string before = read_bytes(path_);
  EXPECT_THROW(Store store(path_), EnvironmentError);
  EXPECT_EQ(read_bytes(path_), before);
  EXPECT_FALSE(side_files_exist());
  Database db(path_, SQLITE_OPEN_READONLY);
  Statement mode(db, "PRAGMA journal_mode");
  ASSERT_TRUE(mode.step());
  EXPECT_EQ(mode.column_text(0), "delete");
}

TEST_F(StoreFile, TextFileIsRefusedAndLeftUntouched) {
  {
    std::ofstream out(path_, std::ios::binary);
    out << "batch,seq_len\n8,4096\n";
    for (int i = 0; i < 100; ++i) out << "this is not a database, it is a CSV file\n";
  }
  const std::string before = read_bytes(path_);
  try {
    Store store(path_);
    FAIL() << "a text file was opened as a database";
  } catch (const EnvironmentError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(path_), std::string::npos) << what;
    EXPECT_NE(what.find("not an attn-bench database"), std::string::npos) << what;
  }
  EXPECT_EQ(read_bytes(path_), before);
  EXPECT_FALSE(side_files_exist());
}

TEST_F(StoreFile, AnotherProgramsDatabaseIsRefusedAndLeftUntouched) {
  raw_exec("CREATE TABLE contacts (name TEXT); INSERT INTO contacts VALUES ('Ada');");
  const std::string before = read_bytes(path_);
  try {
    Store store(path_);
    FAIL() << "another program's database was migrated";
  } catch (const EnvironmentError& e) {
    EXPECT_NE(std::string(e.what()).find("not an attn-bench database"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(read_bytes(path_), before);
  EXPECT_EQ(raw_int("SELECT count(*) FROM sqlite_master WHERE name = 'runs'"), 0);
}

TEST_F(StoreFile, EmptyFileBecomesADatabase) {
  { std::ofstream out(path_, std::ios::binary); }
  Store store(path_);
  EXPECT_EQ(store.schema_version(), Store::kSchemaVersion);
}

TEST_F(StoreFile, MissingDirectoryIsAnEnvironmentError) {
  try {
    Store store((dir_ / "missing" / "results.db").string());
    FAIL() << "opened a database in a missing directory";
  } catch (const EnvironmentError& e) {
    EXPECT_NE(std::string(e.what()).find("missing"), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------------------- read-only and reads

TEST_F(StoreFile, ReadOnlyOpeningOfACurrentFileWritesNothing) {
  int64_t run = 0;
  {
    Store store(path_);
    run = store.begin_run(sample_run());
    const int64_t device = store.upsert_device(sample_device());
    const int64_t workload = store.upsert_workload(sample_workload());
    store.add_measurement(run, device, workload, stored_sample());
    store.add_ceiling(sample_device().fingerprint(),
                      {kReadGbps, 3000, "read16", 30, 0.001, false, "0.3.0", "abc", ""});
    store.finish_run(run, "completed");
  }
  const std::string before = read_bytes(path_);
  {
    Store store(path_, StoreAccess::read_only);
    EXPECT_EQ(store.opening().file_schema_version, Store::kSchemaVersion);
    EXPECT_FALSE(store.opening().migrated);
    EXPECT_EQ(store.opening().journal_mode, "wal");
    EXPECT_EQ(store.opening().application_id, 0x6174746e);
    const StoreSummary s = store.summary();
    EXPECT_EQ(s.counts.runs, 1);
    EXPECT_EQ(s.counts.measurements, 1);
    ASSERT_EQ(s.devices.size(), 1u);
    EXPECT_EQ(s.devices[0].fingerprint, sample_device().fingerprint());
    EXPECT_EQ(s.devices[0].record.uuid, sample_device().uuid);
    EXPECT_EQ(s.devices[0].ceilings.value(kReadGbps), 3000.0);
    EXPECT_EQ(s.devices[0].measurements, 1);
    ASSERT_EQ(s.runs.size(), 1u);
    EXPECT_EQ(s.runs[0].first.id, run);
    EXPECT_EQ(s.runs[0].first.uid.size(), 32u);
    EXPECT_EQ(s.runs[0].second, 1);
    ASSERT_EQ(s.workloads.size(), 1u);
    EXPECT_EQ(s.workloads[0].families, std::vector<std::string>{stored_sample().family});
    EXPECT_EQ(int(s.migrations.size()), Store::kSchemaVersion);
    EXPECT_EQ(s.ceilings, 1);
    EXPECT_THROW(store.begin_run(sample_run()), CallError);
  }
  EXPECT_EQ(read_bytes(path_), before);
}

TEST_F(StoreFile, ReadOnlyOpeningRefusesNewerAndMissingFiles) {
  { Store store(path_); }
  raw_exec("PRAGMA user_version = 99");
  const std::string before = read_bytes(path_);
  try {
    Store store(path_, StoreAccess::read_only);
    FAIL() << "a database of schema 99 was opened";
  } catch (const EnvironmentError& e) {
    EXPECT_NE(std::string(e.what()).find("newer attn-bench"), std::string::npos) << e.what();
  }
  EXPECT_EQ(read_bytes(path_), before);

  const std::string missing = (dir_ / "missing.db").string();
  EXPECT_THROW(Store(missing, StoreAccess::read_only), EnvironmentError);
  EXPECT_FALSE(fs::exists(missing));
}

TEST_F(StoreFile, SummaryCountsDispositionsPoliciesAndFamilies) {
  Store store(path_);
  const int64_t run = store.begin_run(sample_run());
  const int64_t device = store.upsert_device(sample_device());
  const int64_t workload = store.upsert_workload(sample_workload());
  Measurement passed = stored_sample();
  store.add_measurement(run, device, workload, passed);
  passed.unstable = true;
  passed.policy = "screen";
  store.add_measurement(run, device, workload, passed);
  Measurement declined = stored_sample();
  declined.disposition = Disposition::unsupported;
  declined.variant = declined.family + ".other";
  declined.samples_us.clear();
  declined.stats = {};
  store.add_measurement(run, device, workload, declined);
  const StoreSummary s = store.summary();
  ASSERT_EQ(s.measurements_by_disposition.size(), 2u);
  EXPECT_EQ(s.measurements_by_disposition[0], (std::pair<std::string, int64_t>{"passed", 2}));
  EXPECT_EQ(s.measurements_by_disposition[1], (std::pair<std::string, int64_t>{"unsupported", 1}));
  EXPECT_EQ(s.unstable, 1);
  ASSERT_EQ(s.families.size(), 1u);
  EXPECT_EQ(s.families[0].variants, 2);
  EXPECT_EQ(s.families[0].measurements, 3);
  EXPECT_EQ(s.families[0].passed, 2);
  EXPECT_EQ(s.devices[0].passed, 2);
  const auto briefs = store.measurement_briefs({});
  ASSERT_EQ(briefs.size(), 3u);
  EXPECT_EQ(briefs[1].policy, "screen");
  EXPECT_TRUE(briefs[1].unstable);
  EXPECT_FALSE(briefs[2].median_us.has_value());
  MeasurementFilter only_passed;
  only_passed.passed_only = true;
  EXPECT_EQ(store.measurement_briefs(only_passed).size(), 2u);
}

}  // namespace
}  // namespace attn
