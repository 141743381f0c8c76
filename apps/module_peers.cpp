#include "apps/module_peers.hpp"

#include <algorithm>
#include <map>

#include "base/errors.hpp"
#include "measure/evaluator.hpp"
#include "measure/peer_results.hpp"
#include "tuner/worker_protocol.hpp"
#include "workloads/batch_dump.hpp"
#include "workloads/batch_features.hpp"

namespace attn {

namespace fs = std::filesystem;

ModulePeerRunner::ModulePeerRunner(Options options, const Batch& batch,
                                   const std::vector<float>& reference, const std::string& oracle)
    : options_(std::move(options)), batch_(batch), dump_(options_.folder / "dump") {
  std::vector<DumpTensor> tensors = batch_tensors(batch);
  tensors.push_back(reference_output_tensor(batch, reference));
  write_batch_dump(batch, std::move(tensors), dump_.string(),
                   dump_verification_fields(batch, oracle));
}

PeerRunnerOutcome ModulePeerRunner::run(const std::vector<std::string>& units,
                                        const MeasurePolicy& policy, const Registry& registry,
                                        std::function<bool()> stop_requested) const {
  PeerRunnerRequest request;
  request.argv = {options_.python, options_.script.string(),      dump_.string(),
                  "--policy-json", policy_to_json(policy).dump(), "--device",
                  options_.device};
  for (const std::string& module : options_.modules) {
    request.argv.push_back("--peer-module");
    request.argv.push_back(module);
  }
  request.peers = units;
  request.folder = options_.folder.string();
  request.deadline_s = options_.deadline_s;
  request.backend = options_.backend;
  request.policy = policy.name;
  request.stop_requested = std::move(stop_requested);
  PeerRunnerOutcome outcome = run_peers_with_deadlines(request);
  if (outcome.header && outcome.header->spec_hash != batch_.spec_hash) {
    throw std::logic_error("the peer runner measured another batch (" + outcome.header->spec_hash +
                           ")");
  }
  for (PeerRow& row : outcome.rows) apply_peer_work(batch_, registry, row.measurement);
  return outcome;
}

std::vector<std::string> module_peer_units(const std::vector<RunnerPeer>& listed) {
  std::vector<std::string> units;
  for (const RunnerPeer& peer : listed) {
    if (peer.name.rfind("peer.user.", 0) == 0) units.push_back(peer.unit);
  }
  return units;
}

std::string module_peer_unit(const std::string& name, const KernelConfig& config) {
  const std::string key = config.key();
  return key.empty() ? name : name + "@" + key;
}

namespace {

// Everything `batch` uses, declared: the peer's own declines() is its gate (in the runner).
FeatureSet features_of(const Batch& batch) {
  FeatureSet set;
  for (const FeatureUse& use : batch_features(batch).uses) {
    if (use.number) {
      set.with_numbers(use.name, {*use.number});
    } else if (!use.value.empty()) {
      set.with(use.name, std::vector<std::string>{use.value});
    } else {
      set.with(use.name);
    }
  }
  return set;
}

class ModulePeerVariant : public Variant {
 public:
  ModulePeerVariant(std::string name, std::string summary, Backend backend, Family family,
                    Work work, FeatureSet features, std::vector<ConfigAxis> axes)
      : name_(std::move(name)),
        summary_(std::move(summary)),
        backend_(backend),
        family_(family),
        work_(work),
        features_(std::move(features)),
        axes_(std::move(axes)) {}

  std::string name() const override { return name_; }
  Family family() const override { return family_; }
  Backend backend() const override { return backend_; }
  std::string summary() const override { return summary_; }
  FeatureSet features() const override { return features_; }
  std::vector<ConfigAxis> space(const Batch&, const Target&) const override { return axes_; }
  KernelConfig default_config(const Batch&, const Target&) const override {
    KernelConfig config;
    for (const ConfigAxis& axis : axes_) config.set(axis.name, axis.values.front());
    return config;
  }
  std::unique_ptr<Launcher> prepare(Problem&, const KernelConfig&, ExecContext&) const override {
    throw std::logic_error(name_ + " runs in the peer runner (ModulePeerEvaluator), not here");
  }
  Work work(const Batch&) const override { return work_; }

