#include "results/measurement_json.hpp"

#include <gtest/gtest.h>

#include "base/errors.hpp"

namespace attn {
namespace {

Measurement sample_measurement() {
  Measurement m;
  m.family = "paged_decode";
  m.variant = "paged_decode.sm80_simt";
  m.config_key = "num_splits=4,warps=4";
  m.config_json = R"({"num_splits":4,"warps":4})";
  m.backend = "cuda";
  m.disposition = Disposition::passed;
  m.policy = "confirm(noise=0.01)";
  m.samples_us = {12.5, 0.1 + 0.2, 12.75};
  m.sample_clock_mhz = {1980, 1410, 1980};
  m.sample_discarded = {false, true, false};
  m.stats = summarize({12.5, 12.75});
  m.timing = {"graph", 40, "noise", 0.004, 0.005, 9, 1, 0};
  m.clocks.expected_mhz = 1980;
  m.clocks.median_mhz = 1980;
  m.clocks.temperature_start_c = 41.5;
  m.clocks.clock_event_reasons = 4;
  m.unstable = true;
  m.unstable_reason = "33% of samples throttled";
  m.ceiling = "read_bw";
  m.ceiling_fraction = 0.71;
  m.verification = {true, 1.5e-3, 2.25e-4, 0, 4096, 1e-2, "cpu_reference"};
  m.bytes = 1.25e9;
  m.flops = 3e10;
  return m;
}

TEST(MeasurementJson, RoundTripKeepsEveryField) {
  const Measurement m = sample_measurement();
  const Measurement r = measurement_from_json(nlohmann::json::parse(measurement_to_json(m).dump()));
  EXPECT_EQ(r.family, m.family);
  EXPECT_EQ(r.variant, m.variant);
  EXPECT_EQ(r.config_key, m.config_key);
  EXPECT_EQ(r.config_json, m.config_json);
  EXPECT_EQ(r.backend, m.backend);
  EXPECT_EQ(r.disposition, m.disposition);
  EXPECT_EQ(r.policy, m.policy);
  EXPECT_EQ(r.samples_us, m.samples_us);  // exact: 0.1 + 0.2 survives the text form
  EXPECT_EQ(r.sample_clock_mhz, m.sample_clock_mhz);
  EXPECT_EQ(r.sample_discarded, m.sample_discarded);
  EXPECT_EQ(r.stats.count, 2u);
  EXPECT_EQ(r.stats.median, m.stats.median);
  EXPECT_EQ(r.stats.p90, m.stats.p90);
  EXPECT_EQ(r.timing.timer, "graph");
  EXPECT_EQ(r.timing.launches_per_sample, 40);
  EXPECT_EQ(r.timing.warmup_samples, 9);
  EXPECT_EQ(r.timing.discarded, 1);
  EXPECT_EQ(r.clocks.temperature_start_c, 41.5);
  EXPECT_FALSE(r.clocks.temperature_end_c.has_value());
  EXPECT_FALSE(r.clocks.nvml_sm_clock_mhz.has_value());
  EXPECT_EQ(r.clocks.clock_event_reasons, 4);
  EXPECT_TRUE(r.unstable);
  EXPECT_EQ(r.unstable_reason, m.unstable_reason);
  EXPECT_EQ(r.ceiling, "read_bw");
  EXPECT_EQ(r.ceiling_fraction, 0.71);
  EXPECT_TRUE(r.verification.checked);
  EXPECT_EQ(r.verification.rel_l2_error, 2.25e-4);
  EXPECT_EQ(r.verification.elements, 4096);
  EXPECT_EQ(r.verification.reference, "cpu_reference");
  EXPECT_EQ(r.bytes, m.bytes);
  EXPECT_EQ(r.flops, m.flops);
}

TEST(MeasurementJson, FailedMeasurementRoundTrips) {
  Measurement m;
  m.variant = "x.y";
  m.disposition = Disposition::timed_out;
  m.reason = "passed the 2 s deadline";
  const Measurement r = measurement_from_json(measurement_to_json(m));
  EXPECT_EQ(r.disposition, Disposition::timed_out);
  EXPECT_EQ(r.reason, m.reason);
  EXPECT_TRUE(r.samples_us.empty());
  EXPECT_FALSE(r.ceiling_fraction.has_value());
}

TEST(MeasurementJson, MissingOrBadFieldsAreNamed) {
  nlohmann::json j = measurement_to_json(sample_measurement());
  j.erase("policy");
  try {
    measurement_from_json(j);
    FAIL() << "accepted a measurement without a policy";
  } catch (const InputError& e) {
    EXPECT_NE(e.problems().front().find("/policy"), std::string::npos);
  }
  j = measurement_to_json(sample_measurement());
  j["disposition"] = "exploded";
  EXPECT_THROW(measurement_from_json(j), InputError);
  j = measurement_to_json(sample_measurement());
  j["stats"]["median"] = "fast";
  EXPECT_THROW(measurement_from_json(j), InputError);
}

}  // namespace
}  // namespace attn
