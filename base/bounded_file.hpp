// Reading a whole file with a size bound: input files (workloads, traces, layouts, masks) are
// read into memory only up to a limit, so a huge or endless file costs bounded memory and time.
// Only regular files are read: a FIFO, a device, a socket or a directory is refused at once (it is
// opened without blocking and checked with fstat), since reading one could block for ever or
// never end.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace attn {

struct BoundedReadFailure {
  enum class Kind {
    cannot_open,  // open(2) failed: `error`
    cannot_read,  // read(2) failed: `error`
    too_large,    // more than max_bytes
    not_regular,  // a FIFO, device, socket or directory: `file_type` says which
    nul_in_path,  // the path holds a NUL byte (only possible from text such as JSON "\u0000")
  } kind = Kind::cannot_open;
  int error = 0;          // errno, for cannot_open and cannot_read
  std::string file_type;  // not_regular: "a FIFO", "a directory", "a character device", ...
};

// The file's bytes, or nullopt with `failure` set. Stops reading once more than max_bytes have
// arrived (too_large), without reading the rest.
std::optional<std::string> read_bounded_file(const std::string& path, size_t max_bytes,
                                             BoundedReadFailure& failure);

// The failure as a message about the file: "cannot open the file: No such file or directory",
// "the file is a FIFO (named pipe), not a regular file", "the file is larger than the limit of N
// bytes", ...
std::string describe_failure(const BoundedReadFailure& failure, size_t max_bytes);

// A path as a message quotes it: on one line, control characters written as \n, \t or \xHH, and
// at most 256 bytes (longer ones end in "..."), so that a hostile name cannot break or flood a
// message.
std::string printable_path(std::string_view path);

}  // namespace attn
