#include "workloads/json_field_reader.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "base/errors.hpp"
#include "base/nearest_name.hpp"
#include "workloads/strict_json.hpp"

namespace attn {

namespace {

// Decodes UTF-8 (already validated by the JSON parser; a stray byte counts as one character).
std::vector<uint32_t> code_points(const std::string& text) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < text.size();) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    int extra = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : 0;
    uint32_t cp = extra == 0 ? c : c & (0x3F >> extra);
    size_t j = 1;
    for (; j <= size_t(extra) && i + j < text.size(); ++j) {
      cp = (cp << 6) | (static_cast<unsigned char>(text[i + j]) & 0x3F);
    }
    out.push_back(cp);
    i += j;
  }
  return out;
}

// Strings from the JSON parser are valid UTF-8 already; a document built in code may not be, and
// nlohmann refuses to write such a string into the canonical form. Its own check decides.
bool valid_utf8(const std::string& text) {
  try {
    nlohmann::json(text).dump();
    return true;
  } catch (const nlohmann::json::type_error&) {
    return false;
  }
}

bool is_control(uint32_t cp) {
  return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F);
}

std::string hex_code_point(uint32_t cp) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "U+%04X", unsigned(cp));
  return buffer;
}

}  // namespace

std::string closest_spelling(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = 3;  // suggest only close spellings
  for (const auto& candidate : candidates) {
    // Lengths 3 or more apart are 3 or more edits apart: a long word costs nothing here.
    if (word.size() + 3 <= candidate.size() || candidate.size() + 3 <= word.size()) continue;
    const size_t distance = edit_distance(word, candidate);
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  return best;
}

void JsonFieldReader::add(const std::string& pointer, const std::string& message) {
  if (problems.size() < kMaxListedProblems) {
    problems.push_back(pointer + ": " + message);
  } else {
    ++omitted_problems;
  }
}

void JsonFieldReader::take_problems(const JsonFieldReader& other) {
  for (const std::string& problem : other.problems) {
    if (problems.size() < kMaxListedProblems) {
      problems.push_back(problem);
    } else {
      ++omitted_problems;
    }
  }
  omitted_problems += other.omitted_problems;
}

void JsonFieldReader::check_keys(const json& object, const std::string& pointer,
                                 const std::vector<std::string>& allowed,
                                 const std::vector<std::string>& v2_only) {
  std::vector<std::string> sorted = allowed;
  std::sort(sorted.begin(), sorted.end());
  std::string expected;
  for (const auto& key : sorted) expected += (expected.empty() ? "" : ", ") + key;
  for (const auto& item : object.items()) {
    const std::string& key = item.key();
    if (version_ < 2 && std::find(v2_only.begin(), v2_only.end(), key) != v2_only.end()) {
      add(pointer + "/" + json_pointer_token(key),
          "needs schema_version 2 (this file has schema_version " + std::to_string(version_) + ")");
      continue;
    }
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
    if (problems.size() >= kMaxListedProblems) {  // counted, not described
      ++omitted_problems;
      continue;
    }
    std::string message = "unknown key (expected one of: " + expected + ")";
    const std::string best = closest_spelling(key, sorted);
    if (!best.empty()) message += "; did you mean \"" + best + "\"?";
    add(pointer + "/" + json_pointer_token(key), message);
  }
}

const nlohmann::json* JsonFieldReader::member(const json& object, const std::string& pointer,
                                              const char* key, bool required) {
  auto it = object.find(key);
  if (it == object.end()) {
    if (required) add(pointer + "/" + key, "missing required key");
    return nullptr;
  }
  return &*it;
}

std::optional<int64_t> JsonFieldReader::integer(const json& object, const std::string& pointer,
                                                const char* key, bool required, int64_t lo,
                                                int64_t hi, bool& ok) {
  const json* value = member(object, pointer, key, required);
  if (value == nullptr) {
    if (required) ok = false;
    return std::nullopt;
  }
  std::string where = pointer + "/" + key;
  std::string range = lo == hi ? "must be " + std::to_string(lo)
                      : hi == std::numeric_limits<int64_t>::max()
                          ? "must be >= " + std::to_string(lo)
                          : "must be in " + std::to_string(lo) + ".." + std::to_string(hi);
  if (value->is_number_unsigned()) {
    uint64_t v = value->get<uint64_t>();
    if (v > uint64_t(hi) || int64_t(v) < lo) {
      add(where, range + ", got " + std::to_string(v));
      ok = false;
      return std::nullopt;
    }
    return int64_t(v);
  }
  if (value->is_number_integer()) {
    int64_t v = value->get<int64_t>();
    if (v < lo || v > hi) {
      add(where, range + ", got " + std::to_string(v));
      ok = false;
      return std::nullopt;
    }
    return v;
  }
  add(where, "expected an integer, got " + describe_wrong_type(*value));
  ok = false;
  return std::nullopt;
}

std::optional<double> JsonFieldReader::number(const json& object, const std::string& pointer,
                                              const char* key, bool required, double lo,
                                              bool lo_inclusive, bool& ok) {
  const json* value =
      typed_member(object, pointer, key, required, ok, &json::is_number, "a number");
  if (value == nullptr) return std::nullopt;
  const double v = value->get<double>();
  if (!std::isfinite(v) || (lo_inclusive ? v < lo : !(v > lo))) {
    std::ostringstream bound;
    bound << lo;
    add(pointer + "/" + key, "must be a finite number " + std::string(lo_inclusive ? ">= " : "> ") +
                                 bound.str() + ", got " + show(*value));
    ok = false;
    return std::nullopt;
  }
  return v;
}

std::optional<double> JsonFieldReader::positive_float(const json& object,
                                                      const std::string& pointer, const char* key,
                                                      bool required, bool& ok) {
  const std::optional<double> v = number(object, pointer, key, required, 0.0, false, ok);
  if (!v) return std::nullopt;
  const float as_float = static_cast<float>(*v);
  const json& value = object.at(key);
  if (!std::isfinite(as_float)) {
    add(pointer + "/" + key,
        "must be at most 3.4028235e+38 (it is used as a 32-bit float), got " + show(value));
    ok = false;
    return std::nullopt;
  }
  if (!(as_float > 0.0f)) {
    add(pointer + "/" + key,
        "rounds to 0 as a 32-bit float (the smallest positive one is 1.4e-45), got " + show(value));
    ok = false;
    return std::nullopt;
  }
  return v;
}

const nlohmann::json* JsonFieldReader::typed_member(const json& object, const std::string& pointer,
                                                    const char* key, bool required, bool& ok,
                                                    bool (json::*is)() const noexcept,
                                                    const char* kind) {
  const json* value = member(object, pointer, key, required);
  if (value == nullptr) {
    if (required) ok = false;
    return nullptr;
  }
  if (!(value->*is)()) {
    add(pointer + "/" + key,
        std::string("expected ") + kind + ", got " + describe_wrong_type(*value));
    ok = false;
    return nullptr;
  }
  return value;
}

void JsonFieldReader::check_text(const std::string& text, const std::string& pointer,
                                 size_t min_chars, size_t max_chars, bool allow_control) {
  if (!valid_utf8(text)) {
    add(pointer, "is not valid UTF-8");
    return;
  }
  std::vector<uint32_t> cps = code_points(text);
  if (cps.size() < min_chars) {
    add(pointer, "must not be empty");
  } else if (cps.size() > max_chars) {
    add(pointer, "is " + std::to_string(cps.size()) + " characters long; the limit is " +
                     std::to_string(max_chars));
  }
  if (allow_control) return;
  for (size_t i = 0; i < cps.size(); ++i) {
    if (is_control(cps[i])) {
      add(pointer, "must not contain control characters (found " + hex_code_point(cps[i]) +
                       " at character " + std::to_string(i + 1) + ")");
      return;
    }
  }
}

std::string JsonFieldReader::show(const json& value) {
  std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
  constexpr size_t kMaxLength = 60;
  if (text.size() > kMaxLength) {
    size_t cut = kMaxLength;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
    text = text.substr(0, cut) + "...";
  }
  return text;
}

std::string JsonFieldReader::describe_wrong_type(const json& value) {
  // Numbers show their value: "got number 1.5" says more than "got number".
  if (value.is_number()) return json_type_name(value) + " " + show(value);
  return json_type_name(value);
}

}  // namespace attn
