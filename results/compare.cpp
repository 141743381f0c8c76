#include "results/compare.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <tuple>

#include "base/errors.hpp"
#include "base/family.hpp"
#include "base/glob.hpp"
#include "base/variant_aliases.hpp"
#include "results/roofline.hpp"

namespace attn {

std::string to_string(CompareMode mode) {
  switch (mode) {
    case CompareMode::devices:
      return "devices";
    case CompareMode::runs:
      return "runs";
    case CompareMode::variants:
      return "variants";
  }
  return "?";
}

namespace {

bool is_screen(const std::string& policy) {
  return policy.rfind("screen", 0) == 0;
}

std::string lower(std::string text) {
  for (char& c : text) c = char(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.size() >= prefix.size() && text.compare(0, prefix.size(), prefix) == 0;
}

// The ranks of `values` from 1, tied values sharing the mean of the ranks they span.
std::vector<double> average_ranks(const std::vector<double>& values) {
  std::vector<size_t> order(values.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t l, size_t r) { return values[l] < values[r]; });
  std::vector<double> ranks(values.size());
  for (size_t first = 0; first < order.size();) {
    size_t last = first;
    while (last + 1 < order.size() && values[order[last + 1]] == values[order[first]]) ++last;
    const double rank = 0.5 * double(first + last) + 1;
    for (size_t k = first; k <= last; ++k) ranks[order[k]] = rank;
    first = last + 1;
  }
  return ranks;
}

std::optional<Bound> bound_of_family(const std::string& family) {
  const std::optional<Family> f = family_from_string(family);
  if (!f) return std::nullopt;
  return bound_of(*f);
}

const DeviceCeilings& ceilings_of(const CompareSettings& settings, int64_t device_id) {
  static const DeviceCeilings kNone;
  auto it = settings.ceilings.find(device_id);
  return it == settings.ceilings.end() ? kNone : it->second;
}

// The config against its family's ceiling on its device; nullopt for a family of unknown bound.
std::optional<CeilingFraction> fraction_for(const ConfigTiming& c,
                                            const CompareSettings& settings) {
  const std::optional<Bound> bound = bound_of_family(c.family);
  if (!bound || !(c.median_us > 0)) return std::nullopt;
  const auto device = settings.devices.find(c.device_id);
  return fraction_of_ceiling(*bound, c.rate(), ceilings_of(settings, c.device_id),
                             device == settings.devices.end() ? nullptr : &device->second);
}

// What makes two configs of the two sides the same config (CompareSettings::configs_by_key).
std::string identity(const ConfigTiming& c, bool by_key) {
  return by_key ? c.config_key : current_variant_name(c.variant) + " {" + c.config_key + "}";
}

// The configs of one side by identity; when two variants share a key (variants mode), the faster.
std::map<std::string, const ConfigTiming*> by_identity(const std::vector<ConfigTiming>& configs,
                                                       bool by_key) {
  std::map<std::string, const ConfigTiming*> out;
  for (const ConfigTiming& c : configs) {
    auto [it, inserted] = out.emplace(identity(c, by_key), &c);
    if (!inserted && c.median_us < it->second->median_us) it->second = &c;
  }
  return out;
}

const ConfigTiming& fastest(const std::vector<ConfigTiming>& configs) {
  ATTN_ASSERT(!configs.empty(), "a side of a comparison has no config");
  // representatives() sorts by variant and key, so ties go to the first in that order.
  return *std::min_element(
      configs.begin(), configs.end(),
      [](const ConfigTiming& l, const ConfigTiming& r) { return l.median_us < r.median_us; });
}

}  // namespace

AchievedRate ConfigTiming::rate() const {
  AchievedRate r;
  if (!(median_us > 0)) return r;
  r.gbps = bytes / (median_us * 1e3);
  r.unique_gbps = unique_bytes ? *unique_bytes / (median_us * 1e3) : 0;
  r.tflops = flops / (median_us * 1e6);
  r.sm_clock_mhz = sm_clock_mhz;
  return r;
}

std::vector<ConfigTiming> representatives(const std::vector<StoredMeasurement>& measurements) {
  std::map<std::pair<std::string, std::string>, const StoredMeasurement*> chosen;
  for (const StoredMeasurement& row : measurements) {
    const Measurement& m = row.measurement;
    if (m.disposition != Disposition::passed || m.stats.count == 0 || !(m.stats.median > 0)) {
      continue;
    }
    auto [it, inserted] =
        chosen.emplace(std::make_pair(current_variant_name(m.variant), m.config_key), &row);
    if (inserted) continue;
    const StoredMeasurement& held = *it->second;
    const bool more_thorough = is_screen(held.measurement.policy) && !is_screen(m.policy);
    const bool as_thorough = is_screen(held.measurement.policy) == is_screen(m.policy);
    if (more_thorough || (as_thorough && row.id > held.id)) it->second = &row;
  }
  std::vector<ConfigTiming> out;
  for (const auto& [key, row] : chosen) {
    const Measurement& m = row->measurement;
    ConfigTiming c;
    c.measurement_id = row->id;
    c.run_id = row->run_id;
    c.device_id = row->device_id;
    c.family = m.family;
    c.variant = m.variant;
    c.config_key = m.config_key;
    c.policy = m.policy;
    c.median_us = m.stats.median;
    c.bytes = m.bytes;
    c.flops = m.flops;
    c.unique_bytes = m.unique_bytes;
    c.sm_clock_mhz = achieved_rate(m).sm_clock_mhz;
    c.samples = m.kept_samples();
    c.unstable = m.unstable;
    if (c.samples.empty()) continue;  // statistics without samples cannot be tested: left out
    out.push_back(std::move(c));
  }
  return out;
}

std::optional<double> spearman_correlation(const std::vector<double>& x,
                                           const std::vector<double>& y) {
  ATTN_ASSERT(x.size() == y.size(), "spearman_correlation needs paired values");
  const size_t n = x.size();
  if (n < 3) return std::nullopt;
  const std::vector<double> rx = average_ranks(x), ry = average_ranks(y);
  const double mean = 0.5 * double(n + 1);  // the mean of ranks 1..n, ties or not
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < n; ++i) {
    sxy += (rx[i] - mean) * (ry[i] - mean);
    sxx += (rx[i] - mean) * (rx[i] - mean);
    syy += (ry[i] - mean) * (ry[i] - mean);
  }
  if (!(sxx > 0) || !(syy > 0)) return std::nullopt;
  return sxy / std::sqrt(sxx * syy);
}

