#include "base/errors.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace attn {

namespace {
// The length of the well-formed UTF-8 sequence at text[i] (1 for ASCII), or 0 when the bytes
// there are not one.
size_t utf8_sequence_length(const std::string& text, size_t i) {
  const unsigned char lead = static_cast<unsigned char>(text[i]);
  const size_t length = lead < 0x80                    ? 1
                        : lead >= 0xC2 && lead <= 0xDF ? 2
                        : lead >= 0xE0 && lead <= 0xEF ? 3
                        : lead >= 0xF0 && lead <= 0xF4 ? 4
                                                       : 0;
  if (length == 0 || i + length > text.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    if ((static_cast<unsigned char>(text[i + k]) & 0xC0) != 0x80) return 0;
  }
  return length;
}

// One problem as a message line: control characters and bytes that are not UTF-8 escaped (\n,
// \xHH; a problem may quote a file's bytes), at most ~1000 bytes, cut between characters.
std::string one_line(const std::string& problem) {
  constexpr size_t kMaxBytes = 1000;
  std::string out;
  for (size_t i = 0; i < problem.size();) {
    if (out.size() >= kMaxBytes) return out + "...";
    const unsigned char c = static_cast<unsigned char>(problem[i]);
    const size_t length = utf8_sequence_length(problem, i);
    if (c == '\n') {
      out += "\\n";
    } else if (length == 0 || c < 0x20 || c == 0x7F) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02X", unsigned(c));
      out += escaped;
    } else {
      out.append(problem, i, length);
      i += length;
      continue;
    }
    ++i;
  }
  return out;
}

// The message: the source, how many problems, the first kMaxListedProblems, and how many more.
std::string join_problems(const std::string& source, const std::vector<std::string>& problems,
                          size_t more) {
  const size_t shown = std::min(problems.size(), kMaxListedProblems);
  more += problems.size() - shown;
  const size_t total = shown + more;
  std::ostringstream out;
  out << one_line(source) << ": " << total << (total == 1 ? " problem" : " problems");
  for (size_t i = 0; i < shown; ++i) out << "\n  " << one_line(problems[i]);
  if (more > 0) out << "\n  ... and " << more << " more problem" << (more == 1 ? "" : "s");
  return out.str();
}

// The first kMaxListedProblems of `problems`; the number left out is added to `more`.
std::vector<std::string> listed(std::vector<std::string> problems, size_t& more) {
  if (problems.size() > kMaxListedProblems) {
    more += problems.size() - kMaxListedProblems;
    problems.resize(kMaxListedProblems);
  }
  return problems;
}

std::string call_message(const char* library, long long status, const std::string& status_name,
                         const std::string& detail, const char* expr, const char* file, int line) {
  std::ostringstream out;
  out << library << " error " << status;
  if (!status_name.empty()) out << " (" << status_name << ")";
  if (!detail.empty()) out << ": " << detail;
  out << " in `" << expr << "` at " << file << ":" << line;
  return out.str();
}
}  // namespace

InputError::InputError(std::string source, std::vector<std::string> problems, size_t more)
    : Error(ExitCode::invalid_input, join_problems(source, problems, more)),
      source_(std::move(source)),
      problems_(listed(std::move(problems), more)),
      more_(more) {}

CallError::CallError(const char* library, long long status, const std::string& status_name,
                     const std::string& detail, const char* expr, const char* file, int line,
                     ExitCode code)
    : Error(code, call_message(library, status, status_name, detail, expr, file, line)),
      library_(library),
      status_(status) {}

void throw_internal(const char* expr, const char* file, int line, const std::string& message) {
  std::ostringstream out;
  out << "internal error: " << message << " (`" << expr << "` failed at " << file << ":" << line
      << ")";
  throw Error(ExitCode::internal, out.str());
}

}  // namespace attn
