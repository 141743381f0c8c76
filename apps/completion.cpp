#include "apps/completion.hpp"

#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "base/errors.hpp"
#include "base/family.hpp"
#include "kernels/registry.hpp"
#include "workloads/presets.hpp"
#include "workloads/suites.hpp"

namespace attn {

namespace {

// Variant names and one glob per family ("paged_decode.*"), for --variant.
std::vector<std::string> variant_words() {
  std::set<std::string> words;
  const Registry registry = make_registry();
  for (const auto& v : registry.variants()) {
    words.insert(v->name());
    words.insert(to_string(v->family()) + ".*");
  }
  return {words.begin(), words.end()};
}

std::vector<std::string> family_words() {
  std::vector<std::string> out;
  for (Family f : {Family::paged_decode, Family::prefix_prefill, Family::blocksparse,
                   Family::flash_fwd, Family::mla_decode}) {
    out.push_back(to_string(f));
  }
  return out;
}

// The values an option takes, by command and option name ("" matches any command). An option
// not listed takes a file name, or nothing when it is a flag.
struct ValueRule {
  const char* command;
  const char* option;
  std::vector<std::string> (*values)();
  bool files_too;
};

std::vector<std::string> suites() {
  return suite_names();
}
std::vector<std::string> presets() {
  return preset_names();
}
std::vector<std::string> policies() {
  return {"confirm", "screen"};
}
std::vector<std::string> references() {
  return {"cpu", "gpu", "auto"};
}
std::vector<std::string> timers() {
  return {"events", "graph", "auto"};
}
std::vector<std::string> strategies() {
  return {"exhaustive", "random", "halving", "model"};
}
std::vector<std::string> isolation() {
  return {"workers", "none"};
}
std::vector<std::string> export_formats() {
  return {"json", "cpp"};
}
std::vector<std::string> compare_formats() {
  return {"markdown", "json"};
}
std::vector<std::string> shells() {
  return {"bash", "zsh"};
}

const ValueRule kValueRules[] = {
    {"", "workload", presets, true},  // the positional workload: a preset or a file
    {"", "--preset", presets, false},
    {"", "--suite", suites, true},  // a built-in suite or a suite file
    {"", "--variant", variant_words, false},
    {"", "--family", family_words, false},
    {"", "--policy", policies, false},
    {"", "--reference", references, false},
    {"", "--timer", timers, false},
    {"", "--strategy", strategies, false},
    {"", "--isolate", isolation, false},
    {"export", "--format", export_formats, false},
    {"compare", "--format", compare_formats, false},
    {"completion", "shell", shells, false},
};

const ValueRule* rule_for(const std::string& command, const std::string& option) {
  const std::string leaf =
      command.substr(command.rfind(' ') == std::string::npos ? 0 : command.rfind(' ') + 1);
  for (const ValueRule& rule : kValueRules) {
    if (option == rule.option && (rule.command[0] == '\0' || leaf == rule.command)) return &rule;
  }
  return nullptr;
}

void collect(const CLI::App& app, const std::string& path, std::vector<CompletionCommand>& out) {
  CompletionCommand command;
  command.path = path;
  command.description = app.get_description();
  std::vector<const CLI::App*> children;
  for (const CLI::App* sub : app.get_subcommands(
           [](const CLI::App* s) { return !s->get_group().empty() && !s->get_name().empty(); })) {
    children.push_back(sub);
    command.subcommands.push_back(sub->get_name());
    command.subcommand_descriptions.push_back(sub->get_description());
  }
  for (const CLI::Option* option : app.get_options()) {
    if (option->get_group().empty()) continue;  // hidden
    CompletionOption o;
    const std::string name = option->get_positional() ? option->get_name() : "";
    for (const std::string& l : option->get_lnames()) o.names.push_back("--" + l);
    for (const std::string& s : option->get_snames()) o.names.push_back("-" + s);
    o.takes_value = option->get_items_expected_max() > 0 || option->get_positional();
    const std::string key = option->get_positional() ? name : (o.names.empty() ? "" : o.names[0]);
    if (const ValueRule* rule = rule_for(path, key)) {
      o.values = rule->values();
      o.files_too = rule->files_too;
    }
    if (option->get_positional()) {
      if (!command.has_positional) {
        command.has_positional = true;
        command.positional = o;
      }
      continue;
    }
    command.options.push_back(std::move(o));
  }
  out.push_back(std::move(command));
  for (const CLI::App* sub : children) {
    collect(*sub, path.empty() ? sub->get_name() : path + " " + sub->get_name(), out);
  }
}

std::string joined(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

// A shell word in single quotes.
std::string quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string function_name(const std::string& program) {
  std::string out = "_";
  for (char c : program) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

}  // namespace

std::vector<CompletionCommand> completion_commands(const CLI::App& app) {
  std::vector<CompletionCommand> out;
  collect(app, "", out);
  return out;
}

std::string bash_completion_script(const std::string& program,
                                   const std::vector<CompletionCommand>& commands) {
  const std::string fn = function_name(program);
  std::ostringstream s;
  s << "# bash completion for " << program << ", generated by `" << program
    << " completion bash` from its command-line definitions; do not edit.\n";
  s << fn << "() {\n";
  s << "  local cur=\"${COMP_WORDS[COMP_CWORD]}\" prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n";
  s << "  local path=\"\" i word\n";
  s << "  # The command the words so far name (subcommands only; options and values skipped).\n";
  s << "  for ((i = 1; i < COMP_CWORD; i++)); do\n";
  s << "    word=\"${COMP_WORDS[i]}\"\n";
  s << "    case \"$path|$word\" in\n";
  for (const CompletionCommand& c : commands) {
    for (const std::string& sub : c.subcommands) {
      s << "      " << quoted(c.path + "|" + sub) << ") path=\"${path:+$path }$word\" ;;\n";
    }
  }
  s << "    esac\n";
  s << "  done\n";
  s << "  COMPREPLY=()\n";
  s << "  # The value of the option before the cursor.\n";
  s << "  case \"$path|$prev\" in\n";
  for (const CompletionCommand& c : commands) {
    for (const CompletionOption& o : c.options) {
      if (!o.takes_value) continue;
      std::string patterns;
      for (const std::string& n : o.names)
        patterns += (patterns.empty() ? "" : "|") + quoted(c.path + "|" + n);
      s << "    " << patterns << ")\n";
      if (!o.values.empty()) {
        s << "      COMPREPLY=($(compgen -W " << quoted(joined(o.values)) << " -- \"$cur\"))\n";
      }
      if (o.values.empty() || o.files_too) s << "      COMPREPLY+=($(compgen -f -- \"$cur\"))\n";
      s << "      return 0 ;;\n";
    }
  }
  s << "  esac\n";
  s << "  case \"$path\" in\n";
  for (const CompletionCommand& c : commands) {
    std::vector<std::string> words = c.subcommands;
    for (const CompletionOption& o : c.options) {
      for (const std::string& n : o.names) {
        if (n.rfind("--", 0) == 0) words.push_back(n);
      }
    }
    s << "    " << quoted(c.path) << ")\n";
    s << "      if [[ \"$cur\" == -* || -z \"$cur\" ]]; then\n";
    s << "        COMPREPLY=($(compgen -W " << quoted(joined(words)) << " -- \"$cur\"))\n";
    s << "      else\n";
    s << "        COMPREPLY=($(compgen -W " << quoted(joined(c.subcommands)) << " -- \"$cur\"))\n";
    s << "      fi\n";
    if (c.has_positional && c.subcommands.empty()) {
      if (!c.positional.values.empty()) {
        s << "      [[ \"$cur\" == -* ]] || COMPREPLY+=($(compgen -W "
          << quoted(joined(c.positional.values)) << " -- \"$cur\"))\n";
      }
      if (c.positional.values.empty() || c.positional.files_too) {
        s << "      [[ \"$cur\" == -* ]] || COMPREPLY+=($(compgen -f -- \"$cur\"))\n";
      }
    }
    s << "      ;;\n";
  }
  s << "  esac\n";
  s << "  return 0\n";
  s << "}\n";
  s << "complete -o filenames -F " << fn << " " << program << "\n";
  return s.str();
}

std::string zsh_completion_script(const std::string& program,
                                  const std::vector<CompletionCommand>& commands) {
  const std::string fn = function_name(program);
  std::ostringstream s;
  s << "#compdef " << program << "\n";
  s << "# zsh completion for " << program << ", generated by `" << program
    << " completion zsh` from its command-line definitions; do not edit.\n";
  s << fn << "() {\n";
  s << "  local cmdpath=\"\" i word prev=\"${words[CURRENT-1]}\" cur=\"${words[CURRENT]}\"\n";
  s << "  for ((i = 2; i < CURRENT; i++)); do\n";
  s << "    word=\"${words[i]}\"\n";
  s << "    case \"$cmdpath|$word\" in\n";
  for (const CompletionCommand& c : commands) {
    for (const std::string& sub : c.subcommands) {
      s << "      (" << quoted(c.path + "|" + sub)
        << ") cmdpath=\"${cmdpath:+$cmdpath }$word\" ;;\n";
    }
  }
  s << "    esac\n";
  s << "  done\n";
  s << "  case \"$cmdpath|$prev\" in\n";
  for (const CompletionCommand& c : commands) {
    for (const CompletionOption& o : c.options) {
      if (!o.takes_value) continue;
      std::string patterns;
      for (const std::string& n : o.names)
        patterns += (patterns.empty() ? "" : "|") + quoted(c.path + "|" + n);
      s << "    (" << patterns << ")\n";
      if (!o.values.empty())
        s << "      compadd -- " << joined([&] {
          std::vector<std::string> q;
          for (const std::string& v : o.values) q.push_back(quoted(v));
          return q;
        }())
          << "\n";
      if (o.values.empty() || o.files_too) s << "      _files\n";
      s << "      return ;;\n";
    }
  }
  s << "  esac\n";
  s << "  case \"$cmdpath\" in\n";
  for (const CompletionCommand& c : commands) {
    s << "    (" << quoted(c.path) << ")\n";
    if (!c.subcommands.empty()) {
      s << "      local -a subcommands=(";
      for (size_t i = 0; i < c.subcommands.size(); ++i) {
        std::string description = c.subcommand_descriptions[i];
        const size_t cut = description.find_first_of(";(\n");
        if (cut != std::string::npos) description = description.substr(0, cut);
        while (!description.empty() && description.back() == ' ') description.pop_back();
        std::string entry = c.subcommands[i] + ":" + description;
        s << (i ? " " : "") << quoted(entry);
      }
      s << ")\n";
      s << "      [[ \"$cur\" == -* ]] || _describe 'command' subcommands\n";
    }
    std::vector<std::string> flags;
    for (const CompletionOption& o : c.options) {
      for (const std::string& n : o.names) flags.push_back(quoted(n));
    }
    if (!flags.empty()) s << "      [[ \"$cur\" == -* ]] && compadd -- " << joined(flags) << "\n";
    if (c.has_positional && c.subcommands.empty()) {
      if (!c.positional.values.empty()) {
        std::vector<std::string> q;
        for (const std::string& v : c.positional.values) q.push_back(quoted(v));
        s << "      [[ \"$cur\" == -* ]] || compadd -- " << joined(q) << "\n";
      }
      if (c.positional.values.empty() || c.positional.files_too) {
        s << "      [[ \"$cur\" == -* ]] || _files\n";
      }
    }
    s << "      ;;\n";
  }
  s << "  esac\n";
  s << "}\n";
  s << "if (( $+functions[compdef] )); then compdef " << fn << " " << program << "; fi\n";
  return s.str();
}

void add_completion_command(CLI::App& app, const std::string& program, int& exit_code) {
  auto shell = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "completion",
      "Print the shell completion script for bash or zsh (installed by make install)");
  cmd->add_option("shell", *shell, "bash or zsh")->required();
  cmd->callback([&app, program, shell, &exit_code] {
    const std::vector<CompletionCommand> commands = completion_commands(app);
    if (*shell == "bash") {
      std::cout << bash_completion_script(program, commands);
    } else if (*shell == "zsh") {
      std::cout << zsh_completion_script(program, commands);
    } else {
      throw UsageError("completion '" + *shell + "': use bash or zsh");
    }
    exit_code = 0;
  });
}

}  // namespace attn