double transfer_regret(double b_time_of_a_best_us, double b_best_us) {
  ATTN_ASSERT(b_best_us > 0, "transfer_regret needs B's best time");
  return b_time_of_a_best_us / b_best_us - 1;
}

WorkloadComparison compare_workload(const WorkloadSides& sides, const CompareSettings& settings) {
  WorkloadComparison out;
  out.workload = sides.workload;
  out.workload_hash = sides.workload_hash;
  out.a_best = fastest(sides.a);
  out.b_best = fastest(sides.b);
  out.family = out.a_best.family;
  out.comparison = compare_samples(out.a_best.samples, out.b_best.samples);
  out.speedup = median_ratio_interval(out.a_best.samples, out.b_best.samples);

  const std::optional<Bound> bound = bound_of_family(out.family);
  if (const auto a_fraction = fraction_for(out.a_best, settings)) {
    out.ceiling = a_fraction->ceiling;
    out.a_fraction = a_fraction->fraction;
    out.a_against = *a_fraction;
  }
  if (const auto b_fraction = fraction_for(out.b_best, settings)) {
    out.b_fraction = b_fraction->fraction;
    out.b_against = *b_fraction;
  }

  const auto a = by_identity(sides.a, settings.configs_by_key);
  const auto b = by_identity(sides.b, settings.configs_by_key);
  const std::string a_best_id = identity(out.a_best, settings.configs_by_key);
  const std::string b_best_id = identity(out.b_best, settings.configs_by_key);
  out.best_differs = a_best_id != b_best_id;
  if (auto it = b.find(a_best_id); it != b.end()) {
    out.a_best_on_b = *it->second;
    out.transfer_regret = transfer_regret(it->second->median_us, out.b_best.median_us);
    out.a_best_on_b_verdict = compare_samples(out.b_best.samples, it->second->samples).verdict;
  }

  std::vector<double> a_times, b_times;
  for (const auto& [id, config] : a) {
    if (auto it = b.find(id); it != b.end()) {
      a_times.push_back(config->median_us);
      b_times.push_back(it->second->median_us);
    }
  }
  out.common_configs = a_times.size();
  out.spearman = spearman_correlation(a_times, b_times);

  if (bound && out.a_best.device_id != out.b_best.device_id) {
    out.predicted_b_us =
        predict_time_us(*bound, out.a_best.median_us, ceilings_of(settings, out.a_best.device_id),
                        ceilings_of(settings, out.b_best.device_id));
    if (out.predicted_b_us) out.prediction_error = out.b_best.median_us / *out.predicted_b_us - 1;
  }
  out.verdict = speedup_verdict(out.speedup);
  out.regression = is_regression(out.speedup, settings.threshold);
  return out;
}

