// attn-bench list: kernel families, their variants and tunable axes, and the built-in presets.
#include <iostream>
#include <map>
#include <memory>

#include "apps/commands.hpp"
#include "kernels/registry.hpp"
#include "results/table.hpp"
#include "workloads/presets.hpp"

namespace attn {

namespace {
void list(bool verbose) {
  const Registry registry = make_registry();
  const WorkloadSpec preset = load_preset("default");
  const Batch batch = generate_batch(preset);
  std::map<std::string, std::vector<const Variant*>> by_family;
  for (const auto& v : registry.variants()) by_family[to_string(v->family())].push_back(v.get());

  std::cout << "families and variants:\n";
  for (const auto& [family, variants] : by_family) {
    std::cout << "\n" << family << "\n";
    for (const Variant* v : variants) {
      std::cout << format("  %-28s %-5s %s\n", v->name().c_str(), to_string(v->backend()).c_str(),
                          v->summary().c_str());
      if (!verbose) continue;
      for (const ConfigAxis& axis : v->space(batch, Target::cpu())) {
        std::string values;
        for (int64_t value : axis.values)
          values += (values.empty() ? "" : ",") + std::to_string(value);
        std::cout << format("      %-16s {%s}  %s\n", axis.name.c_str(), values.c_str(),
                            axis.help.c_str());
      }
    }
  }
  std::cout << "\npresets (attn-bench run NAME):\n";
  for (const auto& name : preset_names()) {
    std::cout << format("  %-32s %s\n", name.c_str(), load_preset(name).description.c_str());
  }
}
}  // namespace

void add_list_command(CLI::App& app, Invocation& invocation) {
  auto verbose = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("list", "List kernel families, variants and presets");
  cmd->add_flag("-v,--verbose", *verbose, "also list each variant's tunable axes");
  cmd->callback([verbose, &invocation] {
    list(*verbose);
    invocation.exit_code = 0;
  });
}

}  // namespace attn
