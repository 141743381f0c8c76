// Migration from every earlier schema (tests/results/fixtures/schema_vN.sql: v1 as attn-bench
// 0.1.0 wrote it, v2 and v3 as the results library before schema v3 and v4 wrote them, v4 as
// `attn-tune tune` before schema v5 wrote it, v5 as the results library before schema v6 wrote
// it) to the current one, the v2 tables and columns, v4's driver columns, v5's owners, v6's
// unique bytes and ceiling clocks, and read-only opening, which migrates a copy in memory and
// leaves the file as it was.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "base/errors.hpp"
#include "results/sqlite.hpp"
#include "results/store.hpp"
#include "tests/results/sample_records.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

class StoreMigration : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("attn_migration_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = load(1);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A fresh database file made from tests/results/fixtures/schema_v<version>.sql (replacing the
  // one an earlier load made); "" when the fixture is missing.
  std::string load(int version) {
    const std::string path = (dir_ / ("v" + std::to_string(version) + ".db")).string();
    fs::remove(path);
    std::ifstream in(std::string(ATTN_RESULTS_FIXTURES) + "/schema_v" + std::to_string(version) +
                     ".sql");
    if (!in) {
      ADD_FAILURE() << "fixture schema_v" << version << ".sql missing";
      return "";
    }
    std::stringstream sql;
    sql << in.rdbuf();
    Database db(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    db.exec(sql.str().c_str());
    return path;
  }

  int64_t scalar(const std::string& sql) { return scalar_of(path_, sql); }
  static int64_t scalar_of(const std::string& path, const std::string& sql) {
    Database db(path, SQLITE_OPEN_READONLY);
    Statement s(db, sql);
    EXPECT_TRUE(s.step());
    return s.column_int64(0);
  }

  fs::path dir_;
  std::string path_;
};

TEST_F(StoreMigration, FixtureIsAVersion1Database) {
  EXPECT_EQ(scalar("PRAGMA user_version"), 1);
  EXPECT_EQ(scalar("SELECT count(*) FROM measurements"), 1);
  EXPECT_EQ(scalar("SELECT count(*) FROM sqlite_master WHERE name = 'ceilings'"), 0);
}

TEST_F(StoreMigration, V1MigratesToV2KeepingItsRows) {
  {
    Store store(path_);
    EXPECT_EQ(store.schema_version(), Store::kSchemaVersion);
    const StoreCounts c = store.counts();
    EXPECT_EQ(c.runs, 1);
    EXPECT_EQ(c.measurements, 1);
    const auto rows = store.measurements_of_run(1);
    ASSERT_EQ(rows.size(), 1u);
    const Measurement& m = rows[0].measurement;
    EXPECT_EQ(m.disposition, Disposition::passed);
    EXPECT_EQ(m.samples_us.size(), 3u);
    EXPECT_GT(m.stats.median, 0);
    // Columns v1 did not have read back empty, never invented.
    EXPECT_TRUE(m.timing.timer.empty());
    EXPECT_FALSE(m.unstable);
    EXPECT_TRUE(m.sample_clock_mhz.empty());
    EXPECT_TRUE(m.sample_discarded.empty());
    EXPECT_FALSE(m.ceiling_fraction.has_value());
  }
  EXPECT_EQ(scalar("PRAGMA user_version"), Store::kSchemaVersion);
  EXPECT_EQ(scalar("SELECT count(*) FROM schema_migrations"), Store::kSchemaVersion);
  EXPECT_EQ(scalar("SELECT count(*) FROM sqlite_master WHERE name IN ('ceilings', "
                   "'repeat_checks')"),
            2);
  // Migrating is done once: a second open changes nothing.
  { Store again(path_); }
  EXPECT_EQ(scalar("SELECT count(*) FROM schema_migrations"), Store::kSchemaVersion);
}

TEST_F(StoreMigration, FixtureIsAVersion2Database) {
  const std::string v2 = load(2);
  EXPECT_EQ(scalar_of(v2, "PRAGMA user_version"), 2);
  EXPECT_EQ(scalar_of(v2, "PRAGMA application_id"), 0x6174746e);
  EXPECT_EQ(scalar_of(v2, "SELECT count(*) FROM measurements"), 3);
  EXPECT_EQ(scalar_of(v2, "SELECT count(*) FROM ceilings"), 2);
  EXPECT_EQ(scalar_of(v2, "SELECT count(*) FROM repeat_checks"), 1);
  EXPECT_EQ(scalar_of(v2, "SELECT count(*) FROM sqlite_master WHERE name = 'attempts'"), 0);
  EXPECT_EQ(scalar_of(v2, "SELECT count(*) FROM pragma_table_info('runs') WHERE name = 'uid'"), 0);
}

TEST_F(StoreMigration, V2MigratesToTheCurrentSchemaKeepingItsRows) {
  const std::string v2 = load(2);
  const std::string fingerprint = [&] {
    Database db(v2, SQLITE_OPEN_READONLY);
    Statement s(db, "SELECT fingerprint FROM devices");
    EXPECT_TRUE(s.step());
    return s.column_text(0);
  }();
  {
    Store store(v2);
    EXPECT_EQ(store.schema_version(), Store::kSchemaVersion);
    EXPECT_EQ(store.opening().file_schema_version, 2);
    EXPECT_TRUE(store.opening().migrated);
    const StoreCounts c = store.counts();
    EXPECT_EQ(c.runs, 1);
    EXPECT_EQ(c.devices, 1);
    EXPECT_EQ(c.workloads, 1);
    EXPECT_EQ(c.measurements, 3);
    const auto rows = store.measurements_of_run(1);
    ASSERT_EQ(rows.size(), 3u);
    // The v2 details of the first measurement read back as written, its variant under the name
    // it was stored with (today's paged_decode.sm80_simt).
    const Measurement& m = rows[0].measurement;
    EXPECT_EQ(m.variant, "paged_decode.splitkv");
    EXPECT_EQ(m.disposition, Disposition::passed);
    EXPECT_EQ(m.timing.timer, "graph");
    EXPECT_EQ(m.timing.launches_per_sample, 217);
    EXPECT_EQ(m.timing.stop_reason, "noise");
    EXPECT_EQ(m.samples_us.size(), 21u);
    ASSERT_EQ(m.sample_discarded.size(), 21u);
    EXPECT_TRUE(m.sample_discarded[6]);
    EXPECT_EQ(m.sample_clock_mhz[6], 1410);
    EXPECT_EQ(m.stats.count, 20u);  // the discarded sample is not in the statistics
    EXPECT_DOUBLE_EQ(m.stats.median, 9.21);
    EXPECT_EQ(m.clocks.temperature_end_c, 41.0);
    EXPECT_EQ(m.ceiling, "read_bw");
    ASSERT_TRUE(m.ceiling_fraction.has_value());
    EXPECT_GT(*m.ceiling_fraction, 0.8);
    EXPECT_EQ(rows[2].measurement.disposition, Disposition::unsupported);
    EXPECT_NE(rows[2].measurement.reason.find("tile_tokens"), std::string::npos);
    // Ceilings and the repeat check survive.
    const DeviceCeilings ceilings = store.ceilings(fingerprint);
    EXPECT_EQ(ceilings.value(kReadGbps), 3021.5);
    EXPECT_EQ(ceilings.value(kBf16Tflops), 712.4);
    const auto checks = store.repeat_checks_of_run(1);
    ASSERT_EQ(checks.size(), 1u);
    EXPECT_EQ(checks[0].verdict, "SAME");
    EXPECT_EQ(checks[0].second_measurement_id, rows[1].id);
    // v3: the migrated rows got distinct uids.
    const std::optional<StoredRun> run = store.run(1);
    ASSERT_TRUE(run.has_value());
    EXPECT_EQ(run->uid.size(), 32u);
    EXPECT_EQ(run->status, "completed");
    const auto briefs = store.measurement_briefs({});
    ASSERT_EQ(briefs.size(), 3u);
    EXPECT_EQ(briefs[0].uid.size(), 32u);
    EXPECT_NE(briefs[0].uid, briefs[1].uid);
    // And the v3 tables take rows.
    const int64_t attempt = store.begin_attempt(
        {1, 1, 1, "paged_decode.sm80_simt", "k", "screen", "exhaustive", 0, "0/1", std::nullopt});
    store.finish_attempt(attempt, Disposition::passed, rows[0].id);
    EXPECT_EQ(store.attempts_of_run(1, "finished"), 1);
  }
  EXPECT_EQ(scalar_of(v2, "PRAGMA user_version"), Store::kSchemaVersion);
  // The file's own history is kept and the new steps are appended.
  EXPECT_EQ(scalar_of(v2, "SELECT count(*) FROM schema_migrations"), Store::kSchemaVersion);
  EXPECT_EQ(scalar_of(v2,
                      "SELECT count(*) FROM schema_migrations WHERE version <= 2 AND "
                      "applied_at LIKE '2026-11-21T21:03:25%'"),
            2);
}

TEST_F(StoreMigration, FixtureIsAVersion4DatabaseWithAKilledRun) {
  const std::string v4 = load(4);
  EXPECT_EQ(scalar_of(v4, "PRAGMA user_version"), 4);
  EXPECT_EQ(scalar_of(v4, "SELECT count(*) FROM runs WHERE status = 'running'"), 1);
  EXPECT_EQ(scalar_of(v4, "SELECT count(*) FROM attempts WHERE status = 'started'"), 1);
  EXPECT_EQ(scalar_of(v4, "SELECT count(*) FROM winners WHERE verdict = 'winner'"), 1);
  EXPECT_EQ(scalar_of(v4,
                      "SELECT count(*) FROM pragma_table_info('runs') WHERE name = "
                      "'owner_pid'"),
            0);
}

// v5: runs get an owner process, attempts a heartbeat. Rows from before have neither: the run the
// fixture's kill left 'running' has no process to judge, so no opening closes it, and its attempt
// left 'started' does not count towards the quarantine.
TEST_F(StoreMigration, V4MigratesToV5WithoutOwnersAndLeavesItsKilledRunAlone) {
  const std::string v4 = load(4);
  Store store(v4);
  EXPECT_EQ(store.opening().file_schema_version, 4);
  EXPECT_EQ(store.opening().stale_runs_closed, 0);
  const std::vector<StoredRun> runs = store.runs();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_FALSE(runs[0].owner.has_value());
  EXPECT_FALSE(runs[1].owner.has_value());
  EXPECT_EQ(runs[0].status, "completed");
  EXPECT_EQ(runs[1].status, "running");
  EXPECT_FALSE(runs[1].finished_at.has_value());
  EXPECT_EQ(scalar_of(v4, "SELECT count(*) FROM attempts WHERE heartbeat_at IS NOT NULL"), 0);
  EXPECT_TRUE(store.attempt_failures(2, 1, "test.cpu_reference_copies").empty());
  EXPECT_EQ(store.winners_of_run(1).size(), 2u);  // the winner and the config tied with it
  // New runs record their owner.
  const int64_t run = store.begin_run({"attn-tune tune", "0", "c", "Release", "x", "h", ""});
  ASSERT_TRUE(store.run(run)->owner.has_value());
  EXPECT_EQ(store.run(run)->owner->pid, int64_t(::getpid()));
  // v6 follows v5 in the same opening: its columns are there and empty.
  EXPECT_EQ(scalar_of(v4, "SELECT count(*) FROM measurements WHERE unique_bytes IS NOT NULL"), 0);
  EXPECT_EQ(scalar_of(v4, "SELECT count(*) FROM ceilings WHERE sm_clock_mhz IS NOT NULL"), 0);
  EXPECT_EQ(scalar_of(v4, "PRAGMA user_version"), Store::kSchemaVersion);
}

TEST_F(StoreMigration, FixtureIsAVersion5Database) {
  const std::string v5 = load(5);
  EXPECT_EQ(scalar_of(v5, "PRAGMA user_version"), 5);
  EXPECT_EQ(scalar_of(v5, "PRAGMA application_id"), 0x6174746e);
  EXPECT_EQ(scalar_of(v5, "SELECT count(*) FROM measurements"), 2);
  EXPECT_EQ(scalar_of(v5, "SELECT count(*) FROM attempts"), 2);
  EXPECT_EQ(scalar_of(v5, "SELECT count(*) FROM winners"), 1);
  EXPECT_EQ(scalar_of(v5, "SELECT count(*) FROM ceilings"), 2);
  EXPECT_EQ(scalar_of(v5,
                      "SELECT count(*) FROM pragma_table_info('measurements') WHERE name = "
                      "'unique_bytes'"),
            0);
  EXPECT_EQ(scalar_of(v5, "SELECT count(*) FROM devices WHERE driver_version = '580.95.05'"), 1);
  EXPECT_EQ(scalar_of(v5, "SELECT count(*) FROM runs WHERE owner_pid IS NOT NULL"), 1);
}

TEST_F(StoreMigration, V5MigratesToTheCurrentSchemaKeepingItsRowsWithoutInventingTheV6Values) {
  const std::string v5 = load(5);
  {
    Store store(v5);
    EXPECT_EQ(store.opening().file_schema_version, 5);
    EXPECT_TRUE(store.opening().migrated);
    const auto rows = store.measurements_of_run(1);
    ASSERT_EQ(rows.size(), 2u);
    const Measurement& m = rows[0].measurement;
    EXPECT_EQ(m.variant, "paged_decode.sm90_tma");
    EXPECT_EQ(m.disposition, Disposition::passed);
    EXPECT_EQ(m.samples_us.size(), 20u);
    EXPECT_DOUBLE_EQ(m.bytes, 1.321e9);
    ASSERT_TRUE(m.ceiling_fraction.has_value());
    EXPECT_DOUBLE_EQ(*m.ceiling_fraction, 1.3212);  // stored as measured, never rewritten
    // v6: the unique bytes and the ceilings' clock were not recorded: empty, not guessed.
    EXPECT_FALSE(m.unique_bytes.has_value());
    EXPECT_EQ(rows[1].measurement.disposition, Disposition::unsupported);
    const auto winners = store.winners_of_run(1);
    ASSERT_EQ(winners.size(), 1u);
    EXPECT_EQ(winners[0].measurement_id, rows[0].id);
    EXPECT_EQ(store.attempts_of_run(1, "finished"), 2);
    const std::vector<StoredDevice> devices = store.devices();
    ASSERT_EQ(devices.size(), 1u);
    EXPECT_EQ(devices[0].record.driver_version, "580.95.05");
    const DeviceCeilings ceilings = store.ceilings(devices[0].fingerprint);
    EXPECT_EQ(ceilings.value(kBf16Tflops), 713.2);
    EXPECT_FALSE(ceilings.by_metric.at(kBf16Tflops).sm_clock_mhz.has_value());
    EXPECT_EQ(describe_clock(ceilings.by_metric.at(kBf16Tflops)), "SM clock not recorded");
    // The migrated file takes v6 values.
    CeilingRecord gemm = ceilings.by_metric.at(kBf16Tflops);
    gemm.value = 701.5;
    gemm.measured_at = "2026-11-24T10:00:00.000Z";
    gemm.sm_clock_mhz = 1620;
    store.add_ceiling(devices[0].fingerprint, gemm);
    const DeviceCeilings after = store.ceilings(devices[0].fingerprint);
    EXPECT_EQ(after.value(kBf16Tflops), 701.5);
    EXPECT_EQ(after.by_metric.at(kBf16Tflops).sm_clock_mhz, 1620.0);
    EXPECT_EQ(describe_clock(after.by_metric.at(kBf16Tflops)), "at 1620 MHz");
  }
  EXPECT_EQ(scalar_of(v5, "PRAGMA user_version"), Store::kSchemaVersion);
  EXPECT_EQ(scalar_of(v5, "SELECT count(*) FROM schema_migrations"), Store::kSchemaVersion);
  // A clock that is not positive is refused by the schema.
  Database db(v5, SQLITE_OPEN_READWRITE);
  EXPECT_THROW(db.exec("UPDATE ceilings SET sm_clock_mhz = 0 WHERE id = 1"), CallError);
}

TEST_F(StoreMigration, FixtureIsAVersion6Database) {
  const std::string v6 = load(6);
  EXPECT_EQ(scalar_of(v6, "PRAGMA user_version"), 6);
  EXPECT_EQ(scalar_of(v6, "SELECT count(*) FROM measurements"), 4);
  EXPECT_EQ(scalar_of(v6, "SELECT count(*) FROM samples"), 5);
  EXPECT_EQ(
      scalar_of(v6, "SELECT count(*) FROM pragma_table_info('measurements') WHERE name = 'plan'"),
      0);
}

TEST_F(StoreMigration, V6MigratesToTheCurrentSchemaWithNoPlanRecorded) {
  const std::string v6 = load(6);
  Store store(v6);
  EXPECT_EQ(store.opening().file_schema_version, 6);
  EXPECT_TRUE(store.opening().migrated);
  const auto rows = store.measurements_of_run(1);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].measurement.variant, "paged_decode.cpu_reference");
  EXPECT_EQ(rows[0].measurement.disposition, Disposition::passed);
  EXPECT_EQ(rows[0].measurement.samples_us.size(), 5u);
  EXPECT_TRUE(rows[0].measurement.unique_bytes.has_value());
  EXPECT_EQ(rows[0].measurement.plan, "");  // not recorded before v7: empty, not invented
  // The migrated file takes a plan.
  Measurement m = rows[0].measurement;
  m.plan = "balanced: 1 CTA per KV head";
  const int64_t run = store.begin_run(RunRecord{});
  const int64_t id = store.add_measurement(run, rows[0].device_id, rows[0].workload_id, m);
  const auto again = store.measurements_of_run(run);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].id, id);
  EXPECT_EQ(again[0].measurement.plan, "balanced: 1 CTA per KV head");
}

