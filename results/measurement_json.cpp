#include "results/measurement_json.hpp"

#include "base/errors.hpp"

namespace attn {

namespace {

using nlohmann::json;

template <typename T>
void read(const json& j, const char* key, T& value) {
  auto it = j.find(key);
  if (it == j.end()) throw InputError("measurement JSON", {std::string("/") + key + ": missing"});
  try {
    value = it->get<T>();
  } catch (const json::exception& e) {
    throw InputError("measurement JSON", {std::string("/") + key + ": " + e.what()});
  }
}

template <typename T>
void read_optional(const json& j, const char* key, std::optional<T>& value) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    value.reset();
    return;
  }
  T v{};
  read(j, key, v);
  value = v;
}

template <typename T>
json optional_json(const std::optional<T>& value) {
  return value ? json(*value) : json(nullptr);
}

}  // namespace

nlohmann::json measurement_to_json(const Measurement& m) {
  const Statistics& s = m.stats;
  const TimingDetails& t = m.timing;
  const ClockRecord& c = m.clocks;
  const Verification& v = m.verification;
  return json{
      {"family", m.family},
      {"variant", m.variant},
      {"config_key", m.config_key},
      {"config_json", m.config_json},
      {"backend", m.backend},
      {"disposition", to_string(m.disposition)},
      {"reason", m.reason},
      {"policy", m.policy},
      {"samples_us", m.samples_us},
      {"sample_clock_mhz", m.sample_clock_mhz},
      {"sample_discarded", m.sample_discarded},
      {"stats",
       {{"count", s.count},
        {"median", s.median},
        {"mean", s.mean},
        {"stddev", s.stddev},
        {"min", s.min},
        {"max", s.max},
        {"p10", s.p10},
        {"p90", s.p90}}},
      {"timing",
       {{"timer", t.timer},
        {"launches_per_sample", t.launches_per_sample},
        {"stop_reason", t.stop_reason},
        {"noise", t.noise},
        {"noise_target", t.noise_target},
        {"warmup_samples", t.warmup_samples},
        {"discarded", t.discarded},
        {"outliers", t.outliers}}},
      {"clocks",
       {{"expected_mhz", c.expected_mhz},
        {"median_mhz", c.median_mhz},
        {"min_mhz", c.min_mhz},
        {"max_mhz", c.max_mhz},
        {"temperature_start_c", optional_json(c.temperature_start_c)},
        {"temperature_end_c", optional_json(c.temperature_end_c)},
        {"nvml_sm_clock_mhz", optional_json(c.nvml_sm_clock_mhz)},
        {"clock_event_reasons", optional_json(c.clock_event_reasons)}}},
      {"unstable", m.unstable},
      {"unstable_reason", m.unstable_reason},
      {"ceiling", m.ceiling},
      {"ceiling_fraction", optional_json(m.ceiling_fraction)},
      {"verification",
       {{"checked", v.checked},
        {"max_abs_error", v.max_abs_error},
        {"rel_l2_error", v.rel_l2_error},
        {"nonfinite", v.nonfinite},
        {"elements", v.elements},
        {"tolerance", v.tolerance},
        {"reference", v.reference}}},
      {"bytes", m.bytes},
      {"flops", m.flops},
  };
}

Measurement measurement_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw InputError("measurement JSON", {"/: not an object"});
  Measurement m;
  read(j, "family", m.family);
  read(j, "variant", m.variant);
  read(j, "config_key", m.config_key);
  read(j, "config_json", m.config_json);
  read(j, "backend", m.backend);
  std::string disposition;
  read(j, "disposition", disposition);
  const auto d = disposition_from_string(disposition);
  if (!d) throw InputError("measurement JSON", {"/disposition: unknown '" + disposition + "'"});
  m.disposition = *d;
  read(j, "reason", m.reason);
  read(j, "policy", m.policy);
  read(j, "samples_us", m.samples_us);
  read(j, "sample_clock_mhz", m.sample_clock_mhz);
  read(j, "sample_discarded", m.sample_discarded);
  json s, t, c, v;
  read(j, "stats", s);
  read(s, "count", m.stats.count);
  read(s, "median", m.stats.median);
  read(s, "mean", m.stats.mean);
  read(s, "stddev", m.stats.stddev);
  read(s, "min", m.stats.min);
  read(s, "max", m.stats.max);
  read(s, "p10", m.stats.p10);
  read(s, "p90", m.stats.p90);
  read(j, "timing", t);
  read(t, "timer", m.timing.timer);
  read(t, "launches_per_sample", m.timing.launches_per_sample);
  read(t, "stop_reason", m.timing.stop_reason);
  read(t, "noise", m.timing.noise);
  read(t, "noise_target", m.timing.noise_target);
  read(t, "warmup_samples", m.timing.warmup_samples);
  read(t, "discarded", m.timing.discarded);
  read(t, "outliers", m.timing.outliers);
  read(j, "clocks", c);
  read(c, "expected_mhz", m.clocks.expected_mhz);
  read(c, "median_mhz", m.clocks.median_mhz);
  read(c, "min_mhz", m.clocks.min_mhz);
  read(c, "max_mhz", m.clocks.max_mhz);
  read_optional(c, "temperature_start_c", m.clocks.temperature_start_c);
  read_optional(c, "temperature_end_c", m.clocks.temperature_end_c);
  read_optional(c, "nvml_sm_clock_mhz", m.clocks.nvml_sm_clock_mhz);
  read_optional(c, "clock_event_reasons", m.clocks.clock_event_reasons);
  read(j, "unstable", m.unstable);
  read(j, "unstable_reason", m.unstable_reason);
  read(j, "ceiling", m.ceiling);
  read_optional(j, "ceiling_fraction", m.ceiling_fraction);
  read(j, "verification", v);
  read(v, "checked", m.verification.checked);
  read(v, "max_abs_error", m.verification.max_abs_error);
  read(v, "rel_l2_error", m.verification.rel_l2_error);
  read(v, "nonfinite", m.verification.nonfinite);
  read(v, "elements", m.verification.elements);
  read(v, "tolerance", m.verification.tolerance);
  read(v, "reference", m.verification.reference);
  read(j, "bytes", m.bytes);
  read(j, "flops", m.flops);
  return m;
}

}  // namespace attn
