#include "measure/bench_run.hpp"

#include "measure/backend.hpp"
#include "measure/evaluator.hpp"
#include "results/roofline.hpp"

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
  BackendChoice backend;  // holds the JIT compiler the evaluator uses
  std::unique_ptr<Evaluator> evaluator;
};

BenchSession::BenchSession(const Batch& batch, const BenchOptions& options)
    : batch_(batch), options_(options), state_(std::make_unique<State>()) {}
BenchSession::BenchSession(BenchSession&&) noexcept = default;
BenchSession::~BenchSession() = default;

BenchSession BenchSession::open(const Batch& batch, const BenchOptions& options) {
  BenchSession session(batch, options);
  Evaluator::Options evaluator_options{options.policy, options.cpu_threads};
  evaluator_options.reference = options.reference;
  evaluator_options.sampling = options.sampling;
  BackendChoice& backend = session.state_->backend;
  backend = choose_backend(options.force_cpu, options.device, "running the CPU reference variant",
                           options.jit_cache_dir);
  session.backend_ = backend.gpu() ? "cuda" : "cpu";
  session.backend_note_ = backend.note;
  session.device_ = backend.device;
  session.state_->evaluator = open_evaluator(backend, batch, evaluator_options);
  return session;
}

const std::string& BenchSession::clock_note() const {
  return state_->evaluator->clock_note();
}

const std::string& BenchSession::reference_name() const {
  return state_->evaluator->reference_name();
}

std::string BenchSession::reference_choice() const {
  return state_->evaluator->reference_choice();
}

std::vector<BenchCase> BenchSession::cases(const Registry& registry) const {
  const Evaluator& evaluator = *state_->evaluator;
  std::vector<BenchCase> out;
  for (const Variant* v : registry.matching(options_.variant_filter)) {
    if (v->backend() != evaluator.target().backend) continue;
    BenchCase c;
    c.variant = v;
    c.config =
        with_override(v->default_config(batch_, evaluator.target()), options_.config_override);
    c.full_name = v->full_name(c.config);
    out.push_back(std::move(c));
  }
  return out;
}

void BenchSession::load_ceilings(Store& store) {
  ceilings_ = store.ceilings(device_.fingerprint());
}

void BenchSession::begin(Store& store, const RunRecord& run) {
  store_ = &store;
  report_ = {};
  report_.run_id = store.begin_run(run);
  device_id_ = store.upsert_device(device_);
  workload_id_ =
      store.upsert_workload({batch_.spec_hash, batch_.spec.name, canonical_json(batch_.spec)});
  ceilings_ = store.ceilings(device_.fingerprint());
}

void BenchSession::set_against_ceiling(Family family, BenchRow& row) const {
  apply_ceiling(family, ceilings_, row.measurement);
  if (row.measurement.ceiling_fraction) {
    row.against = ceiling_fraction_of(family, row.measurement, ceilings_, &device_);
  }
}

BenchRow BenchSession::measure_and_store(const BenchCase& bench_case) {
  ATTN_ASSERT(store_, "BenchSession::begin() must come before measure()");
  BenchRow row{bench_case.full_name, 0, {}, {}};
  row.measurement = state_->evaluator->evaluate(*bench_case.variant, bench_case.config);
  set_against_ceiling(bench_case.variant->family(), row);
  row.measurement_id =
      store_->add_measurement(report_.run_id, device_id_, workload_id_, row.measurement);
  return row;
}

const BenchRow& BenchSession::measure(const BenchCase& bench_case) {
  report_.rows.push_back(measure_and_store(bench_case));
  return report_.rows.back();
}

const std::vector<float>& BenchSession::reference_output() {
  return state_->evaluator->reference();
}

const BenchRow& BenchSession::record(const std::string& full_name, Family family,
                                     Measurement measurement) {
  ATTN_ASSERT(store_, "BenchSession::begin() must come before record()");
  BenchRow row{full_name, 0, std::move(measurement), {}};
  set_against_ceiling(family, row);
  row.measurement_id =
      store_->add_measurement(report_.run_id, device_id_, workload_id_, row.measurement);
  report_.rows.push_back(std::move(row));
  return report_.rows.back();
}

const RepeatCheck& BenchSession::repeat_check(const BenchCase& bench_case) {
  RepeatCheck check;
  check.first = measure_and_store(bench_case);
  check.second = measure_and_store(bench_case);
  check.comparison = compare_samples(check.first.measurement.kept_samples(),
                                     check.second.measurement.kept_samples());
  report_.rows.push_back(check.first);
  report_.rows.push_back(check.second);
  const bool both_timed = check.first.measurement.disposition == Disposition::passed &&
                          check.second.measurement.disposition == Disposition::passed;
  if (both_timed) {
    store_->add_repeat_check({report_.run_id, check.first.measurement_id,
                              check.second.measurement_id, check.comparison.relative_difference,
                              to_string(check.comparison.verdict)});
  }
  report_.repeat_checks.push_back(std::move(check));
  return report_.repeat_checks.back();
}

void BenchSession::fail(const std::string& reason) noexcept {
  if (!store_) return;
  try {
    store_->finish_run(report_.run_id, "error: " + reason);
  } catch (...) {
  }
}

const BenchReport& BenchSession::finish(bool interrupted) {
  ATTN_ASSERT(store_, "BenchSession::begin() must come before finish()");
  store_->finish_run(report_.run_id, interrupted            ? "interrupted"
                                     : report_.any_failed() ? "failed_cases"
                                                            : "completed");
  return report_;
}

}  // namespace attn
