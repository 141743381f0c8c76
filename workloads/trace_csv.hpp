// Request traces: CSV text with the header "prompt_len,output_len" and one request per line, two
// positive integers each (docs/workload.md, "Traces").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace attn {

inline constexpr int64_t kMaxTraceRows = int64_t(1) << 20;
inline constexpr int64_t kMaxTraceLength = (int64_t(1) << 31) - 1;  // prompt_len and output_len

struct TraceCsv {
  std::vector<std::pair<int64_t, int64_t>> rows;  // (prompt_len, output_len)
  std::vector<std::string> problems;              // "line N: ..."; at most a few are kept
};

// Parses the whole text; never throws. A final newline is optional, "\r\n" line ends are fine.
TraceCsv parse_trace_csv(std::string_view text);

// The CSV form of rows: the header, then "prompt_len,output_len\n" per row.
std::string format_trace_csv(const std::vector<std::pair<int64_t, int64_t>>& rows);

}  // namespace attn
