// attn-bench kernel validate SPEC: check a kernel spec file (docs/user-kernels.md) as `run
// --kernel` does, before anything else, and say what it declares; attn-bench kernel schema: the
// JSON Schema of kernel spec files.
#include <iostream>
#include <memory>

#include "apps/commands.hpp"
#include "kernels/user/kernel_spec_schema.hpp"
#include "kernels/user/user_kernel_spec.hpp"

namespace attn {

namespace {

// What a valid spec declares, in a few lines.
void describe_spec(const UserKernelSpec& spec, std::ostream& out) {
  size_t configs = 1;
  std::string axes;
  for (const ConfigAxis& axis : spec.axes) {
    configs *= axis.values.size();
    axes += (axes.empty() ? "" : ", ") + axis.name + " (" + std::to_string(axis.values.size()) +
            " values)";
  }
  out << spec.path << ": valid\n";
  out << "variant   " << spec.variant_name() << " (" << to_string(spec.family) << ")\n";
  out << "kernel    " << spec.kernel << ", " << spec.sources.size() << " source file"
      << (spec.sources.size() == 1 ? "" : "s") << "\n";
  out << "axes      " << (axes.empty() ? std::string("none") : axes) << ": " << configs
      << " configs before the constraints (" << spec.constraints.size() << ")\n";
}

}  // namespace

void add_kernel_command(CLI::App& app, Invocation& invocation) {
  CLI::App* kernel =
      app.add_subcommand("kernel", "Check a kernel spec of your own, or print its JSON Schema");
  kernel->require_subcommand(1);
  auto spec_path = std::make_shared<std::string>();
  CLI::App* validate = kernel->add_subcommand(
      "validate",
      "Check a kernel spec file as `run --kernel` does (exit 3 with every problem), without a GPU");
  validate->add_option("spec", *spec_path, "the kernel spec (JSON)")->required();
  validate->callback([spec_path, &invocation] {
    describe_spec(load_user_kernel_spec(*spec_path), std::cout);
    invocation.exit_code = 0;
  });
  kernel
      ->add_subcommand("schema",
                       "Print the JSON Schema of kernel spec files (for editors and other tools; "
                       "`validate` checks more, docs/user-kernels.md)")
      ->callback([&invocation] {
        std::cout << kernel_spec_schema_text();
        invocation.exit_code = 0;
      });
}

}  // namespace attn
