#include "workloads/trace_csv.hpp"

namespace attn {

namespace {

constexpr std::string_view kHeader = "prompt_len,output_len";
constexpr size_t kMaxReportedProblems = 10;

// A decimal integer in 1..kMaxTraceLength, or -1.
int64_t positive_integer(std::string_view text) {
  if (text.empty() || text.size() > 10) return -1;
  int64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return -1;
    value = value * 10 + (c - '0');
  }
  return value >= 1 && value <= kMaxTraceLength ? value : -1;
}

std::string quoted(std::string_view line) {
  constexpr size_t kMaxShown = 40;
  std::string shown(line.substr(0, kMaxShown));
  for (char& c : shown) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7F) c = '?';
  }
  return "\"" + shown + (line.size() > kMaxShown ? "...\"" : "\"");
}

}  // namespace

TraceCsv parse_trace_csv(std::string_view text) {
  TraceCsv out;
  size_t skipped = 0;
  auto problem = [&](size_t line, const std::string& message) {
    if (out.problems.size() < kMaxReportedProblems) {
      out.problems.push_back("line " + std::to_string(line) + ": " + message);
    } else {
      ++skipped;
    }
  };
  // Only the first problem quotes the file (one short excerpt); the others name their line.
  bool quoted_one = false;
  auto got = [&](std::string_view line) {
    if (quoted_one) return std::string();
    quoted_one = true;
    return ", got " + quoted(line);
  };
  size_t line_number = 0;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(begin, end - begin);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    begin = end + 1;
    ++line_number;
    if (line_number == 1) {
      if (line != kHeader) {
        problem(1, "expected the header \"prompt_len,output_len\"" + got(line));
      }
      continue;
    }
    const size_t comma = line.find(',');
    const int64_t prompt =
        comma == std::string_view::npos ? -1 : positive_integer(line.substr(0, comma));
    const int64_t output =
        comma == std::string_view::npos ? -1 : positive_integer(line.substr(comma + 1));
    if (prompt < 0 || output < 0) {
      problem(line_number, "expected two integers in 1.." + std::to_string(kMaxTraceLength) +
                               " as \"prompt_len,output_len\"" + got(line));
      continue;
    }
    if (int64_t(out.rows.size()) == kMaxTraceRows) {
      problem(line_number, "the trace has more than " + std::to_string(kMaxTraceRows) + " rows");
      break;
    }
    out.rows.emplace_back(prompt, output);
  }
  if (line_number == 0)
    problem(1, "the file is empty (expected the header \"prompt_len,output_len\")");
  if (skipped > 0) out.problems.push_back("... and " + std::to_string(skipped) + " more lines");
  if (out.problems.empty() && out.rows.empty()) problem(2, "the trace has no rows");
  return out;
}

std::string format_trace_csv(const std::vector<std::pair<int64_t, int64_t>>& rows) {
  std::string out = std::string(kHeader) + "\n";
  for (const auto& [prompt, output] : rows) {
    out += std::to_string(prompt) + "," + std::to_string(output) + "\n";
  }
  return out;
}

}  // namespace attn
