// A file whose bytes were compiled into the binary (kernel headers for NVRTC, workload presets).
// The table of each set ends with a {nullptr, nullptr, 0} sentinel; see cmake/attn_embed.cmake.
#pragma once

#include <cstddef>
#include <string_view>

namespace attn {

struct EmbeddedFile {
  const char* name;  // path relative to the repository root, e.g. "kernels/common/numeric.cuh"
  const char* data;  // NUL-terminated after `size` bytes
  size_t size;
  std::string_view text() const { return {data, size}; }
};

}  // namespace attn
