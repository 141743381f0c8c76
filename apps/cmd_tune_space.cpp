// attn-tune space WORKLOAD --variant GLOB [-a axis=v1,v2 ...] [--kernel SPEC ...]: each matching
// variant's axes and how many configs survive pruning by Variant::check(), with the refusals
// counted by reason. Needs no GPU: CUDA variants are pruned for the device present or a described
// target (--arch ...).
#include <iostream>
#include <memory>

#include "apps/memory_budget.hpp"
#include "apps/tune_commands.hpp"
#include "apps/user_kernels.hpp"
#include "base/errors.hpp"
#include "kernels/registry.hpp"
#include "results/table.hpp"
#include "tuner/search_space.hpp"
#include "workloads/batch.hpp"
#include "workloads/mask_checks.hpp"

namespace attn {

namespace {

struct SpaceArgs {
  std::string workload;
  std::string variant;
  std::vector<std::string> axes;
  std::vector<std::string> kernels;  // --kernel: user kernel specs
  TargetArgs target;
  size_t reasons = 8;
};

// The refusal reasons, most frequent first; the rest summed in one line.
void print_refusals(const SearchSpace& space, size_t limit, std::ostream& out) {
  std::vector<std::pair<size_t, std::string>> sorted;
  for (const auto& [reason, count] : space.refusals) sorted.emplace_back(count, reason);
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  size_t rest = 0, rest_reasons = 0;
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (i < limit) {
      out << format("    %6zu  %s\n", sorted[i].first, sorted[i].second.c_str());
    } else {
      rest += sorted[i].first;
      ++rest_reasons;
    }
  }
  if (rest > 0) {
    out << format("    %6zu  (%zu other reasons; --reasons N to list more)\n", rest, rest_reasons);
  }
}

int space(const SpaceArgs& args) {
  const WorkloadSpec spec = load_workload_argument(args.workload);
  std::vector<AxisOverride> overrides;
  for (const std::string& text : args.axes) overrides.push_back(parse_axis_override(text));
  const Registry registry = make_registry_with_user_kernels(args.kernels);
  const std::vector<const Variant*> variants = registry.matching(args.variant);
  if (variants.empty()) {
    throw UsageError("--variant '" + args.variant + "' matches no variant (see `attn-bench list`)");
  }
  check_mask_limits(spec);
  check_host_memory(spec, args.workload, MemoryUse::batch, "");
  const Batch batch = generate_batch(spec);
  require_known_axes(variants, batch, overrides);
  bool any_cuda = false;
  for (const Variant* v : variants) any_cuda |= v->backend() == Backend::cuda;
  std::optional<TargetChoice> cuda;
  if (any_cuda) cuda = choose_cuda_target(args.target);
  const Target cpu = Target::cpu();

  std::ostream& out = std::cout;
  out << "workload  " << spec.name << " (" << batch.spec_hash.substr(0, 12) << ")\n";
  if (cuda) out << "target    " << describe(cuda->cuda) << " [" << cuda->from << "]\n";
  out << "target    " << describe(cpu) << "\n";
  size_t total = 0, kept = 0;
  for (const Variant* v : variants) {
    const Target& target = v->backend() == Backend::cuda ? cuda->cuda : cpu;
    const SearchSpace s = build_space(*v, batch, target, overrides);
    out << "\n" << v->name() << " (" << to_string(v->backend()) << ")\n";
    if (s.axes.empty()) out << "  no tunable axes: one config\n";
    for (const ConfigAxis& axis : s.axes) {
      std::string values;
      for (int64_t value : axis.values) {
        values += (values.empty() ? "" : ",") + std::to_string(value);
      }
      out << format("  %-16s {%s}  %s\n", axis.name.c_str(), values.c_str(), axis.help.c_str());
    }
    out << format("  configs   %zu in the product, %zu after pruning (%zu refused)\n", s.total,
                  s.configs.size(), s.pruned());
    print_refusals(s, args.reasons, out);
    total += s.total;
    kept += s.configs.size();
  }
  out << format("\ntotal     %zu configs, %zu after pruning, over %zu variant(s)\n", total, kept,
                variants.size());
  return 0;
}

}  // namespace

void add_tune_space_command(CLI::App& app, Invocation& invocation) {
  auto args = std::make_shared<SpaceArgs>();
  CLI::App* cmd = app.add_subcommand(
      "space", "Print each variant's tunable axes and how many configs survive pruning");
  add_space_selection(*cmd, args->workload, args->variant, args->axes);
  add_kernel_spec_flag(cmd, args->kernels);
  cmd->add_option("--reasons", args->reasons, "refusal reasons listed per variant (default 8)");
  args->target.add_to(*cmd);
  cmd->callback([args, &invocation] { invocation.exit_code = space(*args); });
}

}  // namespace attn
