// A Measurement with every field of the field table (results/measurement_fields.hpp) set, through
// the table's own setters, to a value unlike its default and unlike any other field's: what the
// round-trip tests write and read back, so that a field added to the table is covered without
// touching them. Every field is one the store writes (the measurement has samples, was timed and
// verified, its clocks and ceiling are set).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "results/measurement_fields.hpp"

namespace attn::testing {

// Values a field of the i-th row may take, tried in this order: the first one the field's setter
// accepts and its getter gives back unchanged is its value. All are positive or non-empty.
inline std::vector<nlohmann::json> distinct_candidates(size_t i) {
  const double n = double(i + 2);
  std::vector<nlohmann::json> out = {
      true,
      n + 0.25,
      int64_t(i + 2),
      "text of field " + std::to_string(i),
      nlohmann::json::array({n + 0.25, n + 1.5, n + 2.75}),
      nlohmann::json::array({false, true, false}),
  };
  for (const char* d : {"incorrect", "timed_out"}) out.push_back(d);  // a disposition
  return out;
}

inline Measurement distinct_measurement() {
  const Measurement defaults;
  Measurement m;
  const std::vector<MeasurementField>& fields = measurement_fields();
  for (size_t i = 0; i < fields.size(); ++i) {
    const MeasurementField& f = fields[i];
    bool set = false;
    for (const nlohmann::json& value : distinct_candidates(i)) {
      if (value == f.to_json(defaults)) continue;
      Measurement trial = m;
      try {
        f.from_json(trial, value);
      } catch (const std::exception&) {
        continue;
      }
      if (f.to_json(trial) != value) continue;
      m = trial;
      set = true;
      break;
    }
    if (!set) {
      ADD_FAILURE() << "no test value fits field '" << f.json_key
                    << "': add one of its type to distinct_candidates";
    }
  }
  return m;
}

}  // namespace attn::testing
