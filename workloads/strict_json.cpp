#include "workloads/strict_json.hpp"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <utility>

#include "base/errors.hpp"

namespace attn {

using nlohmann::json;

namespace {

// Builds the DOM from SAX events, keeping the JSON pointer of the value being read so that every
// problem can say where it is.
class DomBuilder {
 public:
  DomBuilder(std::string_view text, const StrictJsonLimits& limits, StrictJsonResult& result)
      : text_(text), limits_(limits), result_(result) {}

  bool null() { return put(json(nullptr)); }
  bool boolean(bool value) { return put(json(value)); }
  bool number_integer(json::number_integer_t value) { return put(json(value)); }
  bool number_unsigned(json::number_unsigned_t value) { return put(json(value)); }
  bool number_float(json::number_float_t value, const json::string_t&) { return put(json(value)); }
  bool string(json::string_t& value) { return put(json(std::move(value))); }
  bool binary(json::binary_t& value) { return put(json::binary(std::move(value))); }

  bool start_object(std::size_t) { return open(json::object(), false); }
  bool start_array(std::size_t) { return open(json::array(), true); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(json::string_t& key) {
    Frame& frame = frames_.back();
    frame.key = key;
    frame.key_is_duplicate = frame.value->contains(key);
    if (frame.key_is_duplicate) {
      if (result_.problems.size() < kMaxListedProblems) {
        result_.problems.push_back(pointer() + ": duplicate key");
      } else {
        ++result_.omitted_problems;
      }
    }
    return true;
  }

  bool parse_error(std::size_t position, const std::string& last_token,
                   const nlohmann::json::exception& ex) {
    // nlohmann counts the offending character as read: it sits at position - 1 (at the end of
    // the input, one past the last byte).
    size_t offset = position == 0 ? 0 : position - 1;
    if (offset > text_.size()) offset = text_.size();
    // An unexpected string or number has been read whole by then (a missing comma is reported
    // at the end of the next key): point at its first character instead. Its token text is
    // exact for these two kinds, so it is found just before the offset.
    const std::string what = ex.what();
    const bool whole_token = what.find("unexpected string literal") != std::string::npos ||
                             what.find("unexpected number literal") != std::string::npos;
    const size_t end = offset + 1;
    if (whole_token && !last_token.empty() && last_token.size() <= end && end <= text_.size() &&
        text_.substr(end - last_token.size(), last_token.size()) == last_token) {
      offset = end - last_token.size();
    }
    TextPosition where = text_position(text_, offset);
    result_.problems.push_back("line " + std::to_string(where.line) + ", column " +
                               std::to_string(where.column) + ": " + describe(ex));
    return false;
  }

 private:
  struct Frame {
    json* value = nullptr;
    bool is_array = false;
    size_t index = 0;               // arrays: index of the next element
    std::string key;                // objects: key of the next value
    bool key_is_duplicate = false;  // the next value is read but not kept
    std::unique_ptr<json> owned;    // the container itself when it is not kept
  };

  // Pointer of the value about to be read.
  std::string pointer() const {
    std::string out;
    for (const Frame& frame : frames_) {
      out += '/';
      out += frame.is_array ? std::to_string(frame.index) : json_pointer_token(frame.key);
    }
    return out;
  }

  // Stores a scalar (or an empty container) in its parent; returns where it now lives, or
  // nullptr when it is the value of a duplicate key and is not kept. (The children of a value
  // that is not kept are still built, into storage its frame owns, so that duplicates inside it
  // are found too.)
  json* place(json value) {
    if (frames_.empty()) {
      result_.value = std::move(value);
      return &result_.value;
    }
    Frame& parent = frames_.back();
    json* stored = nullptr;
    if (parent.is_array || !parent.key_is_duplicate) {
      if (parent.is_array) {
        parent.value->push_back(std::move(value));
        stored = &parent.value->back();
      } else {
        stored = &(*parent.value)[parent.key];
        *stored = std::move(value);
      }
    }
    return stored;
  }

  // Moves an array past the element just read (a container: once it is closed, so that the
  // pointers inside it name it by its own index).
  void advance() {
    if (!frames_.empty() && frames_.back().is_array) ++frames_.back().index;
  }

  bool put(json value) {
    if (!count_value()) return false;
    place(std::move(value));
    advance();
    return true;
  }

  // Counts one more value; false (with the problem) past the limit.
  bool count_value() {
    if (++values_ <= limits_.max_values) return true;
    std::string where = pointer();
    result_.problems.push_back((where.empty() ? std::string("(top level)") : where) +
                               ": the document holds more than " +
                               std::to_string(limits_.max_values) + " values");
    return false;
  }

  bool open(json container, bool is_array) {
    if (!count_value()) return false;
    if (int(frames_.size()) + 1 > limits_.max_depth) {
      std::string where = pointer();
      result_.problems.push_back((where.empty() ? std::string("(top level)") : where) +
                                 ": nested deeper than " + std::to_string(limits_.max_depth) +
                                 " levels");
      return false;
    }
    Frame frame;
    frame.is_array = is_array;
    frame.value = place(std::move(container));
    if (frame.value == nullptr) {
      frame.owned = std::make_unique<json>(is_array ? json::array() : json::object());
      frame.value = frame.owned.get();
    }
    frames_.push_back(std::move(frame));
    return true;
  }

  bool close() {
    frames_.pop_back();
    advance();
    return true;
  }

  // nlohmann quotes what it read last ("last read: '...'"), which can run over many lines of the
  // file: only the end of its last line is kept (at most 40 bytes), control characters escaped.
  static std::string one_line_excerpt(const std::string& message) {
    const std::string marker = "last read: '";
    const size_t begin = message.find(marker);
    if (begin == std::string::npos) return message;
    const size_t start = begin + marker.size();
    size_t end = message.find("'; expected ", start);  // the expected token is quoted too
    if (end == std::string::npos) end = message.rfind('\'');
    if (end == std::string::npos || end < start) return message;
    std::string excerpt = message.substr(start, end - start);
    // nlohmann writes a control character as <U+000A>; a raw one is possible in other messages.
    // The last line with something on it: a break at the very end (an unterminated string
    // stops there) is dropped first.
    const std::vector<std::string> breaks = {"<U+000A>", "<U+000D>", "\n", "\r"};
    for (bool trimmed = true; trimmed;) {
      trimmed = false;
      for (const std::string& line_break : breaks) {
        if (excerpt.size() >= line_break.size() &&
            excerpt.compare(excerpt.size() - line_break.size(), line_break.size(), line_break) ==
                0) {
          excerpt.erase(excerpt.size() - line_break.size());
          trimmed = true;
        }
      }
    }
    size_t line_start = 0;
    for (const std::string& line_break : breaks) {
      const size_t at = excerpt.rfind(line_break);
      if (at != std::string::npos) line_start = std::max(line_start, at + line_break.size());
    }
    excerpt.erase(0, line_start);
    constexpr size_t kMaxExcerpt = 40;
    bool cut = false;
    if (excerpt.size() > kMaxExcerpt) {
      size_t from = excerpt.size() - kMaxExcerpt;
      while (from < excerpt.size() && (static_cast<unsigned char>(excerpt[from]) & 0xC0) == 0x80) {
        ++from;
      }
      excerpt.erase(0, from);
      cut = true;
    }
    std::string shown = cut ? "..." : "";
    for (char c : excerpt) {
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) {
        char escaped[8];
        std::snprintf(escaped, sizeof escaped, "\\x%02X", unsigned(static_cast<unsigned char>(c)));
        shown += escaped;
      } else {
        shown += c;
      }
    }
    return message.substr(0, start) + shown + message.substr(end);
  }

