#include "workloads/referenced_file.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "base/bounded_file.hpp"
#include "base/sha256.hpp"

namespace attn {

namespace {

constexpr std::string_view kBuiltinPrefix = "builtin:";

// "workloads/traces/chat-sample.csv" -> "chat-sample".
std::string stem(std::string_view path) {
  const size_t slash = path.rfind('/');
  if (slash != std::string_view::npos) path.remove_prefix(slash + 1);
  const size_t dot = path.rfind('.');
  if (dot != std::string_view::npos) path = path.substr(0, dot);
  return std::string(path);
}

std::optional<std::string> read_path(const std::string& path, std::string& problem) {
  BoundedReadFailure failure;
  std::optional<std::string> bytes = read_bounded_file(path, kMaxReferencedFileBytes, failure);
  if (bytes) return bytes;
  const std::string shown = "\"" + printable_path(path) + "\"";
  switch (failure.kind) {
    case BoundedReadFailure::Kind::cannot_open:
      problem = "cannot open " + shown + ": " + std::strerror(failure.error);
      break;
    case BoundedReadFailure::Kind::cannot_read:
      problem = "cannot read " + shown + ": " + std::strerror(failure.error);
      break;
    case BoundedReadFailure::Kind::nul_in_path:
      problem = "must not contain a NUL byte (\\u0000), got " + shown;
      break;
    case BoundedReadFailure::Kind::too_large:
      problem = shown + " is larger than the limit of " + std::to_string(kMaxReferencedFileBytes) +
                " bytes";
      break;
    case BoundedReadFailure::Kind::not_regular:
      problem = shown + " is " + failure.file_type + ", not a regular file";
      break;
  }
  return std::nullopt;
}

}  // namespace

std::vector<std::string> builtin_file_names() {
  std::vector<std::string> names;
  for (size_t i = 0; i < kWorkloadDataFiles_count; ++i) {
    names.push_back(stem(kWorkloadDataFiles[i].name));
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string directory_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash == 0 ? 1 : slash);
}

std::optional<ReferencedFile> read_referenced_file(const std::string& file,
                                                   const std::string& base_dir,
                                                   std::string& problem) {
  ReferencedFile out;
  if (file.compare(0, kBuiltinPrefix.size(), kBuiltinPrefix) == 0) {
    const std::string name = file.substr(kBuiltinPrefix.size());
    for (size_t i = 0; i < kWorkloadDataFiles_count; ++i) {
      if (stem(kWorkloadDataFiles[i].name) != name) continue;
      out.resolved_path = file;
      out.file_name = kWorkloadDataFiles[i].name;
      out.bytes = std::string(kWorkloadDataFiles[i].text());
    }
    if (out.resolved_path.empty()) {
      std::string known;
      for (const auto& n : builtin_file_names()) known += (known.empty() ? "" : ", ") + n;
      problem = "no built-in file \"" + printable_path(name) + "\" (built-in files: " + known + ")";
      return std::nullopt;
    }
  } else {
    out.resolved_path =
        file.empty() || file[0] == '/' || base_dir.empty() ? file : base_dir + "/" + file;
    std::optional<std::string> bytes = read_path(out.resolved_path, problem);
    if (!bytes) return std::nullopt;
    out.file_name = out.resolved_path;
    out.bytes = std::move(*bytes);
  }
  out.sha256 = sha256_hex(out.bytes);
  return out;
}

}  // namespace attn
