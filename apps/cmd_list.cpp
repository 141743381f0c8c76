// attn-bench list [FILTER] [-v] [--json]: kernel families, their variants and tunable axes, and
// the built-in presets. FILTER keeps the variants and presets whose name matches it (a glob with
// '*' or '?', else a part of the name). On a terminal the descriptions wrap under their column;
// elsewhere each entry is one line, for grep.
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>

#include "apps/commands.hpp"
#include "base/glob.hpp"
#include "kernels/registry.hpp"
#include "results/table.hpp"
#include "workloads/presets.hpp"

namespace attn {

namespace {

struct ListArgs {
  std::string filter;
  bool verbose = false;
  bool json = false;
};

bool matches(const std::string& filter, const std::string& name) {
  if (filter.empty()) return true;
  if (filter.find_first_of("*?") != std::string::npos) return glob_match(filter, name);
  return name.find(filter) != std::string::npos;
}

// Columns of standard output when it is a terminal ($COLUMNS, else the terminal's own); 0 when it
// is not one (no wrapping).
size_t terminal_columns() {
  if (!::isatty(STDOUT_FILENO)) return 0;
  if (const char* columns = std::getenv("COLUMNS"); columns && std::atoi(columns) > 0) {
    return size_t(std::atoi(columns));
  }
  winsize size{};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  return 80;
}

// `name` padded to `width`, then `text` wrapped at word boundaries to `columns` (0: no wrapping),
// its continuation lines indented under its first.
std::string entry(const std::string& indent, const std::string& name, size_t width,
                  const std::string& text, size_t columns) {
  std::string head = indent + name;
  head += std::string(head.size() < indent.size() + width ? indent.size() + width - head.size() : 0,
                      ' ') +
          " ";
  if (head.size() > indent.size() + width + 1)
    head = indent + name + "\n" + std::string(indent.size() + width + 1, ' ');
  const size_t hang = indent.size() + width + 1;
  if (columns == 0 || columns <= hang + 20) return head + text + "\n";
  std::string out = head;
  size_t line = hang;
  std::istringstream words(text);
  bool first = true;
  for (std::string word; words >> word;) {
    if (!first && line + 1 + word.size() > columns) {
      out += "\n" + std::string(hang, ' ');
      line = hang;
      first = true;
    }
    if (!first) {
      out += " ";
      ++line;
    }
    out += word;
    line += word.size();
    first = false;
  }
  return out + "\n";
}

void list(const ListArgs& args) {
  const Registry registry = make_registry();
  const WorkloadSpec preset = load_preset("default");
  const Batch batch = generate_batch(preset);
  std::map<std::string, std::vector<const Variant*>> by_family;
  for (const auto& v : registry.variants()) {
    const std::string family = to_string(v->family());
    if (matches(args.filter, v->name()) || matches(args.filter, family)) {
      by_family[family].push_back(v.get());
    }
  }
  std::vector<std::string> presets;
  for (const std::string& name : preset_names()) {
    if (matches(args.filter, name)) presets.push_back(name);
  }

  if (args.json) {
    nlohmann::ordered_json out;
    out["families"] = nlohmann::ordered_json::array();
    for (const auto& [family, variants] : by_family) {
      nlohmann::ordered_json f = {{"name", family}, {"variants", nlohmann::ordered_json::array()}};
      for (const Variant* v : variants) {
        nlohmann::ordered_json axes = nlohmann::ordered_json::array();
        for (const ConfigAxis& axis : v->space(batch, Target::cpu())) {
          axes.push_back({{"name", axis.name}, {"values", axis.values}, {"help", axis.help}});
        }
        f["variants"].push_back({{"name", v->name()},
                                 {"backend", to_string(v->backend())},
                                 {"summary", v->summary()},
                                 {"axes", axes}});
      }
      out["families"].push_back(std::move(f));
    }
    out["presets"] = nlohmann::ordered_json::array();
    for (const std::string& name : presets) {
      const WorkloadSpec spec = load_preset(name);
      out["presets"].push_back(
          {{"name", name}, {"workload", spec.name}, {"description", spec.description}});
    }
    std::cout << out.dump(2) << "\n";
    return;
  }

  const size_t columns = terminal_columns();
  size_t variant_width = 24, preset_width = 24;
  for (const auto& [family, variants] : by_family) {
    for (const Variant* v : variants) variant_width = std::max(variant_width, v->name().size());
  }
  for (const std::string& name : presets) preset_width = std::max(preset_width, name.size());
  variant_width = std::min<size_t>(variant_width, 40);
  preset_width = std::min<size_t>(preset_width, 44);
  if (!by_family.empty()) std::cout << "families and variants:\n";
  for (const auto& [family, variants] : by_family) {
    std::cout << "\n" << family << "\n";
    for (const Variant* v : variants) {
      std::cout << entry("  ", v->name(), variant_width,
                         format("%-5s %s", to_string(v->backend()).c_str(), v->summary().c_str()),
                         columns);
      if (!args.verbose) continue;
      for (const ConfigAxis& axis : v->space(batch, Target::cpu())) {
        std::string values;
        for (int64_t value : axis.values)
          values += (values.empty() ? "" : ",") + std::to_string(value);
        std::cout << entry("      ", axis.name, 16, "{" + values + "}  " + axis.help, columns);
      }
    }
  }
  if (!presets.empty()) {
    std::cout << (by_family.empty() ? "" : "\n") << "presets (attn-bench run NAME):\n";
  }
  for (const std::string& name : presets) {
    std::cout << entry("  ", name, preset_width, load_preset(name).description, columns);
  }
  if (by_family.empty() && presets.empty()) {
    throw UsageError("'" + args.filter + "' matches no variant, family or preset");
  }
}

}  // namespace

void add_list_command(CLI::App& app, Invocation& invocation) {
  auto args = std::make_shared<ListArgs>();
  CLI::App* cmd = app.add_subcommand("list", "List kernel families, variants and presets");
  cmd->add_option("filter", args->filter,
                  "only variants, families and presets whose name matches: a glob ('paged_*') or "
                  "a part of the name ('fp8')");
  cmd->add_flag("-v,--verbose", args->verbose, "also list each variant's tunable axes");
  cmd->add_flag("--json", args->json,
                "one JSON object (families with their variants and axes, presets) for scripts");
  cmd->callback([args, &invocation] {
    list(*args);
    invocation.exit_code = 0;
  });
}

}  // namespace attn
