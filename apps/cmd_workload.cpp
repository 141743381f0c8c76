// attn-bench workload validate|show|dump FILE|PRESET: check a workload, summarise the batch it
// generates, or write that batch out for other tools. No GPU needed for any of them.
#include <iostream>
#include <memory>

#include "apps/commands.hpp"
#include "kernels/problem.hpp"
#include "kernels/reference/paged_attention_reference.hpp"
#include "measure/verify.hpp"
#include "workloads/batch.hpp"
#include "workloads/batch_dump.hpp"
#include "workloads/batch_summary.hpp"

namespace attn {

namespace {

struct WorkloadArgs {
  std::string workload;
  std::string out_dir;
  bool no_reference = false;
  size_t threads = 0;
};

// Validation covers the generated batch too (pool capacity, mask files against the lengths):
// everything that could refuse the workload later is checked here, and no tensor is filled.
void validate(const WorkloadArgs& args) {
  const Batch batch = generate_batch(load_workload_argument(args.workload));
  std::cout << "ok: " << batch.spec.name << " (" << batch.spec_hash << ")\n";
}

void show(const WorkloadArgs& args) {
  const Batch batch = generate_batch(load_workload_argument(args.workload));
  std::cout << format_batch_summary(batch, summarize_batch(batch));
}

void dump(const WorkloadArgs& args) {
  const Batch batch = generate_batch(load_workload_argument(args.workload));
  std::vector<DumpTensor> tensors = batch_tensors(batch);
  nlohmann::json extra = nullptr;
  if (!args.no_reference) {
    std::cerr << "attn-bench: computing the CPU reference output (--no-reference skips it)\n";
    const Problem host = Problem::on_host(batch);
    tensors.push_back(
        reference_output_tensor(batch, paged_attention_reference(host, args.threads)));
    extra = dump_verification_fields(batch, "cpu_reference");
  }
  size_t bytes = 0;
  for (const DumpTensor& t : tensors) bytes += t.tensor.data.size();
  const size_t count = tensors.size();
  write_batch_dump(batch, std::move(tensors), args.out_dir, extra);
  std::cout << "wrote " << args.out_dir << "/" << kDumpTensorsFile << " (" << count << " tensors, "
            << bytes << " bytes) and " << args.out_dir << "/" << kDumpIndexFile << " for "
            << batch.spec.name << " (" << batch.spec_hash << ")\n";
}

CLI::App* add_action(CLI::App* parent, const std::string& name, const std::string& help,
                     const std::shared_ptr<WorkloadArgs>& args) {
  CLI::App* cmd = parent->add_subcommand(name, help);
  cmd->add_option("workload", args->workload, "workload.json or a preset name (a file wins)")
      ->required();
  return cmd;
}

}  // namespace

nlohmann::json dump_verification_fields(const Batch& batch, const std::string& oracle) {
  return {{"reference_oracle", oracle},
          {"verification",
           {{"rule",
             "every element finite, and the relative L2 error of every output row (one query "
             "token and q head) at most the tolerance (measure/verify.cpp)"},
            {"output_dtype", to_string(batch.dtype)},
            {"tolerance", tolerance_for(batch.dtype)}}}};
}

void add_workload_command(CLI::App& app, Invocation& invocation) {
  auto args = std::make_shared<WorkloadArgs>();
  CLI::App* workload = app.add_subcommand("workload", "Validate, summarise or dump a workload");
  workload->require_subcommand(1);
  add_action(workload, "validate", "Check a workload and the batch it generates", args)
      ->callback([args, &invocation] {
        validate(*args);
        invocation.exit_code = 0;
      });
  add_action(workload, "show", "Summarise the batch a workload generates", args)
      ->callback([args, &invocation] {
        show(*args);
        invocation.exit_code = 0;
      });
  CLI::App* dump_cmd =
      add_action(workload, "dump", "Write the batch as safetensors plus a JSON index", args);
  dump_cmd->add_option("--out", args->out_dir, "output folder")->required();
  dump_cmd->add_flag("--no-reference", args->no_reference,
                     "skip the CPU reference output (for batches too large to compute on the CPU)");
  dump_cmd->add_option("--threads", args->threads, "CPU threads for the reference (default: all)");
  dump_cmd->callback([args, &invocation] {
    dump(*args);
    invocation.exit_code = 0;
  });
}

}  // namespace attn