Verdict speedup_verdict(const RatioInterval& speedup) {
  if (speedup.interval.low > 1) return Verdict::faster;
  if (speedup.interval.high < 1) return Verdict::slower;
  return Verdict::same;
}

bool is_regression(const RatioInterval& speedup, double threshold) {
  // Relative rounding slack: a ratio computed as 100 / 102 times 1.02 is 1 only up to rounding,
  // and "beyond the threshold" must not depend on the last bit.
  constexpr double kRounding = 1e-12;
  return speedup.interval.high > 0 && speedup.interval.high * (1 + threshold) < 1 - kRounding;
}

std::string device_label(const StoredDevice& device) {
  return device.record.name + " (" + device.fingerprint.substr(0, 8) + ")";
}

const StoredDevice& match_device(const std::vector<StoredDevice>& devices,
                                 const std::string& text) {
  const std::string wanted = lower(text);
  if (wanted.empty()) throw UsageError("--device: empty device name");
  for (const StoredDevice& d : devices) {
    if (lower(d.fingerprint) == wanted || lower(d.record.uuid) == wanted) return d;
  }
  std::vector<const StoredDevice*> matches;
  for (const StoredDevice& d : devices) {
    const std::string uuid = lower(d.record.uuid);
    const bool by_fingerprint = starts_with(lower(d.fingerprint), wanted);
    const bool by_uuid = starts_with(uuid, wanted) ||
                         (starts_with(uuid, "gpu-") && starts_with(uuid.substr(4), wanted));
    const bool by_name = lower(d.record.name).find(wanted) != std::string::npos;
    if (by_fingerprint || by_uuid || by_name) matches.push_back(&d);
  }
  if (matches.size() == 1) return *matches.front();
  const auto list = [](const std::vector<const StoredDevice*>& ds) {
    std::string text;
    for (const StoredDevice* d : ds) {
      text += "\n  " + d->record.name + "  fingerprint " + d->fingerprint.substr(0, 16) +
              "  uuid " + d->record.uuid;
    }
    return text;
  };
  if (matches.empty()) {
    std::vector<const StoredDevice*> all;
    for (const StoredDevice& d : devices) all.push_back(&d);
    throw UsageError("--device '" + text + "' matches no device in the database" +
                     (all.empty() ? std::string(" (it has none)") : ", which has:" + list(all)));
  }
  throw UsageError(
      "--device '" + text + "' is ambiguous: it matches " + std::to_string(matches.size()) +
      " devices; name one by a longer fingerprint prefix or its UUID:" + list(matches));
}

