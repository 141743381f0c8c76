#include "tuner/worker_evaluator.hpp"

#include <poll.h>
#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <nlohmann/json.hpp>

#include "base/errors.hpp"
#include "measure/evaluator.hpp"
#include "results/measurement_json.hpp"
#include "results/table.hpp"
#include "tuner/worker_protocol.hpp"

namespace attn {

WorkerEvaluator::WorkerEvaluator(WorkerOptions options) : options_(std::move(options)) {
  if (options_.devices.empty()) {
    slots_.push_back({options_.argv, ""});
  }
  for (int device : options_.devices) {
    Slot slot;
    slot.argv = options_.argv;
    slot.argv.push_back("--device");
    slot.argv.push_back(std::to_string(device));
    slot.label = "device " + std::to_string(device);
    slots_.push_back(std::move(slot));
  }
}

WorkerEvaluator::~WorkerEvaluator() {
  stop();
}

void WorkerEvaluator::stop() {
  for (Slot& slot : slots_) {
    slot.worker.reset();  // the destructor kills and reaps
    slot.request.reset();
  }
}

std::vector<size_t> WorkerEvaluator::cases_per_slot() const {
  std::vector<size_t> out;
  for (const Slot& slot : slots_) out.push_back(slot.cases);
  return out;
}

void WorkerEvaluator::spawn(Slot& slot) {
  slot.worker = std::make_unique<WorkerProcess>(slot.argv);
  spawned_.push_back(slot.worker->pid());
}

void WorkerEvaluator::await_ready(Slot& slot) {
  std::string line;
  const WorkerProcess::Read r = slot.worker->read_line(line, options_.startup_seconds);
  const std::string who = "evaluation worker" + (slot.label.empty() ? "" : " on " + slot.label);
  if (r == WorkerProcess::Read::line) {
    try {
      const nlohmann::json j = nlohmann::json::parse(line);
      if (j.value("ready", false)) return;
    } catch (const nlohmann::json::exception&) {
    }
    const std::string how = slot.worker->kill_and_reap();
    slot.worker.reset();
    throw EnvironmentError(who + " did not say ready but '" + line + "' (" + how + ")");
  }
  const std::string how =
      r == WorkerProcess::Read::timed_out ? slot.worker->kill_and_reap() : slot.worker->reap();
  slot.worker.reset();
  throw EnvironmentError(who + " could not start (" +
                         (r == WorkerProcess::Read::timed_out
                              ? format("not ready after %g s; ", options_.startup_seconds)
                              : std::string()) +
                         how + "); its messages are above");
}

void WorkerEvaluator::start() {
  std::vector<Slot*> started;
  for (Slot& slot : slots_) {
    if (slot.worker && slot.worker->running()) continue;
    spawn(slot);
    started.push_back(&slot);
  }
  for (Slot* slot : started) await_ready(*slot);
}

std::optional<size_t> WorkerEvaluator::idle_slot() const {
  // The idle slot that has done the fewest cases, so that work one at a time still alternates.
  std::optional<size_t> best;
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i].request) continue;
    if (!best || slots_[i].cases < slots_[*best].cases) best = i;
  }
  return best;
}

std::optional<int64_t> WorkerEvaluator::slot_process(size_t index) {
  Slot& slot = slots_.at(index);
  if (!slot.worker || !slot.worker->running()) {
    spawn(slot);
    await_ready(slot);
  }
  return int64_t(slot.worker->pid());
}

void WorkerEvaluator::begin(size_t index, CaseRequest request) {
  Slot& slot = slots_.at(index);
  ATTN_ASSERT(!slot.request, "WorkerEvaluator::begin on a busy slot");
  slot_process(index);
  const std::string line =
      encode_request({request.variant->name(), request.config.key(), request.policy});
  if (!slot.worker->send_line(line)) {
    // It died while idle: that is not this config's fault; a fresh worker takes the request.
    slot.worker->reap();
    slot.worker.reset();
    slot_process(index);
    if (!slot.worker->send_line(line)) {
      throw EnvironmentError("evaluation worker " + std::to_string(slot.worker->pid()) +
                             " does not take requests");
    }
  }
  slot.request = std::move(request);
  slot.clock = PhaseClock();
  slot.clock.start(EvalPhase::compile);  // until the worker says otherwise
  slot.phases_done.clear();
}

Measurement WorkerEvaluator::evaluate(const Variant& variant, const KernelConfig& config,
                                      const MeasurePolicy& policy) {
  const std::optional<size_t> slot = idle_slot();
  ATTN_ASSERT(slot.has_value(), "WorkerEvaluator::evaluate while every slot is busy");
  begin(*slot, {0, &variant, config, policy});
  return wait().measurement;
}

CaseResult WorkerEvaluator::finish(Slot& slot, Measurement m) {
  CaseResult result{slot.request->tag, size_t(&slot - slots_.data()), std::move(m),
                    slot.clock.stop()};
  slot.request.reset();
  ++slot.cases;
  return result;
}

