#include "results/measurement_json.hpp"

#include "base/errors.hpp"
#include "results/measurement_fields.hpp"

namespace attn {

namespace {

using nlohmann::json;

std::string pointer(const MeasurementField& f) {
  return f.json_object ? std::string("/") + f.json_object + "/" + f.json_key
                       : std::string("/") + f.json_key;
}

[[noreturn]] void bad_field(const std::string& pointer, const std::string& why) {
  throw InputError("measurement JSON", {pointer + ": " + why});
}

}  // namespace

nlohmann::json measurement_to_json(const Measurement& m) {
  json out = json::object();
  for (const MeasurementField& f : measurement_fields()) {
    json& object = f.json_object ? out[f.json_object] : out;
    object[f.json_key] = f.to_json(m);
  }
  return out;
}

Measurement measurement_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw InputError("measurement JSON", {"/: not an object"});
  Measurement m;
  for (const MeasurementField& f : measurement_fields()) {
    const json* object = &j;
    if (f.json_object) {
      const auto it = j.find(f.json_object);
      if (it == j.end()) bad_field(std::string("/") + f.json_object, "missing");
      if (!it->is_object()) bad_field(std::string("/") + f.json_object, "not an object");
      object = &*it;
    }
    const auto it = object->find(f.json_key);
    if (it == object->end() && !f.nullable) bad_field(pointer(f), "missing");
    try {
      f.from_json(m, it == object->end() ? json(nullptr) : *it);
    } catch (const std::exception& e) {
      bad_field(pointer(f), e.what());
    }
  }
  return m;
}

}  // namespace attn
