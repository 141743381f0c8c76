// The stored row and the JSON of a measurement are, byte for byte, what they were before the field
// table generated them: tests/results/fixtures/measurement_{full,gated}{.json,_row.txt} were
// written from the two measurements below by the results library of commit 0f07ce2, the last
// before the table. "full" has every field set; "gated" is one not timed, not verified, with no
// samples, ceiling or clocks, whose statistics, timing details, errors and clocks the store writes
// as NULL. Fields added since (kAddedSinceTheFixtures) are left out of those comparisons and
// checked on their own.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "results/measurement_fields.hpp"
#include "results/measurement_json.hpp"
#include "results/sqlite.hpp"
#include "results/store.hpp"
#include "tests/results/sample_records.hpp"

namespace attn {
namespace {

Measurement full_measurement() {
  Measurement m;
  m.family = "flash_fwd";
  m.variant = "flash_fwd.tiled";
  m.config_key = "tile_q=64,warps=4";
  m.config_json = R"({"tile_q":64,"warps":4})";
  m.backend = "cuda";
  m.disposition = Disposition::incorrect;
  m.reason = "rel_l2 0.31 > 0.02";
  m.policy = "confirm(noise=0.01)";
  m.samples_us = {12.5, 0.1 + 0.2, 13.25};
  m.sample_clock_mhz = {1980, 1410, 1965};
  m.sample_discarded = {false, true, false};
  m.stats = {3, 12.875, 12.9, 0.125, 12.5, 13.25, 12.55, 13.1};
  m.timing = {"graph", 40, "max_time", 0.004, 0.005, 9, 1, 2};
  m.clocks.expected_mhz = 1980;
  m.clocks.median_mhz = 1975;
  m.clocks.min_mhz = 1410;
  m.clocks.max_mhz = 1985;
  m.clocks.temperature_start_c = 41.5;
  m.clocks.temperature_end_c = 44.25;
  m.clocks.nvml_sm_clock_mhz = 1965;
  m.clocks.clock_event_reasons = 4;
  m.unstable = true;
  m.unstable_reason = "noise 0.4% > 0.1% (max_time)";
  m.ceiling = "read_bw";
  m.ceiling_fraction = 0.71;
  m.verification = {true, 1.5e-3, 2.25e-4, 3, 4096, 1e-2, "cpu_reference"};
  m.bytes = 1.25e9;
  m.unique_bytes = 1.0e9;
  m.flops = 3e10;
  return m;
}

// Top-level JSON keys and columns added after the fixtures were written (schema v6: the unique
// minimum traffic; v7: the planner's choices).
const std::vector<std::string> kAddedSinceTheFixtures = {"unique_bytes", "plan"};

bool added_since_the_fixtures(const std::string& name) {
  return std::find(kAddedSinceTheFixtures.begin(), kAddedSinceTheFixtures.end(), name) !=
         kAddedSinceTheFixtures.end();
}

// The JSON in the fixtures' format: without the fields added since.
std::string fixture_format_json(const Measurement& m) {
  nlohmann::json j = measurement_to_json(m);
  for (const std::string& key : kAddedSinceTheFixtures) j.erase(key);
  return j.dump(2) + "\n";
}

Measurement gated_measurement() {
  Measurement m = full_measurement();
  m.disposition = Disposition::compile_failed;
  m.reason = "NVRTC: error";
  m.samples_us.clear();
  m.sample_clock_mhz.clear();
  m.sample_discarded.clear();
  m.stats.count = 0;
  m.timing.timer = "";
  m.clocks.expected_mhz = 0;
  m.clocks.median_mhz = -1;
  m.clocks.temperature_start_c.reset();
  m.clocks.clock_event_reasons.reset();
  m.unstable = false;
  m.unstable_reason = "";
  m.ceiling = "";
  m.ceiling_fraction.reset();
  m.verification.checked = false;
  return m;
}

std::string fixture(const std::string& name) {
  std::ifstream in(std::string(ATTN_RESULTS_FIXTURES) + "/" + name);
  EXPECT_TRUE(in.good()) << name << " missing";
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The row as "column TYPE value" lines in the schema's column order, without the ids, the uid and
// created_at (which differ from run to run). Doubles with 17 digits, text in single quotes.
std::string stored_row(Store& store, int64_t id) {
  Statement s(store.database(), "SELECT * FROM measurements WHERE id = ?");
  s.bind(1, id);
  EXPECT_TRUE(s.step());
  std::string out;
  for (int c = 0; c < s.column_count(); ++c) {
    const std::string name = s.column_name(c);
    if (name == "id" || name == "run_id" || name == "device_id" || name == "workload_id" ||
        name == "created_at" || name == "uid" || added_since_the_fixtures(name)) {
      continue;
    }
    out += name + " ";
    switch (s.column_type(c)) {
      case SQLITE_NULL:
        out += "NULL";
        break;
      case SQLITE_INTEGER:
        out += "INTEGER " + std::to_string(s.column_int64(c));
        break;
      case SQLITE_FLOAT: {
        char digits[64];
        std::snprintf(digits, sizeof digits, "%.17g", s.column_double(c));
        out += std::string("REAL ") + digits;
        break;
      }
      default:
        out += "TEXT '" + s.column_text(c) + "'";
    }
    out += "\n";
  }
  return out;
}

struct FormatsStore {
  Store store{":memory:"};
  int64_t run = 0, device = 0, workload = 0;
  FormatsStore() {
    RunRecord r;
    r.tool = "t";
    r.tool_version = "0";
    r.git_commit = "c";
    r.build_type = "Release";
    r.command_line = "x";
    r.host = "h";
    run = store.begin_run(r);
    device = store.upsert_device(testing::sample_h100());
    workload = store.upsert_workload({"ab", "w", "{}"});
  }
};

TEST(MeasurementFormats, JsonIsTheFormatBeforeTheTable) {
  EXPECT_EQ(fixture_format_json(full_measurement()), fixture("measurement_full.json"));
  EXPECT_EQ(fixture_format_json(gated_measurement()), fixture("measurement_gated.json"));
}

TEST(MeasurementFormats, JsonOfTheFormatBeforeTheTableReadsBackEveryField) {
  for (const Measurement& m : {full_measurement(), gated_measurement()}) {
    const std::string name = m.stats.count > 0 ? "measurement_full.json" : "measurement_gated.json";
    // The worker protocol requires every field: the added ones join with their defaults.
    nlohmann::json j = nlohmann::json::parse(fixture(name));
    const nlohmann::json defaults_json = measurement_to_json(Measurement{});
    for (const std::string& key : kAddedSinceTheFixtures) {
      if (!j.contains(key)) j[key] = defaults_json.at(key);
    }
    const Measurement back = measurement_from_json(j);
    const Measurement defaults;
    for (const MeasurementField& f : measurement_fields()) {
      // A field the fixture does not have reads back as its default.
      const bool added = f.json_object == nullptr && added_since_the_fixtures(f.json_key);
      EXPECT_EQ(f.to_json(back), f.to_json(added ? defaults : m)) << name << ": " << f.json_key;
    }
  }
}

TEST(MeasurementFormats, TheFieldsAddedSinceTheFixturesAreWrittenAndReadBack) {
  const nlohmann::json j = measurement_to_json(full_measurement());
  EXPECT_EQ(j.at("unique_bytes"), 1.0e9);
  FormatsStore s;
  Measurement old = full_measurement();
  old.unique_bytes.reset();  // as a result recorded before it was counted
  s.store.add_measurement(s.run, s.device, s.workload, full_measurement());
  s.store.add_measurement(s.run, s.device, s.workload, old);
  const std::vector<StoredMeasurement> rows = s.store.measurements_of_run(s.run);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].measurement.unique_bytes, 1.0e9);
  EXPECT_FALSE(rows[1].measurement.unique_bytes.has_value());
  EXPECT_TRUE(measurement_to_json(old).at("unique_bytes").is_null());
  // v7: the plan, text as written, empty when the variant plans nothing.
  Measurement planned = full_measurement();
  planned.plan = "balanced: 97 CTAs per KV head x 4 KV heads on 396 slots (3 per SM)";
  EXPECT_EQ(measurement_to_json(planned).at("plan"), planned.plan);
  s.store.add_measurement(s.run, s.device, s.workload, planned);
  EXPECT_EQ(s.store.measurements_of_run(s.run).at(2).measurement.plan, planned.plan);
  EXPECT_EQ(measurement_from_json(measurement_to_json(planned)).plan, planned.plan);
}

TEST(MeasurementFormats, StoredRowIsTheFormatBeforeTheTable) {
  FormatsStore s;
  const int64_t full = s.store.add_measurement(s.run, s.device, s.workload, full_measurement());
  const int64_t gated = s.store.add_measurement(s.run, s.device, s.workload, gated_measurement());
  EXPECT_EQ(stored_row(s.store, full), fixture("measurement_full_row.txt"));
  EXPECT_EQ(stored_row(s.store, gated), fixture("measurement_gated_row.txt"));
}

// A field the store wrote as NULL reads back as its default; every other one as it was written.
TEST(MeasurementFormats, AFieldStoredAsNullReadsBackAsItsDefault) {
  FormatsStore s;
  const Measurement gated = gated_measurement();
  s.store.add_measurement(s.run, s.device, s.workload, gated);
  const std::vector<StoredMeasurement> rows = s.store.measurements_of_run(s.run);
  ASSERT_EQ(rows.size(), 1u);
  const Measurement defaults;
  size_t nulls = 0;
  for (const MeasurementField& f : measurement_fields()) {
    const bool null = f.column && std::holds_alternative<std::monostate>(sql_value(f, gated));
    nulls += null ? 1 : 0;
    EXPECT_EQ(f.to_json(rows[0].measurement), f.to_json(null ? defaults : gated)) << f.json_key;
  }
  // 7 statistics, 8 timing details, 2 clocks, 2 NVML readings, the ceiling and its fraction, 6
  // verification numbers.
  EXPECT_EQ(nulls, 27u);
}

}  // namespace
}  // namespace attn
