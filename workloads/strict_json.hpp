// Strict JSON reading for input files (workloads today; layouts and traces later): a DOM built
// through nlohmann's SAX interface so that the parser can reject what nlohmann::json::parse
// silently accepts (duplicate keys: the last one wins) and bound what it would happily allocate
// (huge or deeply nested inputs). Problems carry where they are: a syntax error its line and
// column, anything else the JSON pointer of the value.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace attn {

struct StrictJsonLimits {
  size_t max_bytes = size_t(16) << 20;  // larger inputs are refused before parsing
  int max_depth = 64;                   // the top-level value is depth 1
  // Values (scalars and containers) in the document: bounds the DOM, which costs ~20 bytes of
  // memory per byte of input for an array of small numbers (16 MiB of "0," was 280 MB).
  size_t max_values = size_t(1) << 21;
};

struct StrictJsonResult {
  nlohmann::json value;               // the document; a duplicate key keeps its first value
  std::vector<std::string> problems;  // "line L, column C: ..." or "<pointer>: ..."; at most
                                      // kMaxListedProblems (base/errors.hpp)
  size_t omitted_problems = 0;        // found beyond those (duplicate keys)
  bool complete = false;              // parsed to the end of the input (problems may still list
                                      // duplicate keys); false after a syntax error, an input
                                      // that is too large, nested too deeply or holds too many
                                      // values
};

// Never throws on bad input; every problem found is in the result.
StrictJsonResult parse_strict_json(std::string_view text, const StrictJsonLimits& limits = {});

// One reference token of a JSON pointer (RFC 6901): "~" becomes "~0" and "/" becomes "~1".
std::string json_pointer_token(std::string_view key);

// "null", "boolean", "string", "array", "object", "integer" or "number", for messages.
std::string json_type_name(const nlohmann::json& value);

// 1-based line and column of byte `offset` of `text`; the column counts UTF-8 characters.
struct TextPosition {
  size_t line = 1;
  size_t column = 1;
};
TextPosition text_position(std::string_view text, size_t offset);

}  // namespace attn
