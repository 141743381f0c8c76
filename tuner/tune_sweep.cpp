#include "tuner/tune_sweep.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iterator>
#include <map>
#include <thread>

#include "base/errors.hpp"
#include "base/progress.hpp"
#include "results/attempt_heartbeat.hpp"
#include "results/table.hpp"

namespace attn {

namespace {

std::string median_text(double us) {
  return format("%.2f us", us);
}

Outcome outcome_of(const Trial& trial, const Measurement& m) {
  Outcome out{trial, m.disposition == Disposition::passed, 0, {}, 0};
  if (out.ok) {
    out.samples = m.kept_samples();
    out.median_us = m.stats.median;
  }
  return out;
}

}  // namespace

CaseResult CaseEvaluator::wait() {
  ATTN_ASSERT(pending_.has_value(), "CaseEvaluator::wait with no case begun");
  const CaseRequest request = std::move(*pending_);
  pending_.reset();
  return evaluate_case(request);
}

CaseResult CaseEvaluator::evaluate_case(const CaseRequest& request) {
  return {request.tag, 0, evaluate(*request.variant, request.config, request.policy)};
}

size_t TuneReport::failures() const {
  size_t n = 0;
  for (const VariantSummary& v : variants) n += v.failed;
  return n;
}

TuneSweep::TuneSweep(Store& store, const Batch& batch, const Registry& registry,
                     const DeviceRecord& device, const Target& target, CaseEvaluator& evaluator,
                     TuneOptions options, std::ostream& progress)
    : store_(store),
      batch_(batch),
      registry_(registry),
      device_(device),
      target_(target),
      evaluator_(evaluator),
      options_(std::move(options)),
      progress_(progress) {}

void TuneSweep::set_slot_devices(const std::vector<DeviceRecord>& devices) {
  ATTN_ASSERT(!devices.empty(), "set_slot_devices: at least one device");
  slot_devices_ = devices;
}

std::vector<int64_t> TuneSweep::distinct_device_ids() const {
  std::vector<int64_t> ids;
  for (int64_t id : device_ids_) {
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  }
  return ids;
}

bool TuneSweep::is_my_device(int64_t device_id) const {
  return std::find(device_ids_.begin(), device_ids_.end(), device_id) != device_ids_.end();
}

std::vector<StoredMeasurement> TuneSweep::on_my_devices(MeasurementFilter filter) const {
  std::vector<StoredMeasurement> rows;
  for (int64_t id : distinct_device_ids()) {
    filter.device_id = id;
    for (StoredMeasurement& row : store_.find_measurements(filter)) rows.push_back(std::move(row));
  }
  std::sort(rows.begin(), rows.end(),
            [](const StoredMeasurement& a, const StoredMeasurement& b) { return a.id < b.id; });
  return rows;
}

void TuneSweep::note_outcome(const Outcome& out, bool top_rung, const std::string& name,
                             const std::string& policy, const Measurement& m) {
  if (out.ok && top_rung && (best_name_.empty() || out.median_us < best_us_)) {
    best_us_ = out.median_us;
    best_name_ = name;
  }
  const std::string verdict = out.ok ? " " + median_text(out.median_us)
                              : m.disposition == Disposition::unsupported
                                  ? " declined: " + m.reason
                                  : " failed: " + to_string(m.disposition);
  progress_line(name + " (" + policy + ")" + verdict);
}

void TuneSweep::progress_line(const std::string& what) {
  const double eta =
      done_ > 0 && total_ > done_ ? elapsed_ / double(done_) * double(total_ - done_) : 0;
  const std::string best = best_name_.empty() ? "-" : median_text(best_us_) + " " + best_name_;
  const std::string eta_text = done_ > 0 ? format_duration(eta) : "-";
  if (!terminal_) {
    progress_ << "attn-tune: [" << done_ << "/" << total_ << "] " << what << " | best " << best
              << " | failures " << failures_ << " | ETA " << eta_text << "\n"
              << std::flush;
    return;
  }
  constexpr size_t kWidth = 20;
  const size_t filled = total_ > 0 ? std::min(kWidth, done_ * kWidth / total_) : 0;
  std::string line = "[" + std::string(filled, '#') + std::string(kWidth - filled, '.') + "] " +
                     std::to_string(done_) + "/" + std::to_string(total_) + " ETA " + eta_text +
                     " | best " + best + " | failures " + std::to_string(failures_) + " | " + what;
  constexpr size_t kMaxLine = 159;  // wider would wrap, and "\r" redraws only a line's last part
  if (line.size() > kMaxLine) line = line.substr(0, kMaxLine - 3) + "...";
  progress_ << "\r\033[K" << line << std::flush;
  drawn_ = true;
}

void TuneSweep::clear_progress() {
  if (drawn_) progress_ << "\r\033[K" << std::flush;
  drawn_ = false;
}

TuneReport TuneSweep::run(const RunRecord& run) {
  TuneReport report;
  std::vector<const Variant*> variants;
  for (const Variant* v : registry_.matching(options_.variant_filter)) {
    if (v->backend() == target_.backend) variants.push_back(v);
  }
  report.run_id = store_.begin_run(run);
  // Whatever ends the run early (an exception from the database, a worker, a strategy) closes its
  // row with the reason before it goes on up.
  try {
    device_id_ = store_.upsert_device(device_);
    device_ids_.clear();
    for (const DeviceRecord& d : slot_devices_) device_ids_.push_back(store_.upsert_device(d));
    if (device_ids_.empty()) device_ids_.push_back(device_id_);
    workload_id_ =
        store_.upsert_workload({batch_.spec_hash, batch_.spec.name, canonical_json(batch_.spec)});
    for (const Variant* v : variants) {
      const SearchSpace space = build_space(*v, batch_, target_, options_.overrides);
      size_t n = 0;
      for (const KernelConfig& c : space.configs) {
        n += options_.shard.owns(batch_.spec_hash, v->name(), c.key());
      }
      total_ += planned_trials(options_.strategy, n, options_.budget);
    }
    // Other tuners on this sweep see the open attempts of this run as live claims while it beats.
    const AttemptHeartbeat heartbeat(store_.opening().path, report.run_id,
                                     std::min(10.0, options_.claim_stale_seconds / 4));
    for (const Variant* v : variants) {
      if (stop_ && stop_()) {
        report.interrupted = true;
        break;
      }
      report.variants.push_back(tune_variant(*v, report.run_id));
      if (report.variants.back().budget_exhausted && stop_ && stop_()) report.interrupted = true;
    }
    if (stop_ && stop_()) report.interrupted = true;

    std::vector<Candidate> all;
    for (VariantSummary& s : report.variants) {
      if (!s.winner) continue;
      store_winner(s.variant, *s.winner, report.run_id);
      all.push_back(s.winner->winner);
      for (const Candidate& c : s.winner->tied) all.push_back(c);
    }
    report.overall = choose_winner(all);
    if (report.overall && report.variants.size() > 1)
      store_winner("*", *report.overall, report.run_id);
    const StoredMedians medians = stored_medians();
    std::vector<PlannerGap> overall_gaps;
    for (VariantSummary& s : report.variants) {
      if (s.winner) s.planner = planner_gap(medians, s.variant, s.planner_key, s.winner->winner);
      if (!report.overall) continue;
      if (auto g = planner_gap(medians, s.variant, s.planner_key, report.overall->winner))
        overall_gaps.push_back(*g);
    }
    report.overall_planner = nearest_planner(overall_gaps);
  } catch (const std::exception& e) {
    clear_progress();
    try {
      store_.finish_run(report.run_id, std::string("error: ") + e.what());
    } catch (const std::exception&) {  // the database itself may be what failed
    }
    throw;
  }
  clear_progress();
  store_.finish_run(report.run_id, report.interrupted      ? "interrupted"
                                   : report.failures() > 0 ? "failed_cases"
                                                           : "completed");
  return report;
}

VariantSummary TuneSweep::tune_variant(const Variant& variant, int64_t run_id) {
  VariantSummary summary;
  summary.variant = variant.name();
  const auto routed = routed_.find(&variant);
  CaseEvaluator& evaluator = routed == routed_.end() ? evaluator_ : *routed->second;
  const SearchSpace space = build_space(variant, batch_, target_, options_.overrides);
  summary.space = space.configs.size();
  std::vector<KernelConfig> configs;
  for (const KernelConfig& c : space.configs) {
    if (options_.shard.map && !options_.shard.mapped(batch_.spec_hash, variant.name(), c.key())) {
      ++summary.unmapped;
    }
    if (options_.shard.owns(batch_.spec_hash, variant.name(), c.key())) configs.push_back(c);
  }
  summary.shard_configs = configs.size();
  if (configs.empty()) return summary;
  const SpacePoints points = SpacePoints::from_configs(configs);
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < configs.size(); ++i) index[configs[i].key()] = i;

