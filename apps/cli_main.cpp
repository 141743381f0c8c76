#include "apps/cli_main.hpp"

#include <algorithm>
#include <iostream>
#include <new>
#include <optional>

#include "apps/commands.hpp"
#include "base/errors.hpp"
#include "base/nearest_name.hpp"

namespace attn {

namespace {

// The command the arguments name ("attn-bench workload validate") and, where a command needs a
// subcommand, the first word that names none.
struct CommandWalk {
  const CLI::App* app = nullptr;
  std::string path;
  std::optional<std::string> unknown;
};

std::vector<std::string> subcommand_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub :
       app.get_subcommands([](const CLI::App* s) { return !s->get_group().empty(); })) {
    names.push_back(sub->get_name());
  }
  return names;
}

CommandWalk walk_commands(const CLI::App& app, const std::vector<std::string>& args,
                          const std::string& program) {
  CommandWalk walk{&app, program, std::nullopt};
  for (const std::string& arg : args) {
    if (arg == "--") break;
    if (!arg.empty() && arg[0] == '-') continue;
    const CLI::App* sub = nullptr;
    for (const CLI::App* s : walk.app->get_subcommands({})) {
      if (s->get_name() == arg) sub = s;
    }
    if (sub) {
      walk.app = sub;
      walk.path += " " + arg;
      continue;
    }
    if (walk.app->get_require_subcommand_min() > 0) {
      walk.unknown = arg;
      break;
    }
  }
  return walk;
}

// The long and short flags of `app`, as typed ("--policy", "-v").
std::vector<std::string> flag_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* option : app.get_options()) {
    if (option->get_positional()) continue;
    for (const std::string& l : option->get_lnames()) names.push_back("--" + l);
    for (const std::string& s : option->get_snames()) names.push_back("-" + s);
  }
  return names;
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& names) {
  const std::optional<std::string> nearest = nearest_name(word, names);
  return nearest ? ", did you mean '" + *nearest + "'?" : "";
}

// The message of a parse error, in words about the user's command line; the caller starts it
// with the program's name.
std::string usage_message(const CLI::ParseError& e, const CLI::App& app,
                          const std::vector<std::string>& args, const std::string& program) {
  const CommandWalk walk = walk_commands(app, args, program);
  const std::vector<std::string> commands = subcommand_names(*walk.app);
  if (walk.unknown) {
    return "unknown command '" + *walk.unknown + "'" + did_you_mean(*walk.unknown, commands) +
           " (run '" + walk.path + " --help' for the commands)";
  }
  std::string joined;
  for (const std::string& c : commands) joined += (joined.empty() ? "" : ", ") + c;
  if (dynamic_cast<const CLI::RequiredError*>(&e) && walk.app->get_require_subcommand_min() > 0) {
    return "'" + walk.path + "' needs a command: " + joined + " (run '" + walk.path +
           " --help' for each)";
  }
  // A flag the command does not have.
  const std::vector<std::string> flags = flag_names(*walk.app);
  for (const std::string& arg : args) {
    if (arg.size() < 2 || arg[0] != '-' || arg == "--") continue;
    const std::string flag = arg.substr(0, arg.find('='));
    if (std::find(flags.begin(), flags.end(), flag) != flags.end()) continue;
    bool of_a_parent = false;  // --help, --help-all of the program
    for (const CLI::App* a = walk.app; a != nullptr; a = a->get_parent()) {
      const std::vector<std::string> own = flag_names(*a);
      of_a_parent = of_a_parent || std::find(own.begin(), own.end(), flag) != own.end();
    }
    if (of_a_parent) continue;
    // A negative number is a value, not a flag.
    if (flag.find_first_not_of("-0123456789.") == std::string::npos) continue;
    return "unknown flag '" + flag + "' for '" + walk.path + "'" + did_you_mean(flag, flags) +
           " (run '" + walk.path + " --help' for its flags)";
  }
  return std::string(e.what()) + " (run '" + walk.path + " --help' for its usage)";
}

}  // namespace

int run_cli(CLI::App& app, const std::vector<std::string>& args, const std::string& program,
            const Invocation& invocation) {
  try {
    std::vector<std::string> reversed(args.rbegin(), args.rend());
    app.parse(reversed);  // CLI11 takes the arguments in reverse order
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << program << ": usage: " << usage_message(e, app, args, program) << "\n";
    return to_int(ExitCode::usage);
  } catch (const InputError& e) {
    std::cerr << program << ": invalid input: " << e.what() << "\n";
    return to_int(e.code());
  } catch (const Error& e) {
    const char* kind = e.code() == ExitCode::usage         ? "usage"
                       : e.code() == ExitCode::environment ? "environment"
                                                           : "error";
    std::cerr << program << ": " << kind << ": " << e.what() << "\n";
    return to_int(e.code());
  } catch (const std::bad_alloc& e) {
    // The machine ran out of memory (or a size no allocation can hold was asked for): what was
    // asked is not wrong, this machine cannot hold it.
    std::cerr << program << ": environment: out of host memory (" << e.what()
              << "); --max-host-memory sets the budget checked before allocating, see "
                 "docs/workload.md\n";
    return to_int(ExitCode::environment);
  } catch (const std::exception& e) {
    std::cerr << program << ": internal error: " << e.what() << "\n";
    return to_int(ExitCode::internal);
  }
  return invocation.exit_code;
}

}  // namespace attn