// v4: the old driver_version ("13.0", the CUDA version the driver supported) becomes
// cuda_driver_version, the driver's own version is unknown (''), and every fingerprint stays what
// it was and what DeviceRecord::fingerprint() computes from the migrated row, so the device keeps
// its ceilings and results; the same board seen again with its driver known is a new device.
TEST_F(StoreMigration, V3MigratesThroughV4WithTheDriverUnknown) {
  const std::string v3 = load(3);
  ASSERT_FALSE(v3.empty());
  ASSERT_EQ(scalar_of(v3, "PRAGMA user_version"), 3);
  std::vector<std::string> fingerprints;
  {
    Database db(v3, SQLITE_OPEN_READONLY);
    Statement s(db, "SELECT fingerprint FROM devices ORDER BY id");
    while (s.step()) fingerprints.push_back(s.column_text(0));
  }
  ASSERT_EQ(fingerprints.size(), 2u);  // an H100 and a CPU host
  {
    Store store(v3);
    EXPECT_EQ(store.opening().file_schema_version, 3);
    const std::vector<StoredDevice> devices = store.devices();
    ASSERT_EQ(devices.size(), 2u);
    const DeviceRecord& gpu = devices[0].record;
    EXPECT_EQ(gpu.kind, "gpu");
    EXPECT_EQ(gpu.driver_version, "");
    EXPECT_EQ(gpu.cuda_driver_version, "13.0");
    EXPECT_EQ(gpu.cuda_version, "13.0");
    EXPECT_EQ(gpu.driver_text(), "unknown (supports CUDA 13.0)");
    for (size_t i = 0; i < devices.size(); ++i) {
      EXPECT_EQ(devices[i].fingerprint, fingerprints[i]);
      EXPECT_EQ(devices[i].record.fingerprint(), fingerprints[i]) << devices[i].record.name;
    }
    EXPECT_EQ(devices[1].record.driver_text(), "-");
    EXPECT_EQ(store.ceilings(fingerprints[0]).value(kReadGbps), 3062.8);
    EXPECT_EQ(store.upsert_device(gpu), devices[0].id);  // the same device as before
    DeviceRecord known = gpu;
    known.driver_version = "580.159.04";
    const int64_t known_id = store.upsert_device(known);
    EXPECT_NE(known_id, devices[0].id);
    EXPECT_EQ(store.device(known_id)->driver_version, "580.159.04");
    EXPECT_EQ(store.device(known_id)->cuda_driver_version, "13.0");
    EXPECT_EQ(store.winners_of_run(1).size(), 1u);
    EXPECT_EQ(store.attempts_of_run(1, "finished"), 2);
  }
  EXPECT_EQ(scalar_of(v3, "PRAGMA user_version"), Store::kSchemaVersion);
  EXPECT_EQ(scalar_of(v3, "SELECT count(*) FROM devices WHERE driver_version = ''"), 2);
  EXPECT_EQ(scalar_of(v3, "SELECT count(*) FROM devices WHERE cuda_driver_version = '13.0'"), 2);
  // v5 and v6 follow v4 in the same opening: v6's columns are there and empty.
  EXPECT_EQ(scalar_of(v3, "SELECT count(*) FROM measurements WHERE unique_bytes IS NULL"),
            scalar_of(v3, "SELECT count(*) FROM measurements"));
  EXPECT_EQ(scalar_of(v3, "SELECT count(*) FROM ceilings WHERE sm_clock_mhz IS NOT NULL"), 0);
}

