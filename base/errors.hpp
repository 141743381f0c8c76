// The project's one family of typed exceptions and check macros.
//
// Library code throws; only main() maps an exception to an exit code (see exit_codes.hpp and
// docs/exit-codes.md). Each error carries the failing expression and file:line where one exists.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "base/exit_codes.hpp"

namespace attn {

class Error : public std::runtime_error {
 public:
  Error(ExitCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ExitCode code() const noexcept { return code_; }

 private:
  ExitCode code_;
};

// The command line was wrong (unknown flag, missing argument, bad filter).
class UsageError : public Error {
 public:
  explicit UsageError(const std::string& message) : Error(ExitCode::usage, message) {}
};

// How many problems an InputError lists; the rest are counted ("... and N more problems"), so that
// a file with a million wrong keys gives a screenful, not a million lines.
inline constexpr size_t kMaxListedProblems = 50;

// An input file (workload, layout, trace) is malformed or inconsistent. Holds the problems found,
// each already prefixed with where it is (a JSON pointer or line:column): the first
// kMaxListedProblems of them, and how many more there were (`more`: problems a reader counted
// without recording them, added to those over the limit here). The message shows each problem on
// one line (control characters escaped, at most 1000 bytes).
class InputError : public Error {
 public:
  InputError(std::string source, std::vector<std::string> problems, size_t more = 0);
  const std::string& source() const noexcept { return source_; }
  const std::vector<std::string>& problems() const noexcept { return problems_; }
  // Every problem found: the listed ones and those only counted.
  size_t problem_count() const noexcept { return problems_.size() + more_; }

 private:
  std::string source_;
  std::vector<std::string> problems_;
  size_t more_ = 0;
};

// The machine cannot do what was asked: no GPU or driver, no NVRTC, an unreadable cache, a database
// from a newer schema.
class EnvironmentError : public Error {
 public:
  explicit EnvironmentError(const std::string& message) : Error(ExitCode::environment, message) {}
};

// A failed call into a library (CUDA driver, NVRTC, SQLite). `what()` reads
// "<library> error <code> (<name>): <detail> in `<expr>` at file:line". Its exit code is
// `internal` unless the caller knows the status means the machine (`environment`: a full disk, a
// read-only database).
class CallError : public Error {
 public:
  CallError(const char* library, long long status, const std::string& status_name,
            const std::string& detail, const char* expr, const char* file, int line,
            ExitCode code = ExitCode::internal);
  long long status() const noexcept { return status_; }
  const std::string& library() const noexcept { return library_; }

 private:
  std::string library_;
  long long status_;
};

[[noreturn]] void throw_internal(const char* expr, const char* file, int line,
                                 const std::string& message);

}  // namespace attn

// Invariant check for conditions that can only fail through a bug in this program.
#define ATTN_ASSERT(cond, message)                                             \
  do {                                                                         \
    if (!(cond)) ::attn::throw_internal(#cond, __FILE__, __LINE__, (message)); \
  } while (0)
