#include "tuner/worker_evaluator.hpp"

#include <nlohmann/json.hpp>

#include "base/errors.hpp"
#include "results/measurement_json.hpp"
#include "results/table.hpp"
#include "tuner/worker_protocol.hpp"

namespace attn {

namespace {

Measurement failed(const Variant& variant, const KernelConfig& config, const MeasurePolicy& policy,
                   Disposition disposition, std::string reason) {
  Measurement m;
  m.family = to_string(variant.family());
  m.variant = variant.name();
  m.config_key = config.key();
  m.config_json = config.to_json().dump();
  m.backend = to_string(variant.backend());
  m.policy = policy.name;
  m.disposition = disposition;
  m.reason = std::move(reason);
  return m;
}

}  // namespace

WorkerEvaluator::WorkerEvaluator(WorkerOptions options) : options_(std::move(options)) {}

WorkerEvaluator::~WorkerEvaluator() {
  stop();
}

void WorkerEvaluator::stop() {
  worker_.reset();  // the destructor kills and reaps
}

void WorkerEvaluator::start() {
  if (worker_ && worker_->running()) return;
  worker_ = std::make_unique<WorkerProcess>(options_.argv);
  spawned_.push_back(worker_->pid());
  std::string line;
  const WorkerProcess::Read r = worker_->read_line(line, options_.startup_seconds);
  if (r == WorkerProcess::Read::line) {
    try {
      const nlohmann::json j = nlohmann::json::parse(line);
      if (j.value("ready", false)) return;
    } catch (const nlohmann::json::exception&) {
    }
    const std::string how = worker_->kill_and_reap();
    worker_.reset();
    throw EnvironmentError("evaluation worker did not say ready but '" + line + "' (" + how + ")");
  }
  const std::string how =
      r == WorkerProcess::Read::timed_out ? worker_->kill_and_reap() : worker_->reap();
  worker_.reset();
  throw EnvironmentError("evaluation worker could not start (" +
                         (r == WorkerProcess::Read::timed_out
                              ? format("not ready after %g s; ", options_.startup_seconds)
                              : std::string()) +
                         how + "); its messages are above");
}

Measurement WorkerEvaluator::evaluate(const Variant& variant, const KernelConfig& config,
                                      const MeasurePolicy& policy) {
  start();
  const std::string request = encode_request({variant.name(), config.key(), policy});
  if (!worker_->send_line(request)) {
    // It died while idle: that is not this config's fault; a fresh worker takes the request.
    worker_->reap();
    worker_.reset();
    start();
    if (!worker_->send_line(request)) {
      throw EnvironmentError("evaluation worker " + std::to_string(worker_->pid()) +
                             " does not take requests");
    }
  }
  std::string line;
  switch (worker_->read_line(line, options_.deadline_seconds)) {
    case WorkerProcess::Read::timed_out: {
      const std::string how = worker_->kill_and_reap();
      worker_.reset();
      return failed(
          variant, config, policy, Disposition::timed_out,
          format("no answer within the %g s deadline; worker ", options_.deadline_seconds) + how);
    }
    case WorkerProcess::Read::closed: {
      const std::string how = worker_->reap();
      worker_.reset();
      return failed(variant, config, policy, Disposition::crashed, "worker " + how);
    }
    case WorkerProcess::Read::line:
      break;
  }
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(line);
  } catch (const nlohmann::json::exception& e) {
    throw EnvironmentError("evaluation worker answered something that is not JSON: " + line);
  }
  if (j.contains("error")) {
    throw EnvironmentError("evaluation worker failed: " + j["error"].get<std::string>());
  }
  if (!j.contains("measurement")) {
    throw EnvironmentError("evaluation worker answered without a measurement: " + line);
  }
  return measurement_from_json(j["measurement"]);
}

}  // namespace attn
