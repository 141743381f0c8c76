#include "base/errors.hpp"

#include <sstream>

namespace attn {

namespace {
std::string join_problems(const std::string& source, const std::vector<std::string>& problems) {
  std::ostringstream out;
  out << source << ": " << problems.size() << (problems.size() == 1 ? " problem" : " problems");
  for (const auto& p : problems) out << "\n  " << p;
  return out.str();
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

InputError::InputError(std::string source, std::vector<std::string> problems)
    : Error(ExitCode::invalid_input, join_problems(source, problems)),
      source_(std::move(source)),
      problems_(std::move(problems)) {}

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
