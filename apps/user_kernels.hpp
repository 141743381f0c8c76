// --kernel SPEC.json on `attn-bench run`, `attn-tune tune` and its workers: the registry of
// built-in variants plus one `user.<name>` variant per kernel spec (docs/user-kernels.md). Every
// spec is loaded and checked here, before any GPU work or database write: a bad one throws
// InputError (exit code 3).
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "kernels/registry.hpp"

namespace attn {

// Adds the repeatable --kernel option to a command.
void add_kernel_spec_flag(CLI::App* cmd, std::vector<std::string>& specs);

Registry make_registry_with_user_kernels(const std::vector<std::string>& specs);

// The specs as absolute paths, for a worker process's command line (it may run elsewhere in the
// file system's view, never in another folder's meaning).
std::vector<std::string> absolute_spec_paths(const std::vector<std::string>& specs);

}  // namespace attn
