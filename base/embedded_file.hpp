// A file whose bytes were compiled into the binary (kernel headers for NVRTC, workload presets).
// The table of each set ends with a {nullptr, nullptr, 0} sentinel; see cmake/attn_embed.cmake.
#pragma once

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attn {

struct EmbeddedFile {
  const char* name;  // path relative to the repository root, e.g. "kernels/common/numeric.cuh"
  const char* data;  // NUL-terminated after `size` bytes
  size_t size;
  std::string_view text() const { return {data, size}; }
};

// A set of embedded files under one folder with one extension, named by their stems (presets,
// suites): "workloads/presets/default.json" is "default".
struct EmbeddedNamedFiles {
  const EmbeddedFile* files;
  size_t count;
  std::string_view dir;        // "workloads/presets/"
  std::string_view extension;  // ".json"

  // The stem of `path`, or nullopt for a path outside the folder or of another extension.
  std::optional<std::string> stem(std::string_view path) const {
    if (path.size() <= dir.size() + extension.size()) return std::nullopt;
    if (path.substr(0, dir.size()) != dir) return std::nullopt;
    if (path.substr(path.size() - extension.size()) != extension) return std::nullopt;
    path.remove_prefix(dir.size());
    path.remove_suffix(extension.size());
    return std::string(path);
  }
  std::vector<std::string> names() const {  // sorted
    std::vector<std::string> out;
    for (size_t i = 0; i < count; ++i) {
      if (auto name = stem(files[i].name)) out.push_back(*name);
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  std::optional<std::string_view> text(const std::string& name) const {
    for (size_t i = 0; i < count; ++i) {
      if (stem(files[i].name) == name) return files[i].text();
    }
    return std::nullopt;
  }
};

}  // namespace attn
