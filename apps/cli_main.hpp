// The part of main() both executables share: parse with CLI11 and map exceptions to exit codes
// (docs/exit-codes.md), with error lines that start with the program's name.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace attn {

struct Invocation;

// Parses `args` (argv without the program) into `app`, whose subcommand callbacks do the work and
// set invocation.exit_code; returns the process exit code.
int run_cli(CLI::App& app, const std::vector<std::string>& args, const std::string& program,
            const Invocation& invocation);

}  // namespace attn
