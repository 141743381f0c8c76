#include "base/bounded_file.hpp"

#include <cerrno>
#include <cstdio>

namespace attn {

std::optional<std::string> read_bounded_file(const std::string& path, size_t max_bytes,
                                             BoundedReadFailure& failure) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    failure = {BoundedReadFailure::Kind::cannot_open, errno};
    return std::nullopt;
  }
  std::string bytes;
  char buffer[1 << 16];
  int read_error = 0;
  for (;;) {
    const size_t n = std::fread(buffer, 1, sizeof buffer, file);
    bytes.append(buffer, n);
    if (bytes.size() > max_bytes) break;  // no need to read the rest
    if (n < sizeof buffer) {
      if (std::ferror(file)) read_error = errno;
      break;
    }
  }
  std::fclose(file);
  if (read_error != 0) {
    failure = {BoundedReadFailure::Kind::cannot_read, read_error};
    return std::nullopt;
  }
  if (bytes.size() > max_bytes) {
    failure = {BoundedReadFailure::Kind::too_large, 0};
    return std::nullopt;
  }
  return bytes;
}

}  // namespace attn
