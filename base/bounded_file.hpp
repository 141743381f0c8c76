// Reading a whole file with a size bound: input files (workloads, traces, layouts, masks) are
// read into memory only up to a limit, so a huge or endless file costs bounded memory and time.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace attn {

struct BoundedReadFailure {
  enum class Kind { cannot_open, cannot_read, too_large } kind = Kind::cannot_open;
  int error = 0;  // errno, for cannot_open and cannot_read
};

// The file's bytes, or nullopt with `failure` set. Stops reading once more than max_bytes have
// arrived (too_large), without reading the rest.
std::optional<std::string> read_bounded_file(const std::string& path, size_t max_bytes,
                                             BoundedReadFailure& failure);

}  // namespace attn
