// Every field of the field table survives the store and the JSON unchanged: a Measurement with each
// field set to its own value (tests/results/distinct_measurement.hpp), written and read back,
// compared field by field through the table. A field added to the table is covered here as it is.
#include <gtest/gtest.h>

#include "results/measurement_fields.hpp"
#include "results/measurement_json.hpp"
#include "results/store.hpp"
#include "tests/results/distinct_measurement.hpp"
#include "tests/results/sample_records.hpp"

namespace attn {
namespace {

void expect_every_field_equal(const Measurement& back, const Measurement& written) {
  for (const MeasurementField& f : measurement_fields()) {
    EXPECT_EQ(f.to_json(back), f.to_json(written)) << f.json_key;
  }
}

TEST(MeasurementRoundTrip, TheDistinctMeasurementHasEveryFieldSetAndStored) {
  const Measurement m = testing::distinct_measurement();
  const Measurement defaults;
  const std::vector<MeasurementField>& fields = measurement_fields();
  for (size_t i = 0; i < fields.size(); ++i) {
    const MeasurementField& f = fields[i];
    EXPECT_NE(f.to_json(m), f.to_json(defaults)) << f.json_key;
    // Each row sets its own member: setting it alone changes no other row's value.
    Measurement one = defaults;
    f.from_json(one, f.to_json(m));
    for (size_t j = 0; j < fields.size(); ++j) {
      if (j != i) {
        EXPECT_EQ(fields[j].to_json(one), fields[j].to_json(defaults))
            << f.json_key << " sets " << fields[j].json_key;
      }
    }
    if (f.column) {
      EXPECT_FALSE(std::holds_alternative<std::monostate>(sql_value(f, m))) << f.column;
    }
  }
}

TEST(MeasurementRoundTrip, EveryFieldSurvivesTheStore) {
  Store store(":memory:");
  RunRecord run;
  run.tool = "attn-bench run";
  run.tool_version = "0.1.0";
  run.git_commit = "0123abcd";
  run.build_type = "Release";
  run.command_line = "attn-bench run w.json";
  run.host = "node-1";
  const int64_t run_id = store.begin_run(run);
  const int64_t device = store.upsert_device(testing::sample_h100());
  const int64_t workload = store.upsert_workload({"ab12", "w", "{}"});
  const Measurement m = testing::distinct_measurement();
  const int64_t id = store.add_measurement(run_id, device, workload, m);

  const std::vector<StoredMeasurement> rows = store.measurements_of_run(run_id);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].id, id);
  EXPECT_EQ(rows[0].run_id, run_id);
  EXPECT_EQ(rows[0].device_id, device);
  EXPECT_EQ(rows[0].workload_id, workload);
  expect_every_field_equal(rows[0].measurement, m);

  MeasurementFilter filter;
  filter.variant = m.variant;
  const std::vector<StoredMeasurement> found = store.find_measurements(filter);
  ASSERT_EQ(found.size(), 1u);
  expect_every_field_equal(found[0].measurement, m);
}

TEST(MeasurementRoundTrip, EveryFieldSurvivesTheJson) {
  const Measurement m = testing::distinct_measurement();
  const nlohmann::json j = measurement_to_json(m);
  expect_every_field_equal(measurement_from_json(nlohmann::json::parse(j.dump())), m);
  // Every field is in the text, at its place.
  for (const MeasurementField& f : measurement_fields()) {
    const nlohmann::json& object = f.json_object ? j.at(f.json_object) : j;
    EXPECT_EQ(object.at(f.json_key), f.to_json(m)) << f.json_key;
  }
}

}  // namespace
}  // namespace attn