namespace {

struct Side {
  std::string label;
  std::vector<StoredMeasurement> measurements;  // passed ones
};

CompareMode mode_of(const CompareRequest& r) {
  const std::string shape = std::to_string(r.devices.size()) + " --device, " +
                            std::to_string(r.runs.size()) + " --run, " +
                            std::to_string(r.variants.size()) + " --variant";
  const std::string expected =
      "compare takes two sides: --device A --device B, --run ID --run ID, or --variant A "
      "--variant B (with one --device when the database has several); got " +
      shape;
  if (r.runs.size() == 2 && r.devices.empty() && r.variants.size() <= 1) return CompareMode::runs;
  if (r.devices.size() == 2 && r.runs.empty() && r.variants.size() <= 1) {
    return CompareMode::devices;
  }
  if (r.variants.size() == 2 && r.runs.empty() && r.devices.size() <= 1) {
    return CompareMode::variants;
  }
  throw UsageError(expected);
}

std::vector<StoredMeasurement> passed_on_device(const Store& store, int64_t device_id) {
  MeasurementFilter filter;
  filter.device_id = device_id;
  filter.passed_only = true;
  return store.find_measurements(filter);
}

void keep_variant(std::vector<StoredMeasurement>& rows, const std::string& glob) {
  rows.erase(std::remove_if(rows.begin(), rows.end(),
                            [&](const StoredMeasurement& m) {
                              return !variant_glob_match(glob, m.measurement.variant);
                            }),
             rows.end());
}

std::string run_label(const StoredRun& run) {
  return "run " + std::to_string(run.id) + " (" + run.record.tool + ", " + run.record.started_at +
         ")";
}

std::pair<Side, Side> select_sides(const Store& store, const CompareRequest& request,
                                   CompareMode mode) {
  Side a, b;
  const std::vector<StoredDevice> devices = store.devices();
  if (mode == CompareMode::devices) {
    const StoredDevice& da = match_device(devices, request.devices[0]);
    const StoredDevice& db = match_device(devices, request.devices[1]);
    if (da.id == db.id) {
      throw UsageError("--device '" + request.devices[0] + "' and --device '" + request.devices[1] +
                       "' name the same device, " + device_label(da));
    }
    a = {device_label(da), passed_on_device(store, da.id)};
    b = {device_label(db), passed_on_device(store, db.id)};
  } else if (mode == CompareMode::runs) {
    std::optional<StoredRun> runs[2];
    for (int i = 0; i < 2; ++i) {
      runs[i] = store.run(request.runs[size_t(i)]);
      if (!runs[i]) {
        throw UsageError("--run " + std::to_string(request.runs[size_t(i)]) +
                         ": the database has no such run");
      }
    }
    if (runs[0]->id == runs[1]->id) throw UsageError("the two --run name the same run");
    Side* sides[2] = {&a, &b};
    for (int i = 0; i < 2; ++i) {
      sides[i]->label = run_label(*runs[i]);
      for (StoredMeasurement& m : store.measurements_of_run(runs[i]->id)) {
        if (m.measurement.disposition == Disposition::passed) {
          sides[i]->measurements.push_back(std::move(m));
        }
      }
    }
  } else {
    std::vector<StoredMeasurement> all;
    std::string on;
    if (request.devices.size() == 1) {
      const StoredDevice& d = match_device(devices, request.devices[0]);
      all = passed_on_device(store, d.id);
      on = " on " + device_label(d);
    } else {
      MeasurementFilter filter;
      filter.passed_only = true;
      all = store.find_measurements(filter);
    }
    a = {request.variants[0] + on, all};
    b = {request.variants[1] + on, std::move(all)};
    keep_variant(a.measurements, request.variants[0]);
    keep_variant(b.measurements, request.variants[1]);
    if (request.devices.empty()) {
      std::set<int64_t> seen;
      for (const Side* s : {&a, &b}) {
        for (const StoredMeasurement& m : s->measurements) seen.insert(m.device_id);
      }
      if (seen.size() > 1) {
        std::string text;
        for (const StoredDevice& d : devices) {
          if (seen.count(d.id)) text += "\n  " + device_label(d) + "  uuid " + d.record.uuid;
        }
        throw UsageError("the variants were measured on " + std::to_string(seen.size()) +
                         " devices: pick one with --device:" + text);
      }
      if (seen.size() == 1) {
        for (const StoredDevice& d : devices) {
          if (d.id == *seen.begin()) on = " on " + device_label(d);
        }
        a.label += on;
        b.label += on;
      }
    }
  }
  if (mode != CompareMode::variants && request.variants.size() == 1) {
    keep_variant(a.measurements, request.variants[0]);
    keep_variant(b.measurements, request.variants[0]);
  }
  return {std::move(a), std::move(b)};
}

}  // namespace

