// A Measurement as a JSON object and back: every field of the table in
// results/measurement_fields.hpp, so a result survives the trip between an evaluation worker
// process and the orchestrator (tuner/worker_evaluator.hpp) unchanged. Doubles are written by
// nlohmann::json with enough digits to read back the same value. An optional field's key may be
// absent (read as empty).
#pragma once

#include <nlohmann/json.hpp>

#include "results/measurement.hpp"

namespace attn {

nlohmann::json measurement_to_json(const Measurement& m);
// Throws InputError naming the first missing or mistyped field.
Measurement measurement_from_json(const nlohmann::json& j);

}  // namespace attn