 protected:
  Support supports(const Batch&, const KernelConfig& config, const Target&) const override {
    std::vector<std::string> names;
    for (const ConfigAxis& axis : axes_) names.push_back(axis.name);
    return config_has_exactly(config, names, name_);
  }

 private:
  std::string name_, summary_;
  Backend backend_;
  Family family_;
  Work work_;
  FeatureSet features_;
  std::vector<ConfigAxis> axes_;
};

}  // namespace

std::vector<std::unique_ptr<Variant>> module_peer_variants(const std::vector<RunnerPeer>& listed,
                                                           const Batch& batch,
                                                           const Registry& registry) {
  const Family family = peer_family(batch, registry);
  const Variant* model = registry.find(to_string(family) + ".cpu_reference");
  ATTN_ASSERT(model != nullptr, "every family has a cpu_reference variant");
  const Work work = model->work(batch);
  const FeatureSet features = features_of(batch);
  // The runner lists one run per config, in the order of its space's product: each axis's values
  // in the order the module declared them.
  std::vector<std::string> order;
  std::map<std::string, std::vector<const RunnerPeer*>> runs;
  for (const RunnerPeer& peer : listed) {
    if (peer.name.rfind("peer.user.", 0) != 0) continue;
    if (!runs.count(peer.name)) order.push_back(peer.name);
    runs[peer.name].push_back(&peer);
  }
  std::vector<std::unique_ptr<Variant>> variants;
  for (const std::string& name : order) {
    std::vector<ConfigAxis> axes;
    for (const RunnerPeer* run : runs[name]) {
      if (run->config.empty()) continue;
      const KernelConfig config = KernelConfig::from_key(run->config);
      for (const auto& [axis, value] : config.values()) {
        auto it = std::find_if(axes.begin(), axes.end(),
                               [&](const ConfigAxis& a) { return a.name == axis; });
        if (it == axes.end()) {
          axes.push_back({axis, {}, "declared by the module's space"});
          it = std::prev(axes.end());
        }
        if (std::find(it->values.begin(), it->values.end(), value) == it->values.end()) {
          it->values.push_back(value);
        }
      }
    }
    const RunnerPeer& first = *runs[name].front();
    const Backend backend = first.device == "cpu" ? Backend::cpu : Backend::cuda;
    variants.push_back(std::make_unique<ModulePeerVariant>(name, first.summary, backend, family,
                                                           work, features, std::move(axes)));
  }
  return variants;
}

Measurement ModulePeerEvaluator::evaluate(const Variant& variant, const KernelConfig& config,
                                          const MeasurePolicy& policy) {
  const std::string unit = module_peer_unit(variant.name(), config);
  PeerRunnerOutcome outcome = runner_.run({unit}, policy, registry_, stop_requested_);
  Measurement m = case_measurement(variant, config, policy);
  if (outcome.stopped && outcome.rows.empty()) {
    m.disposition = Disposition::timed_out;
    m.reason = "the peer runner was stopped by the stop request";
    m.timing.stop_reason = "interrupted";
    return m;
  }
  if (outcome.rows.empty()) {
    // The runner ended without a line for this config (it died: a segfault in the module, an
    // exit of its own): the config is what failed, and the sweep goes on.
    m.disposition = Disposition::crashed;
    m.reason = outcome.failure.empty() ? "the peer runner recorded nothing" : outcome.failure;
    return m;
  }
  Measurement row = std::move(outcome.rows.front().measurement);
  if (row.variant != m.variant || row.config_key != m.config_key) {
    throw std::logic_error("the peer runner ran " + row.variant + " {" + row.config_key +
                           "} when asked for " + unit);
  }
  row.family = m.family;
  row.backend = m.backend;
  row.policy = m.policy;
  return row;
}

}  // namespace attn
