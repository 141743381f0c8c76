// attn-tune worker WORKLOAD [--cpu] [--device N] [--threads N] [--kernel SPEC]... --fd N: hidden;
// started by `attn-tune tune --isolate workers` (tuner/worker_evaluator.hpp), never by hand. Sets
// up the workload's batch on the backend once, then answers evaluation requests on socket N
// (tuner/worker_protocol.hpp) until the orchestrator closes it. $ATTN_TUNE_WORKER_FAULTS injects
// test-only faults (tuner/worker_serve.hpp).
#include <cstdlib>
#include <memory>

#include "apps/tune_backend.hpp"
#include "apps/tune_commands.hpp"
#include "apps/user_kernels.hpp"
#include "kernels/registry.hpp"
#include "tuner/worker_serve.hpp"
#include "workloads/batch.hpp"

namespace attn {

namespace {

struct WorkerArgs {
  std::string workload;
  bool cpu = false;
  int device = 0;
  size_t threads = 0;
  int fd = -1;
  std::vector<std::string> kernels;
};

int serve(const WorkerArgs& args) {
  const char* fault_text = std::getenv("ATTN_TUNE_WORKER_FAULTS");
  const std::vector<WorkerFault> faults = parse_worker_faults(fault_text ? fault_text : "");
  meet_startup_faults(faults, args.workload);
  const WorkloadSpec spec = load_workload_argument(args.workload);
  const Batch batch = generate_batch(spec);
  const Registry registry = make_registry_with_user_kernels(args.kernels);
  BackendChoice backend = choose_tune_backend(args.cpu, args.device);
  // The orchestrator's stop request (SIGUSR1) ends sampling after the sample in hand.
  SamplingHooks hooks;
  hooks.stop_requested = worker_stop_requested;
  std::unique_ptr<Evaluator> evaluator =
      open_tune_evaluator(backend, batch, args.threads, std::move(hooks));
  return serve_worker(args.fd, registry, *evaluator, faults);
}

}  // namespace

void add_tune_worker_command(CLI::App& app, Invocation& invocation) {
  auto args = std::make_shared<WorkerArgs>();
  CLI::App* cmd = app.add_subcommand("worker", "evaluation worker of `tune --isolate workers`");
  cmd->group("");  // hidden from --help
  cmd->add_option("workload", args->workload)->required();
  cmd->add_flag("--cpu", args->cpu);
  cmd->add_option("--device", args->device);
  cmd->add_option("--threads", args->threads);
  cmd->add_option("--fd", args->fd)->required();
  cmd->add_option("--kernel", args->kernels);
  cmd->callback([args, &invocation] { invocation.exit_code = serve(*args); });
}

}  // namespace attn