// Every version before this build's has a fixture, and each migrates with its rows intact: a new
// schema step needs a fixture of the version before it.
TEST_F(StoreMigration, EveryEarlierSchemaMigratesToTheCurrentOne) {
  const char* tables[] = {"runs", "devices", "workloads", "measurements", "samples"};
  for (int version = 1; version < Store::kSchemaVersion; ++version) {
    SCOPED_TRACE("schema v" + std::to_string(version));
    const std::string path = load(version);
    ASSERT_FALSE(path.empty());
    ASSERT_EQ(scalar_of(path, "PRAGMA user_version"), version);
    std::vector<int64_t> before;
    for (const char* t : tables) {
      before.push_back(scalar_of(path, std::string("SELECT count(*) FROM ") + t));
    }
    EXPECT_GT(before[3], 0) << "a fixture without measurements tests little";
    { Store store(path); }
    EXPECT_EQ(scalar_of(path, "PRAGMA user_version"), Store::kSchemaVersion);
    for (size_t i = 0; i < before.size(); ++i) {
      EXPECT_EQ(scalar_of(path, std::string("SELECT count(*) FROM ") + tables[i]), before[i])
          << tables[i];
    }
    EXPECT_EQ(scalar_of(path, "SELECT count(*) FROM schema_migrations"), Store::kSchemaVersion);
    // Every row reads back through the current code.
    Store store(path);
    EXPECT_EQ(int64_t(store.measurement_briefs({}).size()), before[3]);
    EXPECT_EQ(int64_t(store.summary().devices.size()), before[1]);
  }
}