CompareResult compare(const Store& store, const CompareRequest& request) {
  if (!(request.threshold >= 0)) throw UsageError("--threshold must be >= 0");
  CompareResult result;
  result.mode = mode_of(request);
  result.threshold = request.threshold;
  auto [side_a, side_b] = select_sides(store, request, result.mode);
  result.a.label = side_a.label;
  result.b.label = side_b.label;

  // Group each side's measurements by workload, keeping those the --workload glob names.
  std::map<int64_t, WorkloadRecord> workloads;
  const auto group = [&](const Side& side) {
    std::map<int64_t, std::vector<StoredMeasurement>> out;
    for (const StoredMeasurement& m : side.measurements) {
      auto it = workloads.find(m.workload_id);
      if (it == workloads.end()) {
        std::optional<WorkloadRecord> w = store.workload(m.workload_id);
        ATTN_ASSERT(w.has_value(), "a measurement points at a missing workload");
        it = workloads.emplace(m.workload_id, std::move(*w)).first;
      }
      if (request.workload.empty() || glob_match(request.workload, it->second.name)) {
        out[m.workload_id].push_back(m);
      }
    }
    return out;
  };
  const auto grouped_a = group(side_a), grouped_b = group(side_b);

  std::vector<WorkloadSides> both;
  std::set<std::string> only_a, only_b;
  std::set<int64_t> ids;
  for (const auto& [id, rows] : grouped_a) ids.insert(id);
  for (const auto& [id, rows] : grouped_b) ids.insert(id);
  for (int64_t id : ids) {
    WorkloadSides sides;
    sides.workload = workloads.at(id).name;
    sides.workload_hash = workloads.at(id).hash;
    if (auto it = grouped_a.find(id); it != grouped_a.end()) sides.a = representatives(it->second);
    if (auto it = grouped_b.find(id); it != grouped_b.end()) sides.b = representatives(it->second);
    if (sides.a.empty() && sides.b.empty()) continue;
    if (sides.b.empty()) {
      only_a.insert(sides.workload);
    } else if (sides.a.empty()) {
      only_b.insert(sides.workload);
    } else {
      both.push_back(std::move(sides));
    }
  }
  result.only_a.assign(only_a.begin(), only_a.end());
  result.only_b.assign(only_b.begin(), only_b.end());
  if (both.empty()) {
    const std::string matching =
        request.workload.empty() ? "" : " matching --workload '" + request.workload + "'";
    throw UsageError("no workload was measured on both sides: A (" + result.a.label +
                     ") has passed measurements of " + std::to_string(only_a.size()) +
                     " workloads" + matching + ", B (" + result.b.label + ") of " +
                     std::to_string(only_b.size()) + ", none of them in common");
  }

  std::set<int64_t> device_ids, a_devices, b_devices, a_runs, b_runs;
  for (const WorkloadSides& s : both) {
    for (const ConfigTiming& c : s.a) {
      a_devices.insert(c.device_id);
      a_runs.insert(c.run_id);
    }
    for (const ConfigTiming& c : s.b) {
      b_devices.insert(c.device_id);
      b_runs.insert(c.run_id);
    }
  }
  result.a.device_ids.assign(a_devices.begin(), a_devices.end());
  result.b.device_ids.assign(b_devices.begin(), b_devices.end());
  result.a.run_ids.assign(a_runs.begin(), a_runs.end());
  result.b.run_ids.assign(b_runs.begin(), b_runs.end());
  device_ids.insert(a_devices.begin(), a_devices.end());
  device_ids.insert(b_devices.begin(), b_devices.end());

  CompareSettings settings;
  settings.configs_by_key = result.mode == CompareMode::variants;
  settings.threshold = request.threshold;
  for (const StoredDevice& d : store.devices()) {
    if (!device_ids.count(d.id)) continue;
    result.devices.push_back(d);
    settings.ceilings[d.id] = store.ceilings(d.fingerprint);
    settings.devices[d.id] = d.record;
  }
  result.ceilings = settings.ceilings;

  std::sort(both.begin(), both.end(), [](const WorkloadSides& l, const WorkloadSides& r) {
    return std::tie(l.workload, l.workload_hash) < std::tie(r.workload, r.workload_hash);
  });
  double log_sum = 0;
  size_t logs = 0;
  for (const WorkloadSides& sides : both) {
    WorkloadComparison row = compare_workload(sides, settings);
    switch (row.verdict) {
      case Verdict::faster:
        ++result.summary.faster;
        break;
      case Verdict::same:
        ++result.summary.same;
        break;
      case Verdict::slower:
        ++result.summary.slower;
        break;
    }
    result.summary.regressions += row.regression ? 1 : 0;
    if (row.speedup.estimate > 0) {
      log_sum += std::log(row.speedup.estimate);
      ++logs;
    }
    result.rows.push_back(std::move(row));
  }
  if (logs > 0) result.summary.geomean_speedup = std::exp(log_sum / double(logs));
  return result;
}

}  // namespace attn
