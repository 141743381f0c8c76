// attn-bench list [FILTER] [-v] [--json] [--coverage]: kernel families, their variants and tunable
// axes, and the built-in presets. FILTER keeps the variants and presets whose name matches it (a
// glob with '*' or '?', else a part of the name). On a terminal the descriptions wrap under their
// column; elsewhere each entry is one line, for grep. --coverage prints instead which variants
// take which head dim, KV dtype, layout and page size (kernels/coverage.hpp), per family, and for
// latent attention which latent shape, cache dtype and page size (kernels/latent_coverage.hpp).
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>

#include "apps/commands.hpp"
#include "base/glob.hpp"
#include "kernels/coverage.hpp"
#include "kernels/latent_coverage.hpp"
#include "kernels/registry.hpp"
#include "results/table.hpp"
#include "workloads/presets.hpp"

namespace attn {

namespace {

struct ListArgs {
  std::string filter;
  bool verbose = false;
  bool json = false;
  bool coverage = false;
};

// One coverage table cell: the letters of the variants (GPU ones, then CPU ones) of every cell that
// `in_cell` keeps, or "-".
template <class Cell, class InCell>
std::string cell_letters(const std::vector<Cell>& cells, const std::map<std::string, char>& letter,
                         InCell in_cell) {
  std::string letters;
  for (const Cell& c : cells) {
    if (!in_cell(c)) continue;
    for (const auto* names : {&c.gpu_variants, &c.cpu_variants}) {
      for (const std::string& v : *names) {
        if (const auto it = letter.find(v); it != letter.end()) letters += it->second;
      }
    }
  }
  return letters.empty() ? "-" : letters;
}

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

// The coverage matrix of the families FILTER matches (by family or variant name): per family a
// legend of one letter per variant and a table, a row per (KV dtype, layout, page size) and a
// column per head dim, each cell the letters of the variants that accept it ("-": none).
void list_coverage(const ListArgs& args) {
  const Registry registry = make_registry();
  std::vector<Family> families;
  std::map<std::string, std::vector<const Variant*>> variants;  // by family
  for (const auto& v : registry.variants()) {
    const std::string family = to_string(v->family());
    if (!matches(args.filter, v->name()) && !matches(args.filter, family)) continue;
    if (variants.count(family) == 0) families.push_back(v->family());
    variants[family].push_back(v.get());
  }
  if (families.empty()) throw UsageError("'" + args.filter + "' matches no variant or family");
  // mla_decode has no cells (kernels/coverage.hpp): latent attention is not on the matrix' axes.
  std::vector<Family> outside;
  for (Family family : families) {
    if (!in_coverage_matrix(family)) outside.push_back(family);
  }
  families.erase(std::remove_if(families.begin(), families.end(),
                                [](Family family) { return !in_coverage_matrix(family); }),
                 families.end());
  const std::vector<CoverageCell> matrix =
      families.empty() ? std::vector<CoverageCell>{} : coverage_matrix(registry);
  const CoverageAxes& axes = coverage_axes();
  const std::vector<LatentCoverageCell> latent =
      outside.empty() ? std::vector<LatentCoverageCell>{} : latent_coverage_matrix(registry);
  const LatentCoverageAxes& latent_axes = latent_coverage_axes();

  if (args.json) {
    nlohmann::ordered_json out;
    out["axes"] = {{"head_dim", axes.head_dims},
                   {"kv_dtype", axes.kv_dtypes},
                   {"layout", axes.layouts},
                   {"page_size", axes.page_sizes}};
    out["families"] = nlohmann::ordered_json::array();
    for (Family family : families) {
      nlohmann::ordered_json f = {{"name", to_string(family)},
                                  {"variants", nlohmann::ordered_json::array()},
                                  {"cells", nlohmann::ordered_json::array()}};
      for (const Variant* v : variants[to_string(family)]) {
        f["variants"].push_back({{"name", v->name()}, {"backend", to_string(v->backend())}});
      }
      for (const CoverageCell& c : matrix) {
        if (c.family != family) continue;
        f["cells"].push_back({{"head_dim", c.head_dim},
                              {"kv_dtype", c.kv_dtype},
                              {"layout", c.layout},
                              {"page_size", c.page_size},
                              {"gpu_variants", c.gpu_variants},
                              {"cpu_variants", c.cpu_variants}});
      }
      out["families"].push_back(std::move(f));
    }
    out["left_out"] = nlohmann::ordered_json::array();  // families the matrix has no cells for
    for (Family family : outside) out["left_out"].push_back(to_string(family));
    // Their own table: latent attention by latent shape, cache dtype and page size.
    nlohmann::ordered_json table = {{"axes",
                                     {{"shape", latent_axes.shapes},
                                      {"kv_dtype", latent_axes.kv_dtypes},
                                      {"page_size", latent_axes.page_sizes}}},
                                    {"families", nlohmann::ordered_json::array()}};
    for (Family family : outside) {
      nlohmann::ordered_json f = {{"name", to_string(family)},
                                  {"variants", nlohmann::ordered_json::array()},
                                  {"cells", nlohmann::ordered_json::array()}};
      for (const Variant* v : variants[to_string(family)]) {
        f["variants"].push_back({{"name", v->name()}, {"backend", to_string(v->backend())}});
      }
      for (const LatentCoverageCell& c : latent) {
        if (c.family != family) continue;
        f["cells"].push_back({{"shape", c.shape},
                              {"kv_dtype", c.kv_dtype},
                              {"page_size", c.page_size},
                              {"gpu_variants", c.gpu_variants},
                              {"cpu_variants", c.cpu_variants}});
      }
      table["families"].push_back(std::move(f));
    }
    out["latent"] = std::move(table);
    std::cout << out.dump(2) << "\n";
    return;
  }

  std::cout << "Which variants accept a representative workload of each cell (a CUDA variant on "
               "an sm_90 GPU, with some config of its space). Page sizes: 1; 16 (whole TMA "
               "boxes of 8 keys); other (12). 192x128: Q/K head dim 192, V 128.\n";
  // A family's variants as letters: a legend line, and the letters of those in `names`.
  auto legend_of = [&](Family family, std::map<std::string, char>& letter) {
    const std::string name = to_string(family);
    std::string legend;
    for (const Variant* v : variants[name]) {
      const char l = char('a' + letter.size());
      letter[v->name()] = l;
      legend +=
          std::string(legend.empty() ? "" : "  ") + l + " " + v->name().substr(name.size() + 1);
    }
    return legend;
  };
  for (Family family : families) {
    const std::string name = to_string(family);
    std::map<std::string, char> letter;
    const std::string legend = legend_of(family, letter);
    std::cout << "\n" << name << ": " << legend << "\n";
    TextTable table;
    table.add_column("kv dtype", TextTable::Align::left);
    table.add_column("layout", TextTable::Align::left);
    table.add_column("pages", TextTable::Align::left);
    for (const std::string& dim : axes.head_dims) table.add_column(dim, TextTable::Align::left);
    for (const std::string& kv_dtype : axes.kv_dtypes) {
      for (const std::string& layout : axes.layouts) {
        for (const std::string& page_size : axes.page_sizes) {
          std::vector<std::string> row = {kv_dtype, layout, page_size};
          for (const std::string& dim : axes.head_dims) {
            row.push_back(cell_letters(matrix, letter, [&](const CoverageCell& c) {
              return c.family == family && c.head_dim == dim && c.kv_dtype == kv_dtype &&
                     c.layout == layout && c.page_size == page_size;
            }));
          }
          table.add_row(std::move(row));
        }
      }
    }
    table.print(std::cout);
  }
  for (Family family : outside) {
    std::map<std::string, char> letter;
    const std::string legend = legend_of(family, letter);
    std::cout << "\n"
              << to_string(family)
              << " (multi-head latent attention, not on the head-dim axes: a column per "
                 "kv_lora_rank+qk_rope_head_dim, a row per latent cache dtype and page size): "
              << legend << "\n";
    TextTable table;
    table.add_column("kv dtype", TextTable::Align::left);
    table.add_column("pages", TextTable::Align::left);
    for (const std::string& shape : latent_axes.shapes) {
      table.add_column(shape, TextTable::Align::left);
    }
    for (const std::string& kv_dtype : latent_axes.kv_dtypes) {
      for (const std::string& page_size : latent_axes.page_sizes) {
        std::vector<std::string> row = {kv_dtype, page_size};
        for (const std::string& shape : latent_axes.shapes) {
          row.push_back(cell_letters(latent, letter, [&](const LatentCoverageCell& c) {
            return c.family == family && c.shape == shape && c.kv_dtype == kv_dtype &&
                   c.page_size == page_size;
          }));
        }
        table.add_row(std::move(row));
      }
    }
    table.print(std::cout);
  }
}

void list(const ListArgs& args) {
  if (args.coverage) return list_coverage(args);
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
  cmd->add_flag("--coverage", args->coverage,
                "which variants take which head dim, KV dtype, KV layout and page size, per "
                "family (with --json: every cell with its GPU and CPU variants)");
  cmd->callback([args, &invocation] {
    list(*args);
    invocation.exit_code = 0;
  });
}

}  // namespace attn