TEST_F(StoreMigration, ReadOnlyOpeningMigratesACopyAndLeavesTheFileAlone) {
  for (int version = 1; version < Store::kSchemaVersion; ++version) {
    SCOPED_TRACE("schema v" + std::to_string(version));
    const std::string path = load(version);
    ASSERT_FALSE(path.empty());
    auto bytes = [&] {
      std::ifstream in(path, std::ios::binary);
      std::stringstream b;
      b << in.rdbuf();
      return b.str();
    };
    const std::string before = bytes();
    {
      Store store(path, StoreAccess::read_only);
      EXPECT_EQ(store.schema_version(), Store::kSchemaVersion);
      EXPECT_EQ(store.opening().file_schema_version, version);
      EXPECT_TRUE(store.opening().migrated);
      EXPECT_EQ(store.opening().access, StoreAccess::read_only);
      const StoreSummary summary = store.summary();
      EXPECT_GT(summary.counts.measurements, 0);
      EXPECT_EQ(int(summary.migrations.size()), Store::kSchemaVersion);
      // Nothing can be written through it, not even to the copy.
      EXPECT_THROW(store.begin_run({"t", "v", "c", "b", "l", "h", ""}), CallError);
    }
    EXPECT_EQ(bytes(), before);
    EXPECT_EQ(scalar_of(path, "PRAGMA user_version"), version);
  }
}