  // What the database already knows: the latest result per (config, policy) for this workload
  // and device, and how often each config failed to come back.
  MeasurementFilter mine;
  mine.workload_id = workload_id_;
  mine.variant = variant.name();
  std::map<std::pair<std::string, std::string>, StoredMeasurement> known;
  for (StoredMeasurement& row : on_my_devices(mine)) {
    const Disposition d = row.measurement.disposition;
    if (d == Disposition::crashed || d == Disposition::timed_out) continue;
    known[{row.measurement.config_key, row.measurement.policy}] = std::move(row);
  }
  std::map<std::string, int64_t> failures;
  for (int64_t device_id : distinct_device_ids()) {
    for (const AttemptFailures& f :
         store_.attempt_failures(workload_id_, device_id, variant.name())) {
      failures[f.config_key] += f.count;
    }
  }

  std::vector<PriorObservation> priors;
  if (options_.use_priors && options_.strategy == "model") {
    MeasurementFilter others;
    others.variant = variant.name();
    others.policy = confirm_policy().name;
    others.passed_only = true;
    std::map<std::pair<int64_t, int64_t>, std::vector<std::pair<size_t, double>>> by_source;
    for (const StoredMeasurement& row : store_.find_measurements(others)) {
      if (row.workload_id == workload_id_ && is_my_device(row.device_id)) continue;
      auto it = index.find(row.measurement.config_key);
      if (it == index.end() || row.measurement.stats.median <= 0) continue;
      by_source[{row.workload_id, row.device_id}].emplace_back(
          it->second, std::log(row.measurement.stats.median));
    }
    for (const auto& [source, rows] : by_source) {
      double mean = 0;
      for (const auto& r : rows) mean += r.second / double(rows.size());
      for (const auto& r : rows) priors.push_back({r.first, r.second - mean});
    }
  }
  std::unique_ptr<Strategy> strategy =
      make_strategy(options_.strategy, points, options_.seed, std::move(priors));
  const int rungs = strategy->rungs();

