#include "workloads/trace_file.hpp"

namespace attn {

namespace {
constexpr size_t kMaxReportedProblems = 10;
}  // namespace

std::string to_string(TraceFormat format) {
  switch (format) {
    case TraceFormat::csv:
      return "csv";
    case TraceFormat::jsonl:
      return "jsonl";
    case TraceFormat::json:
      return "json";
  }
  return "?";
}

std::optional<TraceFormat> trace_format_from_string(const std::string& text) {
  if (text == "csv") return TraceFormat::csv;
  if (text == "jsonl") return TraceFormat::jsonl;
  if (text == "json") return TraceFormat::json;
  return std::nullopt;
}

TraceFormat trace_format_for(std::string_view file_name) {
  auto ends_with = [&](std::string_view tail) {
    return file_name.size() >= tail.size() &&
           file_name.substr(file_name.size() - tail.size()) == tail;
  };
  if (ends_with(".jsonl")) return TraceFormat::jsonl;
  if (ends_with(".json")) return TraceFormat::json;
  return TraceFormat::csv;
}

void TraceProblems::finish() {
  if (skipped_ > 0) out_.problems.push_back("... and " + std::to_string(skipped_) + " more lines");
  skipped_ = 0;
  if (!out_.problems.empty()) out_.rows.clear();
}

void TraceProblems::add(size_t line, const std::string& message) {
  add_located("line " + std::to_string(line), message);
}

void TraceProblems::add_located(const std::string& where, const std::string& message) {
  if (out_.problems.size() < kMaxReportedProblems) {
    out_.problems.push_back(where + ": " + message);
  } else {
    ++skipped_;
  }
}

std::string TraceProblems::got(std::string_view text) {
  if (quoted_) return {};
  quoted_ = true;
  constexpr size_t kMaxShown = 40;
  std::string shown(text.substr(0, kMaxShown));
  for (char& c : shown) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7F) c = '?';
  }
  return ", got \"" + shown + (text.size() > kMaxShown ? "...\"" : "\"");
}

int64_t trace_length(std::string_view text) {
  if (text.empty() || text.size() > 10) return -1;
  int64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return -1;
    value = value * 10 + (c - '0');
  }
  return value >= 1 && value <= kMaxTraceLength ? value : -1;
}

TraceRows parse_trace(std::string_view text, TraceFormat format, const TraceColumns& columns) {
  switch (format) {
    case TraceFormat::csv:
      return parse_trace_csv(text, columns);
    case TraceFormat::jsonl:
      return parse_trace_jsonl(text, columns);
    case TraceFormat::json:
      return parse_trace_json_arrays(text, columns);
  }
  return {};
}

std::string format_trace_csv(const std::vector<std::pair<int64_t, int64_t>>& rows) {
  const TraceColumns columns;
  std::string out = columns.context + "," + columns.query + "\n";
  for (const auto& [prompt, output] : rows) {
    out += std::to_string(prompt) + "," + std::to_string(output) + "\n";
  }
  return out;
}

}  // namespace attn