TEST_F(StoreMigration, MigratedDatabaseTakesV2Rows) {
  Store store(path_);
  const DeviceRecord device = testing::sample_h100();
  const int64_t device_id = store.upsert_device(device);
  const int64_t run = store.begin_run({"attn-bench run", "0.2.0", "abc", "Release", "x", "h", ""});
  const int64_t workload = store.upsert_workload({"hash-v2", "w", "{}"});

  Measurement m;
  m.family = "paged_decode";
  m.variant = "paged_decode.sm80_simt";
  m.backend = "cuda";
  m.disposition = Disposition::passed;
  m.policy = "confirm";
  m.samples_us = {20.0, 20.5, 31.0};
  m.sample_clock_mhz = {1980, 1975, 1200};
  m.sample_discarded = {false, false, true};
  m.stats = summarize(m.kept_samples());
  m.bytes = 1e9;
  m.timing = {"graph", 100, "noise", 0.004, 0.005, 12, 1, 0};
  m.clocks.expected_mhz = 1977.5;
  m.clocks.median_mhz = 1977.5;
  m.clocks.temperature_start_c = 41;
  m.clocks.clock_event_reasons = 0x4;
  m.unstable = true;
  m.unstable_reason = "for the test";
  m.ceiling = "read_bw";
  m.ceiling_fraction = 0.81;
  store.add_measurement(run, device_id, workload, m);
  const auto rows = store.measurements_of_run(run);
  ASSERT_EQ(rows.size(), 1u);
  const Measurement& b = rows[0].measurement;
  EXPECT_EQ(b.samples_us, m.samples_us);
  EXPECT_EQ(b.sample_clock_mhz, m.sample_clock_mhz);
  EXPECT_EQ(b.sample_discarded, m.sample_discarded);
  EXPECT_EQ(b.timing.timer, "graph");
  EXPECT_EQ(b.timing.launches_per_sample, 100);
  EXPECT_EQ(b.timing.warmup_samples, 12);
  EXPECT_DOUBLE_EQ(b.timing.noise, 0.004);
  EXPECT_EQ(b.clocks.temperature_start_c, 41.0);
  EXPECT_FALSE(b.clocks.temperature_end_c.has_value());
  EXPECT_EQ(b.clocks.clock_event_reasons, 0x4);
  EXPECT_TRUE(b.unstable);
  EXPECT_EQ(b.unstable_reason, "for the test");
  EXPECT_EQ(b.ceiling, "read_bw");
  EXPECT_EQ(b.ceiling_fraction, 0.81);
  EXPECT_EQ(b.stats.count, 2u);

  // Ceilings: the latest record of each metric wins.
  EXPECT_TRUE(store.ceilings(device.fingerprint()).empty());
  CeilingRecord read{kReadGbps, 4000,  "read16 1 GiB",
                     30,        0.001, false,
                     "0.2.0",   "abc", "2026-01-01T00:00:00.000Z"};
  store.add_ceiling(device.fingerprint(), read);
  read.value = 4100;
  read.measured_at = "2026-01-02T00:00:00.000Z";
  store.add_ceiling(device.fingerprint(), read);
  store.add_ceiling(device.fingerprint(),
                    {kBf16Tflops, 700, "gemm", 20, 0.002, false, "0.2.0", "abc", ""});
  const DeviceCeilings c = store.ceilings(device.fingerprint());
  EXPECT_EQ(c.value(kReadGbps), 4100.0);
  EXPECT_EQ(c.value(kBf16Tflops), 700.0);
  EXPECT_FALSE(c.value(kCopyGbps).has_value());
  // A ceiling for a device that was never stored breaks the foreign key.
  EXPECT_THROW(store.add_ceiling("no-such-fingerprint", read), CallError);

  // Repeat checks.
  const int64_t second = store.add_measurement(run, device_id, workload, m);
  store.add_repeat_check({run, rows[0].id, second, 0.0021, "SAME"});
  const auto checks = store.repeat_checks_of_run(run);
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_DOUBLE_EQ(checks[0].relative_difference, 0.0021);
  EXPECT_EQ(checks[0].verdict, "SAME");
}

TEST(Ceilings, FractionUsesTheFamilysBoundAndNeverInventsACeiling) {
  DeviceCeilings none;
  const CeilingFraction a = fraction_of_ceiling(Bound::memory, {3000, 0, 1, 0}, none);
  EXPECT_EQ(a.ceiling, "read_bw");
  EXPECT_FALSE(a.fraction.has_value());
  DeviceCeilings c;
  c.by_metric[kReadGbps].value = 4000;
  c.by_metric[kBf16Tflops].value = 800;
  EXPECT_DOUBLE_EQ(*fraction_of_ceiling(Bound::memory, {3000, 0, 1, 0}, c).fraction, 0.75);
  const CeilingFraction t = fraction_of_ceiling(Bound::compute, {3000, 0, 400, 0}, c);
  EXPECT_EQ(t.ceiling, "bf16_tensor");
  EXPECT_DOUBLE_EQ(*t.fraction, 0.5);
}

}  // namespace
}  // namespace attn
