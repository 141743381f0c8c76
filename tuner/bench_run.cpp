#include "tuner/bench_run.hpp"

#include "kernels/device/cuda_context.hpp"
#include "kernels/jit/jit_compiler.hpp"
#include "tuner/device_records.hpp"
#include "tuner/evaluator.hpp"

namespace attn {

bool BenchReport::any_failed() const {
  for (const auto& row : rows) {
    const Disposition d = row.measurement.disposition;
    if (d != Disposition::passed && d != Disposition::unsupported) return true;
  }
  return false;
}

bool BenchReport::any_passed() const {
  for (const auto& row : rows) {
    if (row.measurement.disposition == Disposition::passed) return true;
  }
  return false;
}

namespace {
KernelConfig with_override(KernelConfig config, const std::optional<KernelConfig>& override_axes) {
  if (!override_axes) return config;
  for (const auto& [axis, value] : override_axes->values()) config.set(axis, value);
  return config;
}
}  // namespace

struct BenchSession::State {
  std::unique_ptr<JitCompiler> jit;
  std::unique_ptr<Evaluator> evaluator;
};

BenchSession::BenchSession(const Batch& batch, const BenchOptions& options)
    : batch_(batch), options_(options), state_(std::make_unique<State>()) {}
BenchSession::BenchSession(BenchSession&&) noexcept = default;
BenchSession::~BenchSession() = default;

BenchSession BenchSession::open(const Batch& batch, const BenchOptions& options) {
  BenchSession session(batch, options);
  const Evaluator::Options evaluator_options{options.policy, options.cpu_threads};
  DeviceDiscovery discovery;
  if (!options.force_cpu) discovery = discover_devices();
  if (!options.force_cpu && !discovery.devices.empty()) {
    if (options.device < 0 || options.device >= int(discovery.devices.size())) {
      throw UsageError("--device " + std::to_string(options.device) + ": this machine has " +
                       std::to_string(discovery.devices.size()) + " GPU(s)");
    }
    const DeviceInfo& device = discovery.devices[size_t(options.device)];
    session.state_->jit = std::make_unique<JitCompiler>(JitOptions{options.jit_cache_dir});
    session.backend_ = "cuda";
    session.device_ = device_record(device, session.state_->jit->nvrtc_version());
    session.state_->evaluator =
        Evaluator::on_cuda(batch, discovery.api, device, *session.state_->jit, evaluator_options);
  } else {
    session.backend_ = "cpu";
    session.backend_note_ = options.force_cpu ? "CPU backend requested (--cpu)"
                                              : "no GPU found (" + discovery.why_none +
                                                    "): running the CPU reference variant";
    session.device_ = host_cpu_record();
    session.state_->evaluator = Evaluator::on_cpu(batch, evaluator_options);
  }
  return session;
}

BenchReport BenchSession::run(const Registry& registry, Store& store, const RunRecord& run,
                              const std::function<void(const std::string&)>& progress) {
  Evaluator& evaluator = *state_->evaluator;
  const Backend backend = evaluator.target().backend;
  std::vector<const Variant*> variants;
  for (const Variant* v : registry.matching(options_.variant_filter)) {
    if (v->backend() == backend) variants.push_back(v);
  }

  BenchReport report;
  report.run_id = store.begin_run(run);
  const int64_t device_id = store.upsert_device(device_);
  const int64_t workload_id =
      store.upsert_workload({batch_.spec_hash, batch_.spec.name, canonical_json(batch_.spec)});
  for (const Variant* variant : variants) {
    const KernelConfig config = with_override(variant->default_config(batch_, evaluator.target()),
                                              options_.config_override);
    BenchRow row{variant->full_name(config), {}};
    progress("running " + row.full_name);
    row.measurement = evaluator.evaluate(*variant, config);
    store.add_measurement(report.run_id, device_id, workload_id, row.measurement);
    report.rows.push_back(std::move(row));
  }
  store.finish_run(report.run_id, report.any_failed() ? "failed_cases" : "completed");
  return report;
}

}  // namespace attn