  // A trial the database answers (resume) or the quarantine refuses: no evaluation.
  auto answer_without_evaluating = [&](const Trial& trial) -> std::optional<Outcome> {
    const KernelConfig& config = configs[trial.config];
    const MeasurePolicy policy = rung_policy(trial.rung, rungs);
    const std::string name = variant.full_name(config);
    if (auto it = known.find({config.key(), policy.name}); it != known.end()) {
      Outcome out = outcome_of(trial, it->second.measurement);
      ++summary.resumed;
      ++done_;
      if (it->second.measurement.disposition == Disposition::unsupported) {
        ++summary.declined;
      } else if (!out.ok) {
        ++summary.failed;
      }
      note_outcome(out, trial.rung + 1 == rungs, name, policy.name, it->second.measurement);
      return out;
    }
    if (failures[config.key()] >= options_.quarantine_after) {
      ++summary.quarantined;
      ++summary.failed;
      ++failures_;
      ++done_;
      progress_line(name + " (" + policy.name + "): quarantined after " +
                    std::to_string(failures[config.key()]) + " attempts that crashed or hung");
      return Outcome{trial, false, 0, {}, 0};
    }
    return std::nullopt;
  };
  struct Started {
    int64_t attempt_id = 0;
    std::chrono::steady_clock::time_point start;
  };
  std::map<size_t, Started> in_flight;  // by the trial's index in its batch
  const ClaimRules rules{distinct_device_ids(), options_.quarantine_after,
                         options_.claim_stale_seconds};
  // Claims the trial for `slot`: begins its evaluation (true), or learns that the database now
  // answers it (another tuner measured it, or the config is quarantined: `answer` is set, true),
  // or that another live tuner holds it (false: offer it again later).
  auto claim_and_begin = [&](const Trial& trial, size_t tag, size_t slot,
                             std::optional<Outcome>& answer) -> bool {
    const KernelConfig& config = configs[trial.config];
    const MeasurePolicy policy = rung_policy(trial.rung, rungs);
    const std::optional<int64_t> pid = evaluator.slot_process(slot);
    AttemptRecord attempt{run_id,
                          device_ids_[slot % device_ids_.size()],
                          workload_id_,
                          variant.name(),
                          config.key(),
                          policy.name,
                          options_.strategy,
                          trial.rung,
                          options_.shard.label(),
                          pid};
    Claim claim = store_.claim_attempt(attempt, rules);
    switch (claim.kind) {
      case Claim::Kind::claimed:
        in_flight[tag] = {claim.attempt_id, std::chrono::steady_clock::now()};
        evaluator.begin(slot, {tag, &variant, config, policy});
        return true;
      case Claim::Kind::measured:
        ++summary.by_other_tuners;
        known[{config.key(), policy.name}] = std::move(*claim.measurement);
        answer = answer_without_evaluating(trial);
        return true;
      case Claim::Kind::quarantined:
        failures[config.key()] = claim.failures;
        answer = answer_without_evaluating(trial);
        return true;
      case Claim::Kind::busy:
        return false;
    }
    return false;
  };
  // nullopt for a case the stop request cut short: not a result, so not recorded (its attempt is
  // removed, and the resumed sweep measures the config again).
  auto finish_evaluation = [&](const Trial& trial,
                               const CaseResult& result) -> std::optional<Outcome> {
    const Started started = in_flight.at(result.tag);
    const Measurement& m = result.measurement;
    if (m.timing.stop_reason == "interrupted") {
      store_.discard_attempt(started.attempt_id);
      in_flight.erase(result.tag);
      progress_line(variant.full_name(configs[trial.config]) + " (" + m.policy +
                    "): cut short by the stop request (" +
                    (m.reason.empty() ? std::string("between two samples") : m.reason) +
                    "); not recorded, measured again on resume");
      return std::nullopt;
    }
    // One transaction: a kill -9 here leaves the attempt 'started' and no measurement, or both.
    store_.finish_attempt_with(started.attempt_id, run_id,
                               device_ids_[result.slot % device_ids_.size()], workload_id_, m);
    in_flight.erase(result.tag);  // only now: a failed write above leaves it to be discarded
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started.start).count();
    Outcome out = outcome_of(trial, m);
    out.cost_seconds = seconds;
    elapsed_ += seconds;
    summary.measure_seconds += seconds;
    summary.phase_seconds.add(result.phase_seconds);
    ++summary.evaluated;
    ++done_;
    if (m.disposition == Disposition::unsupported) {
      ++summary.declined;
    } else if (!out.ok) {
      ++summary.failed;
      ++failures_;
      if (m.disposition == Disposition::crashed || m.disposition == Disposition::timed_out) {
        ++failures[m.config_key];
      }
    }
    note_outcome(out, trial.rung + 1 == rungs, variant.full_name(configs[trial.config]), m.policy,
                 m);
    return out;
  };

  // The strategy's batches, each dealt out to the evaluator's free slots in order (several at once
  // with one worker per GPU). Outcomes go back to the strategy in trial order, whichever slot
  // finished first, so a sweep proposes the same on one GPU or several. The budget and a stop
  // request are checked before each trial; what is in flight is always finished and recorded.
  // Trials another tuner holds are passed over and offered again on the next pass, after an
  // evaluation in flight comes back or a short wait; the line saying so is printed once per trial.
  std::vector<Outcome> history;
  size_t trials = 0;
  double cost = 0;
  bool stopped = false;
  try {
    while (!stopped) {
      const std::vector<Trial> batch = strategy->propose(history);
      if (batch.empty()) break;
      std::vector<std::optional<Outcome>> outcomes(batch.size());
      std::vector<size_t> pending(batch.size());  // indices not yet answered or begun, in order
      for (size_t i = 0; i < batch.size(); ++i) pending[i] = i;
      std::vector<bool> announced(batch.size(), false);
      for (;;) {
        for (auto it = pending.begin(); it != pending.end() && !stopped;) {
          const size_t i = *it;
          if ((stop_ && stop_()) || options_.budget.exhausted(trials, cost)) {
            summary.budget_exhausted = true;
            stopped = true;
            break;
          }
          if (std::optional<Outcome> answer = answer_without_evaluating(batch[i])) {
            outcomes[i] = std::move(*answer);
            ++trials;
            it = pending.erase(it);
            continue;
          }
          const std::optional<size_t> slot = evaluator.idle_slot();
          if (!slot) break;
          std::optional<Outcome> answer;
          if (!claim_and_begin(batch[i], i, *slot, answer)) {
            if (!announced[i]) {
              announced[i] = true;
              progress_line(variant.full_name(configs[batch[i].config]) + " (" +
                            rung_policy(batch[i].rung, rungs).name +
                            "): another tuner is evaluating it; waiting for its result");
            }
            ++it;
            continue;
          }
          if (answer) {
            outcomes[i] = std::move(*answer);
          } else if (compile_ahead_) {
            for (auto ahead = std::next(it);
                 ahead != pending.end() && ahead - it <= std::ptrdiff_t(compile_ahead_depth_);
                 ++ahead) {
              compile_ahead_->enqueue(
                  variant.programs(batch_, configs[batch[*ahead].config], target_));
            }
          }
          ++trials;
          it = pending.erase(it);
        }
        if (!in_flight.empty()) {
          const CaseResult result = evaluator.wait();
          std::optional<Outcome> out = finish_evaluation(batch.at(result.tag), result);
          if (!out) {
            stopped = true;  // only the stop request cuts a case short
            summary.budget_exhausted = true;
            continue;
          }
          cost += out->cost_seconds;
          outcomes[result.tag] = std::move(*out);
          continue;
        }
        if (stopped || pending.empty()) break;
        // Only trials other tuners hold are left: look at the database again in a moment.
        std::this_thread::sleep_for(std::chrono::duration<double>(options_.claim_poll_seconds));
      }
      for (std::optional<Outcome>& o : outcomes) {
        if (o) history.push_back(std::move(*o));
      }
    }
  } catch (const std::exception&) {
    // An infrastructure failure (the database, a worker that cannot run anything): the cases in
    // flight are not their configs' fault, so their attempts do not count towards the quarantine.
    for (const auto& [tag, started] : in_flight) {
      try {
        store_.discard_attempt(started.attempt_id);
      } catch (const std::exception&) {  // the database itself may be what failed
      }
    }
    throw;
  }
  summary.winner = choose_winner(candidates(variant, configs));
  summary.planner_key = variant.default_config(batch_, target_).key();
  return summary;
}