  // nlohmann's message without its "[json.exception...] parse error at line L, column C: "
  // prefix (our line and column count characters and are computed above), shortened: the "last
  // read" text of an unterminated string can be the rest of the file.
  static std::string describe(const nlohmann::json::exception& ex) {
    std::string message = ex.what();
    if (message.rfind("[json.exception.", 0) == 0) {
      size_t end = message.find("] ");
      if (end != std::string::npos) message.erase(0, end + 2);
    }
    if (message.rfind("parse error", 0) == 0) {
      size_t colon = message.find(": ");
      if (colon != std::string::npos) message.erase(0, colon + 2);
    }
    message = one_line_excerpt(message);
    constexpr size_t kMaxLength = 200;
    if (message.size() > kMaxLength) {
      size_t cut = kMaxLength;
      while (cut > 0 && (static_cast<unsigned char>(message[cut]) & 0xC0) == 0x80) --cut;
      message = message.substr(0, cut) + "...";
    }
    return message;
  }

  std::string_view text_;
  const StrictJsonLimits& limits_;
  StrictJsonResult& result_;
  std::vector<Frame> frames_;
  size_t values_ = 0;
};

}  // namespace

StrictJsonResult parse_strict_json(std::string_view text, const StrictJsonLimits& limits) {
  StrictJsonResult result;
  if (text.size() > limits.max_bytes) {
    result.problems.push_back("(top level): input is " + std::to_string(text.size()) +
                              " bytes; the limit is " + std::to_string(limits.max_bytes) +
                              " bytes");
    return result;
  }
  DomBuilder builder(text, limits, result);
  result.complete = json::sax_parse(text.begin(), text.end(), &builder);
  if (!result.complete) result.value = json();
  return result;
}

std::string json_pointer_token(std::string_view key) {
  std::string out;
  out.reserve(key.size());
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

std::string json_type_name(const json& value) {
  switch (value.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "boolean";
    case json::value_t::string:
      return "string";
    case json::value_t::array:
      return "array";
    case json::value_t::object:
      return "object";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "integer";
    case json::value_t::number_float:
      return "number";
    case json::value_t::binary:
      return "binary";
    case json::value_t::discarded:
      return "discarded";
  }
  return "unknown";
}

TextPosition text_position(std::string_view text, size_t offset) {
  if (offset > text.size()) offset = text.size();
  TextPosition where;
  size_t line_start = 0;
  for (size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++where.line;
      line_start = i + 1;
    }
  }
  for (size_t i = line_start; i < offset; ++i) {
    // UTF-8 continuation bytes (10xxxxxx) do not start a character.
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) ++where.column;
  }
  return where;
}

}  // namespace attn
