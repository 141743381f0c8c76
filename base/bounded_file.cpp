#include "base/bounded_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace attn {

namespace {

// What a file that is not a regular file is, for the message.
std::string type_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

std::optional<std::string> read_bounded_file(const std::string& path, size_t max_bytes,
                                             BoundedReadFailure& failure) {
  failure = {};
  if (path.find('\0') != std::string::npos) {
    failure.kind = BoundedReadFailure::Kind::nul_in_path;
    return std::nullopt;
  }
  // O_NONBLOCK: opening a FIFO without a writer returns at once instead of waiting for one;
  // O_NOCTTY: a terminal device never becomes our controlling terminal.
  const FileDescriptor file(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (file.get() < 0) {
    const int error = errno;
    struct stat info {};
    if (::stat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode)) {  // a socket: ENXIO
      failure.kind = BoundedReadFailure::Kind::not_regular;
      failure.file_type = type_of(info.st_mode);
    } else {
      failure.kind = BoundedReadFailure::Kind::cannot_open;
      failure.error = error;
    }
    return std::nullopt;
  }
  struct stat info {};
  if (::fstat(file.get(), &info) != 0) {
    failure.kind = BoundedReadFailure::Kind::cannot_read;
    failure.error = errno;
    return std::nullopt;
  }
  if (!S_ISREG(info.st_mode)) {
    failure.kind = BoundedReadFailure::Kind::not_regular;
    failure.file_type = type_of(info.st_mode);
    return std::nullopt;
  }
  if (info.st_size > 0 && uint64_t(info.st_size) > uint64_t(max_bytes)) {
    failure.kind = BoundedReadFailure::Kind::too_large;
    return std::nullopt;
  }
  const int flags = ::fcntl(file.get(), F_GETFL);
  if (flags >= 0) ::fcntl(file.get(), F_SETFL, flags & ~O_NONBLOCK);

  // A regular file may still grow while it is read (or report size 0, as /proc files do): the
  // bound holds on the bytes that arrive.
  std::string bytes;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(file.get(), buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      failure.kind = BoundedReadFailure::Kind::cannot_read;
      failure.error = errno;
      return std::nullopt;
    }
    if (n == 0) break;
    bytes.append(buffer, size_t(n));
    if (bytes.size() > max_bytes) {
      failure.kind = BoundedReadFailure::Kind::too_large;
      return std::nullopt;
    }
  }
  return bytes;
}

std::string describe_failure(const BoundedReadFailure& failure, size_t max_bytes) {
  switch (failure.kind) {
    case BoundedReadFailure::Kind::cannot_open:
      return std::string("cannot open the file: ") + std::strerror(failure.error);
    case BoundedReadFailure::Kind::cannot_read:
      return std::string("cannot read the file: ") + std::strerror(failure.error);
    case BoundedReadFailure::Kind::too_large:
      return "the file is larger than the limit of " + std::to_string(max_bytes) + " bytes";
    case BoundedReadFailure::Kind::not_regular:
      return "the file is " + failure.file_type + ", not a regular file";
    case BoundedReadFailure::Kind::nul_in_path:
      return "the path holds a NUL byte";
  }
  return "cannot read the file";
}

std::string printable_path(std::string_view path) {
  constexpr size_t kMaxShown = 256;
  std::string out;
  for (size_t i = 0; i < path.size() && i < kMaxShown; ++i) {
    const unsigned char c = static_cast<unsigned char>(path[i]);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02X", unsigned(c));
      out += escaped;
    } else {
      out += char(c);
    }
  }
  if (path.size() > kMaxShown) out += "...";
  return out;
}

}  // namespace attn
