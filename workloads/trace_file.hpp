// Request traces: one request per row, each with a prompt length (the context it brings) and an
// output length (the tokens generated for it), read from CSV, JSON lines or a JSON object of
// arrays, the columns named by a mapping (docs/workload.md, "Traces"). The default is today's
// CSV with the header "prompt_len,output_len".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace attn {

inline constexpr int64_t kMaxTraceRows = int64_t(1) << 20;
inline constexpr int64_t kMaxTraceLength = (int64_t(1) << 31) - 1;  // prompt and output lengths

enum class TraceFormat {
  csv,    // a header row naming the columns, then one request per line
  jsonl,  // one JSON object per line, the columns as its keys
  json,   // one JSON object whose columns are arrays of equal length (vLLM's benchmark results)
};
std::string to_string(TraceFormat format);
std::optional<TraceFormat> trace_format_from_string(const std::string& text);
// The format a file name implies: ".jsonl" jsonl, ".json" json, anything else csv.
TraceFormat trace_format_for(std::string_view file_name);

// Which column holds each request's prompt length ("context") and output length ("query").
struct TraceColumns {
  std::string context = "prompt_len";
  std::string query = "output_len";
  bool operator==(const TraceColumns& other) const {
    return context == other.context && query == other.query;
  }
};

struct TraceRows {
  std::vector<std::pair<int64_t, int64_t>> rows;  // (prompt length, output length)
  std::vector<std::string> problems;              // "line N: ..."; at most a few are kept
};

// Parses the whole text; never throws. Every row must give both mapped columns an integer in
// 1..kMaxTraceLength; other columns are ignored; at most kMaxTraceRows rows.
TraceRows parse_trace(std::string_view text, TraceFormat format, const TraceColumns& columns);

// The CSV form of rows with the default columns: the header, then "prompt,output\n" per row.
std::string format_trace_csv(const std::vector<std::pair<int64_t, int64_t>>& rows);

// What the parsers of each format share: the problems of one file, the first few kept (each
// "line N: message" or "<JSON pointer>: message"), only the first quoting the file's text.
class TraceProblems {
 public:
  explicit TraceProblems(TraceRows& out) : out_(out) {}
  void add(size_t line, const std::string& message);
  // A problem located some other way ("/input_lens/3: ...").
  void add_located(const std::string& where, const std::string& message);
  // ", got \"TEXT\"" the first time (TEXT cut to 40 characters, non-printable bytes as '?'), then
  // nothing: one short excerpt of a file per message list.
  std::string got(std::string_view text);
  bool any() const { return !out_.problems.empty() || skipped_ > 0; }
  // Adds "... and N more lines" when problems were left out; a file with problems has no rows.
  void finish();

 private:
  TraceRows& out_;
  size_t skipped_ = 0;
  bool quoted_ = false;
};

// A length field's text as an integer in 1..kMaxTraceLength, or -1.
int64_t trace_length(std::string_view text);

TraceRows parse_trace_csv(std::string_view text, const TraceColumns& columns);
TraceRows parse_trace_jsonl(std::string_view text, const TraceColumns& columns);
TraceRows parse_trace_json_arrays(std::string_view text, const TraceColumns& columns);

}  // namespace attn
