// Shell completion for bash and zsh, generated from the CLI11 definitions of a program: its
// subcommands (nested), each command's flags, and the values of the options and positionals that
// take names (presets, variant globs, families, policies, strategies...). `attn-bench completion
// bash` prints the script; the build writes both programs' scripts for `make install`.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace attn {

// What the generator knows of a command, read from CLI11.
struct CompletionOption {
  std::vector<std::string> names;  // "--preset", "-o"
  bool takes_value = false;
  std::vector<std::string> values;  // the words it takes; empty: a file name (or nothing)
  bool files_too = false;           // values and file names (a workload: a preset or a file)
};
struct CompletionCommand {
  std::string path;  // "" for the program, "run", "workload validate"
  std::string description;
  std::vector<std::string> subcommands;
  std::vector<std::string> subcommand_descriptions;
  std::vector<CompletionOption> options;
  bool has_positional = false;
  CompletionOption positional;  // what the first positional takes
};

// Every visible command of `app`, the program first. The values are looked up by option name in
// the table of apps/completion.cpp (presets and variants from this build).
std::vector<CompletionCommand> completion_commands(const CLI::App& app);

std::string bash_completion_script(const std::string& program,
                                   const std::vector<CompletionCommand>& commands);
std::string zsh_completion_script(const std::string& program,
                                  const std::vector<CompletionCommand>& commands);

// Adds `completion bash|zsh` to `app`; its callback prints the script of the whole `app`.
void add_completion_command(CLI::App& app, const std::string& program, int& exit_code);

}  // namespace attn
