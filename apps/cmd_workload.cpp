// attn-bench workload validate|show|dump FILE|PRESET: check a workload, summarise the batch it
// generates, or write that batch out for other tools; attn-bench workload schema: the JSON Schema
// of workload.json. No GPU needed for any of them.
#include <iostream>
#include <memory>

#include "apps/commands.hpp"
#include "apps/memory_budget.hpp"
#include "apps/peer_runner_setup.hpp"
#include "base/byte_size.hpp"
#include "kernels/problem.hpp"
#include "kernels/reference/paged_attention_reference.hpp"
#include "measure/verify.hpp"
#include "workloads/batch.hpp"
#include "workloads/batch_dump.hpp"
#include "workloads/batch_summary.hpp"
#include "workloads/mask_checks.hpp"
#include "workloads/workload_schema.hpp"

namespace attn {

namespace {

struct WorkloadArgs {
  std::string workload;
  std::string out_dir;
  bool no_reference = false;
  size_t threads = 0;
  std::string max_host_memory;
};

// Validation covers what generating the batch could refuse (pool capacity, mask sizes, mask
// files against the lengths) and what a run would need of host memory, without building the
// batch: it answers at once and in little memory for any workload.
void validate(const WorkloadArgs& args) {
  const WorkloadSpec spec = load_workload_argument(args.workload);
  check_mask_limits(spec);
  const int64_t need = check_host_memory(spec, args.workload, MemoryUse::run, args.max_host_memory);
  check_mask_files(spec);
  std::cout << "ok: " << spec.name << " (" << content_hash(spec) << ")\n";
  std::cout << "memory: attn-bench run needs about " << format_bytes(need)
            << " of host memory (budget " << format_bytes(host_memory_budget(args.max_host_memory))
            << ")\n";
}

// The batch of a workload, once its host memory for `use` is within the budget.
Batch budgeted_batch(const WorkloadArgs& args, MemoryUse use) {
  const WorkloadSpec spec = load_workload_argument(args.workload);
  check_mask_limits(spec);
  check_host_memory(spec, args.workload, use, args.max_host_memory);
  return generate_batch(spec);
}

void show(const WorkloadArgs& args) {
  const Batch batch = budgeted_batch(args, MemoryUse::batch);
  std::cout << format_batch_summary(batch, summarize_batch(batch));
}

void dump(const WorkloadArgs& args) {
  const Batch batch =
      budgeted_batch(args, args.no_reference ? MemoryUse::dump : MemoryUse::dump_with_reference);
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
  cmd->add_option("workload", args->workload,
                  "workload.json, a preset name or SUITE#WORKLOAD (a file wins)")
      ->required();
  add_max_host_memory_flag(cmd, args->max_host_memory);
  return cmd;
}

}  // namespace

void add_workload_command(CLI::App& app, Invocation& invocation) {
  auto args = std::make_shared<WorkloadArgs>();
  CLI::App* workload = app.add_subcommand("workload", "Validate, summarise or dump a workload");
  workload->require_subcommand(1);
  add_action(workload, "validate",
             "Check a workload and estimate the host memory a run needs, without building it", args)
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
  workload
      ->add_subcommand("schema",
                       "Print the JSON Schema of workload.json (for editors and other tools; "
                       "`validate` checks more, docs/workload.md)")
      ->callback([&invocation] {
        std::cout << workload_schema_text();
        invocation.exit_code = 0;
      });
}

}  // namespace attn