CaseResult WorkerEvaluator::failed(Slot& slot, Disposition disposition, const std::string& reason) {
  const CaseRequest& r = *slot.request;
  Measurement m = case_measurement(*r.variant, r.config, r.policy);
  m.disposition = disposition;
  m.reason = reason;
  return finish(slot, std::move(m));
}

std::optional<CaseResult> WorkerEvaluator::collect(Slot& slot) {
  const std::string where = slot.label.empty() ? "" : " on " + slot.label;
  const std::string progress = slot.phases_done.empty() ? "" : " (after " + slot.phases_done + ")";
  for (;;) {
    std::string line;
    const WorkerProcess::Read r = slot.worker->read_line(line, 0);
    if (r == WorkerProcess::Read::closed) {
      const std::string how = slot.worker->reap();
      slot.worker.reset();
      return failed(
          slot, Disposition::crashed,
          "worker" + where + " " + how + " during " + to_string(slot.clock.phase()) + progress);
    }
    if (r == WorkerProcess::Read::timed_out) {
      const double deadline = options_.deadlines.of(slot.clock.phase());
      if (slot.clock.seconds_in_phase() < deadline) return std::nullopt;
      const std::string how = slot.worker->kill_and_reap();
      slot.worker.reset();
      return failed(slot, Disposition::timed_out,
                    format("the %s phase passed its %g s deadline",
                           to_string(slot.clock.phase()).c_str(), deadline) +
                        progress + "; worker" + where + " " + how);
    }
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception&) {
      throw EnvironmentError("evaluation worker answered something that is not JSON: " + line);
    }
    if (const std::optional<EvalPhase> phase = decode_phase(j)) {
      // The first report repeats the phase assumed since the request was sent (compile): its
      // clock keeps running from the request.
      if (*phase == slot.clock.phase()) continue;
      slot.phases_done +=
          format("%s%s %.1f s", slot.phases_done.empty() ? "" : ", ",
                 to_string(slot.clock.phase()).c_str(), slot.clock.seconds_in_phase());
      slot.clock.start(*phase);
      continue;
    }
    if (j.contains("error")) {
      throw EnvironmentError("evaluation worker" + where + " failed: " + j["error"].dump());
    }
    if (!j.contains("measurement")) {
      throw EnvironmentError("evaluation worker answered without a measurement: " + line);
    }
    Measurement m = measurement_from_json(j["measurement"]);
    if (j.contains("sticky")) {
      // Its CUDA context is gone: nothing it measured from now on could be trusted. Killed and
      // reaped here; the slot's next case starts a fresh worker.
      slot.worker.reset();
      ++sticky_replacements_;
      m.disposition = Disposition::crashed;
      m.reason += "; worker" + where + " replaced";
    }
    return finish(slot, std::move(m));
  }
}

std::optional<CaseResult> WorkerEvaluator::forward_stop() {
  using Clock = std::chrono::steady_clock;
  if (!stop_forwarded_) {
    stop_forwarded_ = Clock::now();
    for (Slot& slot : slots_) {
      if (slot.request && slot.worker) ::kill(slot.worker->pid(), SIGUSR1);
    }
    return std::nullopt;
  }
  const double waited = std::chrono::duration<double>(Clock::now() - *stop_forwarded_).count();
  if (waited < options_.stop_grace_seconds) return std::nullopt;
  for (Slot& slot : slots_) {
    if (!slot.request) continue;
    const std::string phase = to_string(slot.clock.phase());
    const std::string how = slot.worker->kill_and_reap();
    slot.worker.reset();
    CaseResult result =
        failed(slot, Disposition::timed_out,
               format("stopped in its %s phase: the worker did not answer the stop request "
                      "within %g s; worker %s",
                      phase.c_str(), options_.stop_grace_seconds, how.c_str()));
    result.measurement.timing.stop_reason = "interrupted";
    return result;
  }
  return std::nullopt;
}

CaseResult WorkerEvaluator::wait() {
  for (;;) {
    std::vector<pollfd> fds;
    double wait_seconds = 3600;
    for (Slot& slot : slots_) {
      if (!slot.request) continue;
      if (std::optional<CaseResult> result = collect(slot)) return std::move(*result);
      fds.push_back({slot.worker->fd(), POLLIN, 0});
      wait_seconds = std::min(
          wait_seconds, options_.deadlines.of(slot.clock.phase()) - slot.clock.seconds_in_phase());
    }
    ATTN_ASSERT(!fds.empty(), "WorkerEvaluator::wait with no case in flight");
    if (options_.stop_requested) {
      // The signal that asks for the stop may be handled on another thread: poll does not always
      // return early, so look at the request often.
      if (stop_forwarded_ || options_.stop_requested()) {
        if (std::optional<CaseResult> result = forward_stop()) return std::move(*result);
      }
      wait_seconds = std::min(wait_seconds, 0.1);
    }
    const int ms = int(std::clamp(wait_seconds * 1000 + 1, 1.0, 3600e3));
    if (::poll(fds.data(), fds.size(), ms) < 0 && errno != EINTR) {
      throw EnvironmentError("poll on the evaluation workers failed");
    }
  }
}

}  // namespace attn
