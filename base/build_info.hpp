// Provenance of this binary, recorded with every run: version, git commit, build type.
#pragma once

#include <string>

namespace attn {

std::string tool_version();  // project version, e.g. "0.1.0"
std::string git_commit();    // "<sha>" or "<sha>+dirty"; "unknown" outside a git checkout
std::string build_type();    // CMAKE_BUILD_TYPE

}  // namespace attn
