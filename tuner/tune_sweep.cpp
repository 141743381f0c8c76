#include "tuner/tune_sweep.hpp"

#include <chrono>
#include <cmath>
#include <map>

#include "base/errors.hpp"
#include "base/progress.hpp"
#include "results/table.hpp"

namespace attn {

namespace {

// Trials a strategy is expected to make over n configs, for the progress line's total.
size_t planned_trials(const std::string& strategy, size_t n, const Budget& budget) {
  size_t planned = n;
  if (strategy == "halving") planned = n + std::min(n, std::max<size_t>(3, n / 8) * 2);
  if (strategy == "model") planned = std::min(n, std::max<size_t>(12, n / 33) + 40);
  if (budget.trials) planned = std::min(planned, *budget.trials);
  return planned;
}

std::string median_text(double us) {
  return format("%.2f us", us);
}

}  // namespace

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

void TuneSweep::progress_line(const std::string& what) {
  const double eta =
      done_ > 0 && total_ > done_ ? elapsed_ / double(done_) * double(total_ - done_) : 0;
  progress_ << "attn-tune: [" << done_ << "/" << total_ << "] " << what << " | best "
            << (best_name_.empty() ? "-" : median_text(best_us_) + " " + best_name_)
            << " | failures " << failures_ << " | ETA " << (done_ > 0 ? format_duration(eta) : "-")
            << "\n"
            << std::flush;
}

TuneReport TuneSweep::run(const RunRecord& run) {
  TuneReport report;
  std::vector<const Variant*> variants;
  for (const Variant* v : registry_.matching(options_.variant_filter)) {
    if (v->backend() == target_.backend) variants.push_back(v);
  }
  report.run_id = store_.begin_run(run);
  device_id_ = store_.upsert_device(device_);
  workload_id_ =
      store_.upsert_workload({batch_.spec_hash, batch_.spec.name, canonical_json(batch_.spec)});
  for (const Variant* v : variants) {
    const SearchSpace space = build_space(*v, batch_, target_, options_.overrides);
    size_t n = 0;
    for (const KernelConfig& c : space.configs) n += options_.shard.owns(v->name(), c.key());
    total_ += planned_trials(options_.strategy, n, options_.budget);
  }
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
  store_.finish_run(report.run_id, report.interrupted      ? "interrupted"
                                   : report.failures() > 0 ? "failed_cases"
                                                           : "completed");
  return report;
}

VariantSummary TuneSweep::tune_variant(const Variant& variant, int64_t run_id) {
  VariantSummary summary;
  summary.variant = variant.name();
  const SearchSpace space = build_space(variant, batch_, target_, options_.overrides);
  summary.space = space.configs.size();
  std::vector<KernelConfig> configs;
  for (const KernelConfig& c : space.configs) {
    if (options_.shard.owns(variant.name(), c.key())) configs.push_back(c);
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
  mine.device_id = device_id_;
  mine.variant = variant.name();
  std::map<std::pair<std::string, std::string>, StoredMeasurement> known;
  for (StoredMeasurement& row : store_.find_measurements(mine)) {
    const Disposition d = row.measurement.disposition;
    if (d == Disposition::crashed || d == Disposition::timed_out) continue;
    known[{row.measurement.config_key, row.measurement.policy}] = std::move(row);
  }
  std::map<std::string, int64_t> failures;
  for (const AttemptFailures& f :
       store_.attempt_failures(workload_id_, device_id_, variant.name())) {
    failures[f.config_key] = f.count;
  }

  std::vector<PriorObservation> priors;
  if (options_.use_priors && options_.strategy == "model") {
    MeasurementFilter others;
    others.variant = variant.name();
    others.policy = confirm_policy().name;
    others.passed_only = true;
    std::map<std::pair<int64_t, int64_t>, std::vector<std::pair<size_t, double>>> by_source;
    for (const StoredMeasurement& row : store_.find_measurements(others)) {
      if (row.workload_id == workload_id_ && row.device_id == device_id_) continue;
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

  auto evaluate = [&](const Trial& trial) -> Outcome {
    Outcome out;
    out.trial = trial;
    const KernelConfig& config = configs[trial.config];
    const MeasurePolicy policy = rung_policy(trial.rung, rungs);
    const std::string name = variant.full_name(config);
    std::string why;  // the disposition of a failure, for the progress line
    auto fill = [&](const Measurement& m) {
      out.ok = m.disposition == Disposition::passed;
      if (!out.ok) why = ": " + to_string(m.disposition);
      if (out.ok) {
        out.samples = m.kept_samples();
        out.median_us = m.stats.median;
      }
    };
    if (auto it = known.find({config.key(), policy.name}); it != known.end()) {
      fill(it->second.measurement);
      ++summary.resumed;
      ++done_;
      if (!out.ok) ++summary.failed;
    } else if (failures[config.key()] >= options_.quarantine_after) {
      ++summary.quarantined;
      ++summary.failed;
      ++failures_;
      ++done_;
      progress_line(name + " (" + policy.name + "): quarantined after " +
                    std::to_string(failures[config.key()]) + " attempts that crashed or hung");
      return out;
    } else {
      if (stop_ && stop_()) return out;
      const auto start = std::chrono::steady_clock::now();
      AttemptRecord attempt{
          run_id,      device_id_,        workload_id_, variant.name(),         config.key(),
          policy.name, options_.strategy, trial.rung,   options_.shard.label(), std::nullopt};
      const int64_t attempt_id = store_.begin_attempt(attempt);
      const Measurement m = evaluator_.evaluate(variant, config, policy);
      const int64_t measurement_id = store_.add_measurement(run_id, device_id_, workload_id_, m);
      store_.finish_attempt(attempt_id, m.disposition, measurement_id, m.reason);
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      out.cost_seconds = seconds;
      elapsed_ += seconds;
      summary.measure_seconds += seconds;
      ++summary.evaluated;
      ++done_;
      fill(m);
      if (!out.ok) {
        ++summary.failed;
        ++failures_;
        if (m.disposition == Disposition::crashed || m.disposition == Disposition::timed_out) {
          ++failures[config.key()];
        }
      }
    }
    if (out.ok && trial.rung + 1 == rungs && (best_name_.empty() || out.median_us < best_us_)) {
      best_us_ = out.median_us;
      best_name_ = name;
    }
    progress_line(name + " (" + policy.name + ")" +
                  (out.ok ? " " + median_text(out.median_us) : " failed" + why));
    return out;
  };
  // Ctrl-C: the budget is declared spent, so run_search stops before the next trial.
  Budget budget = options_.budget;
  const SearchResult result = run_search(*strategy, budget, [&](const Trial& trial) {
    if (stop_ && stop_()) {
      summary.budget_exhausted = true;
      return Outcome{trial, false, 0, {}, 0};
    }
    return evaluate(trial);
  });
  summary.budget_exhausted = summary.budget_exhausted || result.budget_exhausted;
  summary.winner = choose_winner(candidates(variant, configs));
  return summary;
}

std::vector<Candidate> TuneSweep::candidates(const Variant& variant,
                                             const std::vector<KernelConfig>& configs) const {
  std::map<std::string, bool> in_space;
  for (const KernelConfig& c : configs) in_space[c.key()] = true;
  MeasurementFilter f;
  f.workload_id = workload_id_;
  f.device_id = device_id_;
  f.variant = variant.name();
  f.policy = confirm_policy().name;
  f.passed_only = true;
  std::map<std::string, Candidate> latest;
  for (const StoredMeasurement& row : store_.find_measurements(f)) {
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