StoredMedians TuneSweep::stored_medians() const {
  MeasurementFilter f;
  f.workload_id = workload_id_;
  f.passed_only = true;
  StoredMedians medians;
  for (const StoredMeasurement& row : on_my_devices(f)) {  // in row order: the latest stays
    const Measurement& m = row.measurement;
    medians[{m.variant, m.config_key, m.policy}] = m.stats.median;
  }
  return medians;
}

std::vector<Candidate> TuneSweep::candidates(const Variant& variant,
                                             const std::vector<KernelConfig>& configs) const {
  std::map<std::string, bool> in_space;
  for (const KernelConfig& c : configs) in_space[c.key()] = true;
  MeasurementFilter f;
  f.workload_id = workload_id_;
  f.variant = variant.name();
  f.policy = confirm_policy().name;
  f.passed_only = true;
  std::map<std::string, Candidate> latest;
  for (const StoredMeasurement& row : on_my_devices(f)) {
    const Measurement& m = row.measurement;
    if (!in_space.count(m.config_key)) continue;
    latest[m.config_key] = {m.variant, m.config_key, row.id, m.kept_samples(), m.stats.median};
  }
  std::vector<Candidate> out;
  for (auto& [key, c] : latest) out.push_back(std::move(c));
  return out;
}

void TuneSweep::store_winner(const std::string& scope, const WinnerChoice& choice, int64_t run_id) {
  std::vector<WinnerRecord> rows;
  rows.push_back({run_id, device_id_, workload_id_, scope, "winner", choice.winner.variant,
                  choice.winner.config_key, choice.winner.measurement_id, choice.winner.median_us,
                  0.0});
  for (size_t i = 0; i < choice.tied.size(); ++i) {
    const Candidate& c = choice.tied[i];
    rows.push_back({run_id, device_id_, workload_id_, scope, "tied", c.variant, c.config_key,
                    c.measurement_id, c.median_us, choice.tied_difference[i]});
  }
  store_.add_winners(rows);
}

}  // namespace attn
