// Reads the fields of a parsed JSON document one at a time and collects every problem, as
// "<JSON pointer>: <message>", instead of stopping at the first: types, integer and number
// ranges, unknown keys (with a "did you mean" for a close spelling), keys that need a newer
// schema version, and text limits. The generic half of the workload reader (workload_spec.cpp,
// SpecReader), which adds what each field of a workload means.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace attn {

// The candidate closest to `word` within two edits (for "did you mean"), or "" when none is.
std::string closest_spelling(const std::string& word, const std::vector<std::string>& candidates);

class JsonFieldReader {
 public:
  // The first kMaxListedProblems problems (base/errors.hpp); the rest are only counted, so that a
  // document of a million unknown keys costs no more than a readable message.
  std::vector<std::string> problems;
  size_t omitted_problems = 0;

 protected:
  using json = nlohmann::json;

  // The document's schema version: check_keys refuses its `v2_only` keys in a version 1
  // document. Set it once the version field has been read.
  int version_;

  explicit JsonFieldReader(int version) : version_(version) {}

  void add(const std::string& pointer, const std::string& message);

  // Adds the problems another reader (of one section) collected, under the same limit.
  void take_problems(const JsonFieldReader& other);

  // Rejects keys outside `allowed`; keys of `v2_only` are rejected in a schema_version 1 file.
  void check_keys(const json& object, const std::string& pointer,
                  const std::vector<std::string>& allowed,
                  const std::vector<std::string>& v2_only = {});

  // The member `key` of `object`, or nullptr (reported when required).
  const json* member(const json& object, const std::string& pointer, const char* key,
                     bool required);

  // An integer field in [lo, hi]. Returns nullopt when missing or wrong (reported unless it is
  // an optional key that is absent; `ok` is cleared when something was reported).
  std::optional<int64_t> integer(const json& object, const std::string& pointer, const char* key,
                                 bool required, int64_t lo, int64_t hi, bool& ok);

  // A number field: finite, and `lo` < value (or <= with lo_inclusive). nullopt when missing or
  // wrong (reported as `integer` does).
  std::optional<double> number(const json& object, const std::string& pointer, const char* key,
                               bool required, double lo, bool lo_inclusive, bool& ok);

  // A number field > 0 that is used as a 32-bit float: it must stay finite and above 0 once
  // converted (1e39 would become infinity, 1e-50 zero). The double is returned as written.
  std::optional<double> positive_float(const json& object, const std::string& pointer,
                                       const char* key, bool required, bool& ok);

  // The member `key` if it is present and of the JSON type `is` tests for (`kind` names it in the
  // message); null otherwise, with `ok` cleared when it was required or has the wrong type.
  const json* typed_member(const json& object, const std::string& pointer, const char* key,
                           bool required, bool& ok, bool (json::*is)() const noexcept,
                           const char* kind);

  const json* object_member(const json& object, const std::string& pointer, const char* key,
                            bool required, bool& ok) {
    return typed_member(object, pointer, key, required, ok, &json::is_object, "an object");
  }

  const std::string* string_member(const json& object, const std::string& pointer, const char* key,
                                   bool required, bool& ok) {
    const json* value =
        typed_member(object, pointer, key, required, ok, &json::is_string, "a string");
    return value ? value->get_ptr<const std::string*>() : nullptr;
  }

  const json* boolean_member(const json& object, const std::string& pointer, const char* key,
                             bool& ok) {
    return typed_member(object, pointer, key, false, ok, &json::is_boolean, "a boolean");
  }

  // An optional string member naming one value of an enum (`from_string` parses it, `allowed_text`
  // lists the names for the message); `out` is left alone when the member is absent or wrong.
  template <typename Enum>
  void enum_member(const json& object, const std::string& pointer, const char* key,
                   std::optional<Enum> (*from_string)(const std::string&), const char* allowed_text,
                   Enum& out, bool& ok) {
    const std::string* text = string_member(object, pointer, key, false, ok);
    if (text == nullptr) return;
    if (auto parsed = from_string(*text)) {
      out = *parsed;
    } else {
      add(pointer + "/" + key,
          std::string("must be one of ") + allowed_text + ", got " + show(json(*text)));
      ok = false;
    }
  }

  // A text field: valid UTF-8, `min_chars` to `max_chars` characters, no control characters
  // unless `allow_control`.
  void check_text(const std::string& text, const std::string& pointer, size_t min_chars,
                  size_t max_chars, bool allow_control);

  // A value quoted for a message: short, on one line.
  static std::string show(const json& value);

  // The type of a wrong value for "expected ..., got ...": numbers also show their value.
  static std::string describe_wrong_type(const json& value);
};

}  // namespace attn
