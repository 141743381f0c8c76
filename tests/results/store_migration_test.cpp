// Migration from schema v1 (a database attn-bench 0.1.0 wrote,
// tests/results/fixtures/schema_v1.sql) to the current schema, and the v2 tables and columns.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

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
    path_ = (dir_ / "v1.db").string();
    std::ifstream in(std::string(ATTN_RESULTS_FIXTURES) + "/schema_v1.sql");
    ASSERT_TRUE(in) << "fixture missing";
    std::stringstream sql;
    sql << in.rdbuf();
    Database db(path_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    db.exec(sql.str().c_str());
  }
  void TearDown() override { fs::remove_all(dir_); }

  int64_t scalar(const std::string& sql) {
    Database db(path_, SQLITE_OPEN_READONLY);
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

TEST_F(StoreMigration, MigratedDatabaseTakesV2Rows) {
  Store store(path_);
  const DeviceRecord device = testing::sample_h100();
  const int64_t device_id = store.upsert_device(device);
  const int64_t run = store.begin_run({"attn-bench run", "0.2.0", "abc", "Release", "x", "h", ""});
  const int64_t workload = store.upsert_workload({"hash-v2", "w", "{}"});

  Measurement m;
  m.family = "paged_decode";
  m.variant = "paged_decode.splitkv";
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
  const CeilingFraction a = fraction_of_ceiling(Bound::memory, 3000, 1, none);
  EXPECT_EQ(a.ceiling, "read_bw");
  EXPECT_FALSE(a.fraction.has_value());
  DeviceCeilings c;
  c.by_metric[kReadGbps].value = 4000;
  c.by_metric[kBf16Tflops].value = 800;
  EXPECT_DOUBLE_EQ(*fraction_of_ceiling(Bound::memory, 3000, 1, c).fraction, 0.75);
  const CeilingFraction t = fraction_of_ceiling(Bound::compute, 3000, 400, c);
  EXPECT_EQ(t.ceiling, "bf16_tensor");
  EXPECT_DOUBLE_EQ(*t.fraction, 0.5);
}

}  // namespace
}  // namespace attn
