#include "results/export_table.hpp"

#include <algorithm>
#include <cctype>
#include <set>
#include <tuple>

#include "base/errors.hpp"
#include "base/glob.hpp"
#include "base/kernel_config.hpp"
#include "base/variant_aliases.hpp"
#include "results/variant_names.hpp"

namespace attn {

namespace {

auto key_tuple(const BucketKey& k) {
  return std::tie(k.family, k.gqa_ratio, k.head_dim, k.dtype, k.kv_dtype, k.page_size,
                  k.batch_bucket, k.context_bucket);
}

std::string lower(std::string text) {
  for (char& c : text) c = char(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

bool is_hex(const std::string& text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isxdigit(static_cast<unsigned char>(c)) != 0;
  });
}

std::string describe_device(const StoredDevice& d) {
  return "[" + std::to_string(d.id) + "] " + d.record.name + " (uuid " + d.record.uuid +
         ", fingerprint " + d.fingerprint.substr(0, 12) + ", driver " + d.record.driver_text() +
         ")";
}

std::string describe_devices(const std::vector<const StoredDevice*>& devices) {
  std::string out;
  for (const StoredDevice* d : devices) out += "\n  " + describe_device(*d);
  return out;
}

// confirm (any overrides) first, screen last, anything else (attn-bench's own names) between.
int policy_rank(const std::string& policy) {
  if (policy.rfind("confirm", 0) == 0) return 0;
  if (policy.rfind("screen", 0) == 0) return 2;
  return 1;
}

CaseTime case_time(const MeasurementBrief& m) {
  CaseTime c;
  c.variant = m.variant;
  c.config_key = m.config_key;
  c.config_json = m.config_json;
  c.median_us = *m.median_us;
  c.p10_us = m.p10_us;
  c.p90_us = m.p90_us;
  c.measurement_id = m.id;
  c.measurement_uid = m.uid;
  c.run_id = m.run_id;
  c.policy = m.policy;
  c.sample_count = m.sample_count;
  c.unstable = m.unstable;
  return c;
}

using CaseName = std::pair<std::string, std::string>;  // (variant, config key)

// The usable measurements of one family on one workload of one device: one CaseTime per case.
struct WorkloadCases {
  int64_t workload_id = 0;
  std::map<CaseName, const MeasurementBrief*> cases;
};

// Chooses one (variant, config) for the members of a bucket (docs/export.md, "The choice").
ExportEntry choose_for_bucket(
    const BucketKey& key, const std::vector<const WorkloadCases*>& workloads,
    const std::map<int64_t, std::pair<WorkloadRecord, WorkloadShape>>& shapes) {
  ExportEntry entry;
  entry.bucket = key;
  std::set<CaseName> all_cases;
  for (const WorkloadCases* w : workloads) {
    BucketMember member;
    member.workload_id = w->workload_id;
    const auto& [record, shape] = shapes.at(w->workload_id);
    member.name = record.name;
    member.hash = record.hash;
    member.shape = shape;
    member.cases = int64_t(w->cases.size());
    const MeasurementBrief* best = nullptr;
    for (const auto& [name, m] : w->cases) {
      all_cases.insert(name);
      if (best == nullptr || *m->median_us < *best->median_us) best = m;
    }
    ATTN_ASSERT(best != nullptr, "a bucket member has at least one case");
    member.best = case_time(*best);
    entry.members.push_back(std::move(member));
  }

  // Score every case on the members it was measured on; keep the most covered ones.
  struct Score {
    int covered = 0;
    double worst = 0, mean = 0;
  };
  std::map<CaseName, Score> scores;
  int most_covered = 0;
  for (const CaseName& name : all_cases) {
    Score s;
    double sum = 0;
    for (size_t i = 0; i < workloads.size(); ++i) {
      auto it = workloads[i]->cases.find(name);
      if (it == workloads[i]->cases.end()) continue;
      const double slowdown = *it->second->median_us / entry.members[i].best.median_us - 1;
      s.worst = s.covered == 0 ? slowdown : std::max(s.worst, slowdown);
      sum += slowdown;
      ++s.covered;
    }
    s.mean = sum / s.covered;
    scores[name] = s;
    most_covered = std::max(most_covered, s.covered);
  }
  const CaseName* chosen = nullptr;
  for (const auto& [name, s] : scores) {
    if (s.covered != most_covered) continue;
    ++entry.candidates;
    if (chosen == nullptr) {
      chosen = &name;
      continue;
    }
    const Score& c = scores.at(*chosen);
    // Lowest worst-case slowdown, then lowest mean; names break exact ties (map order).
    if (s.worst < c.worst || (s.worst == c.worst && s.mean < c.mean)) chosen = &name;
  }
  ATTN_ASSERT(chosen != nullptr, "a bucket has at least one case");
  entry.variant = chosen->first;
  entry.config_key = chosen->second;
  try {
    const KernelConfig config = KernelConfig::from_key(entry.config_key);
    for (const auto& [axis, value] : config.values()) entry.config.emplace_back(axis, value);
  } catch (const UsageError&) {
    entry.config.clear();  // not a key this build can read: the key is still exported as text
  }
  entry.covered = most_covered;
  entry.partial = most_covered < int(workloads.size());
  entry.max_regret = scores.at(*chosen).worst;
  entry.mean_regret = scores.at(*chosen).mean;
  for (size_t i = 0; i < workloads.size(); ++i) {
    auto it = workloads[i]->cases.find(*chosen);
    if (it == workloads[i]->cases.end()) continue;
    BucketMember& member = entry.members[i];
    member.chosen = case_time(*it->second);
    member.slowdown = member.chosen->median_us / member.best.median_us - 1;
  }
  std::sort(entry.members.begin(), entry.members.end(),
            [](const BucketMember& a, const BucketMember& b) {
              return std::tie(a.shape.batch_size, a.shape.context_len, a.name, a.workload_id) <
                     std::tie(b.shape.batch_size, b.shape.context_len, b.name, b.workload_id);
            });
  return entry;
}

template <typename T>
std::vector<T> sorted(const std::set<T>& values) {
  return std::vector<T>(values.begin(), values.end());
}

}  // namespace

bool BucketKey::operator<(const BucketKey& other) const {
  return key_tuple(*this) < key_tuple(other);
}

bool BucketKey::operator==(const BucketKey& other) const {
  return key_tuple(*this) == key_tuple(other);
}

BucketKey bucket_of(const std::string& family, const WorkloadShape& shape) {
  BucketKey k;
  k.family = family;
  k.gqa_ratio = shape.gqa_ratio;
  k.head_dim = shape.head_dim;
  k.dtype = shape.dtype;
  k.kv_dtype = shape.kv_dtype;
  k.page_size = shape.page_size;
  k.batch_bucket = pow2_bucket(shape.batch_size);
  k.context_bucket = pow2_bucket(shape.context_len);
  return k;
}

std::string to_string(CellStatus status) {
  switch (status) {
    case CellStatus::exported:
      return "exported";
    case CellStatus::no_passed:
      return "no_passed";
    case CellStatus::no_data:
      return "no_data";
  }
  return "?";
}

int64_t FamilyCoverage::count(CellStatus status) const {
  return std::count_if(cells.begin(), cells.end(),
                       [&](const CoverageCell& c) { return c.status == status; });
}

std::vector<const StoredDevice*> choose_devices(const std::vector<StoredDevice>& all,
                                                const std::vector<int64_t>& with_results,
                                                const ExportOptions& options) {
  std::vector<const StoredDevice*> candidates;
  for (const StoredDevice& d : all) {
    if (std::find(with_results.begin(), with_results.end(), d.id) != with_results.end()) {
      candidates.push_back(&d);
    }
  }
  const std::string how =
      "pick one with --device NAME|UUID|FINGERPRINT (repeatable), or --all-devices for one "
      "table per device";
  if (options.all_devices) {
    if (!options.devices.empty()) throw UsageError("--all-devices excludes --device");
    return candidates;
  }
  if (options.devices.empty()) {
    if (candidates.size() > 1) {
      throw UsageError("the database holds results of " + std::to_string(candidates.size()) +
                       " devices; export does not mix devices unless asked: " + how + "." +
                       describe_devices(candidates));
    }
    return candidates;
  }
  std::vector<const StoredDevice*> chosen;
  std::vector<const StoredDevice*> every;
  for (const StoredDevice& d : all) every.push_back(&d);
  for (const std::string& wanted : options.devices) {
    if (wanted.empty()) throw UsageError("--device is empty: " + how);
    std::vector<const StoredDevice*> matches;
    for (const StoredDevice& d : all) {
      const bool fingerprint =
          lower(wanted) == d.fingerprint ||
          (wanted.size() >= 6 && is_hex(wanted) && d.fingerprint.rfind(lower(wanted), 0) == 0);
      const bool uuid = lower(wanted) == lower(d.record.uuid);
      const bool name = lower(d.record.name).find(lower(wanted)) != std::string::npos;
      if (fingerprint || uuid || name) matches.push_back(&d);
    }
    if (matches.empty()) {
      throw UsageError("--device '" + wanted +
                       "' matches no device of the database:" + describe_devices(every));
    }
    if (matches.size() > 1) {
      throw UsageError("--device '" + wanted + "' matches " + std::to_string(matches.size()) +
                       " devices; give a fingerprint (or 6+ of its first hex digits) or a UUID:" +
                       describe_devices(matches));
    }
    const StoredDevice* d = matches[0];
    if (std::find(candidates.begin(), candidates.end(), d) == candidates.end()) {
      throw UsageError("--device '" + wanted + "' is " + describe_device(*d) +
                       ", which has no passed measurements to export (with the --family and "
                       "--variant given)");
    }
    if (std::find(chosen.begin(), chosen.end(), d) == chosen.end()) chosen.push_back(d);
  }
  std::sort(chosen.begin(), chosen.end(),
            [](const StoredDevice* a, const StoredDevice* b) { return a->id < b->id; });
  return chosen;
}

ExportResult build_export(const Store& store, const ExportOptions& options) {
  ExportResult result;
  result.options = options;
  result.database_path = store.opening().path;
  result.schema_version = store.schema_version();

  // Every measurement of the families and variants asked for, passed or not. Peers
  // (`peer.<library>.<kernel>`, docs/peers.md) are other libraries' code measured for comparison:
  // no dispatch table can select them, so export never sees them. A user module's peers
  // (`peer.user.<module>.<name>`, docs/user-kernels.md) are the user's own kernels and export
  // like ours.
  std::vector<MeasurementBrief> all = store.measurement_briefs({});
  all.erase(std::remove_if(all.begin(), all.end(),
                           [](const MeasurementBrief& m) {
                             return is_peer_variant(m.variant) && !is_user_module_peer(m.variant);
                           }),
            all.end());
  std::set<std::string> families_present, variants_present;
  for (const MeasurementBrief& m : all) {
    families_present.insert(m.family);
    variants_present.insert(m.variant);
  }
  auto list = [](const std::set<std::string>& names) {
    std::string out;
    for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
    return out.empty() ? std::string("none") : out;
  };
  for (const std::string& family : options.families) {
    if (!families_present.count(family)) {
      throw UsageError("--family '" + family + "' has no measurements in the database; its " +
                       "families: " + list(families_present));
    }
  }
  if (!options.variant_glob.empty() &&
      std::none_of(variants_present.begin(), variants_present.end(), [&](const std::string& v) {
        return variant_glob_match(options.variant_glob, v);
      })) {
    throw UsageError("--variant '" + options.variant_glob +
                     "' matches no variant measured in the database: " + list(variants_present));
  }
  std::vector<const MeasurementBrief*> selected;
  for (const MeasurementBrief& m : all) {
    if (!options.families.empty() && std::find(options.families.begin(), options.families.end(),
                                               m.family) == options.families.end()) {
      continue;
    }
    if (!options.variant_glob.empty() && !variant_glob_match(options.variant_glob, m.variant))
      continue;
    selected.push_back(&m);
  }

  // The shape of every workload those measurements ran on.
  std::map<int64_t, std::pair<WorkloadRecord, WorkloadShape>> shapes;
  std::set<int64_t> unreadable;
  for (const MeasurementBrief* m : selected) {
    if (shapes.count(m->workload_id) || unreadable.count(m->workload_id)) continue;
    const std::optional<WorkloadRecord> record = store.workload(m->workload_id);
    ATTN_ASSERT(record.has_value(), "a measurement points at a missing workload");
    try {
      shapes[m->workload_id] = {*record,
                                shape_of_canonical_json(record->canonical_json, record->name)};
    } catch (const InputError& e) {
      std::string reason = e.what();
      for (const std::string& p : e.problems()) reason += "; " + p;
      result.skipped.push_back(
          {m->workload_id, record->name, record->hash, "its spec does not load here: " + reason});
      unreadable.insert(m->workload_id);
    }
  }

  auto usable = [&](const MeasurementBrief& m) {
    return m.disposition == Disposition::passed && m.median_us && *m.median_us > 0 &&
           shapes.count(m.workload_id) && (options.include_unstable || !m.unstable);
  };
  std::vector<int64_t> with_results;
  for (const MeasurementBrief* m : selected) {
    if (usable(*m) &&
        std::find(with_results.begin(), with_results.end(), m->device_id) == with_results.end()) {
      with_results.push_back(m->device_id);
    }
  }
  const std::vector<StoredDevice> devices = store.devices();
  const std::vector<const StoredDevice*> chosen = choose_devices(devices, with_results, options);
  if (chosen.empty()) {
    std::string why = "no passed measurements to export";
    if (!options.families.empty() || !options.variant_glob.empty()) {
      why += " with the --family and --variant given";
    }
    const int64_t unstable =
        std::count_if(selected.begin(), selected.end(), [&](const MeasurementBrief* m) {
          return m->disposition == Disposition::passed && m->unstable && m->median_us &&
                 shapes.count(m->workload_id);
        });
    if (unstable > 0 && !options.include_unstable) {
      why += " (" + std::to_string(unstable) +
             " passed but flagged unstable were left out: --include-unstable takes them)";
    }
    why += "; `attn-tune db info` lists what the database holds";
    for (const SkippedWorkload& w : result.skipped)
      why += "\n  skipped " + w.name + ": " + w.reason;
    throw UsageError(why);
  }

  std::set<int64_t> run_ids;
  for (const StoredDevice* device : chosen) {
    ExportDeviceTable table;
    table.device = *device;
    // (family, workload) -> its cases, each the measurement that stands for it.
    std::map<std::pair<std::string, int64_t>, WorkloadCases> cases;
    for (const MeasurementBrief* m : selected) {
      if (m->device_id != device->id) continue;
      if (m->disposition == Disposition::passed && m->unstable && !options.include_unstable) {
        ++table.unstable_left_out;
      }
      if (!usable(*m)) continue;
      ++table.measurements_used;
      WorkloadCases& w = cases[{m->family, m->workload_id}];
      w.workload_id = m->workload_id;
      const MeasurementBrief*& slot = w.cases[{m->variant, m->config_key}];
      if (slot == nullptr || policy_rank(m->policy) < policy_rank(slot->policy) ||
          (policy_rank(m->policy) == policy_rank(slot->policy) && m->id > slot->id)) {
        slot = m;
      }
    }
    std::map<BucketKey, std::vector<const WorkloadCases*>> buckets;
    for (const auto& [key, w] : cases) {
      buckets[bucket_of(key.first, shapes.at(key.second).second)].push_back(&w);
    }
    for (const auto& [key, members] : buckets) {
      table.entries.push_back(choose_for_bucket(key, members, shapes));
      for (const BucketMember& m : table.entries.back().members) {
        run_ids.insert(m.best.run_id);
        if (m.chosen) run_ids.insert(m.chosen->run_id);
      }
    }

    // Coverage: the cross product of the axis values this family was measured at on this device.
    std::map<std::string, std::map<BucketKey, std::set<std::string>>> measured;  // family ->
    for (const MeasurementBrief* m : selected) {
      if (m->device_id != device->id || !shapes.count(m->workload_id)) continue;
      const auto& [record, shape] = shapes.at(m->workload_id);
      measured[m->family][bucket_of(m->family, shape)].insert(record.name);
    }
    for (const auto& [family, cells] : measured) {
      FamilyCoverage coverage;
      coverage.family = family;
      std::set<int> batch, context, gqa, head_dim, page;
      std::set<std::pair<std::string, std::string>> dtypes;
      for (const auto& [key, names] : cells) {
        batch.insert(key.batch_bucket);
        context.insert(key.context_bucket);
        gqa.insert(key.gqa_ratio);
        head_dim.insert(key.head_dim);
        page.insert(key.page_size);
        dtypes.insert({key.dtype, key.kv_dtype});
      }
      coverage.batch_buckets = sorted(batch);
      coverage.context_buckets = sorted(context);
      coverage.gqa_ratios = sorted(gqa);
      coverage.head_dims = sorted(head_dim);
      coverage.page_sizes = sorted(page);
      coverage.dtypes = sorted(dtypes);
      for (int g : coverage.gqa_ratios) {
        for (int h : coverage.head_dims) {
          for (const auto& [dtype, kv_dtype] : coverage.dtypes) {
            for (int p : coverage.page_sizes) {
              for (int b : coverage.batch_buckets) {
                for (int c : coverage.context_buckets) {
                  CoverageCell cell;
                  cell.bucket = {family, g, h, dtype, kv_dtype, p, b, c};
                  const bool exported =
                      std::any_of(table.entries.begin(), table.entries.end(),
                                  [&](const ExportEntry& e) { return e.bucket == cell.bucket; });
                  auto it = cells.find(cell.bucket);
                  if (exported) {
                    cell.status = CellStatus::exported;
                  } else if (it != cells.end()) {
                    cell.status = CellStatus::no_passed;
                    cell.workloads.assign(it->second.begin(), it->second.end());
                  }
                  coverage.cells.push_back(std::move(cell));
                }
              }
            }
          }
        }
      }
      table.coverage.push_back(std::move(coverage));
    }
    result.tables.push_back(std::move(table));
  }
  for (int64_t id : run_ids) {
    std::optional<StoredRun> run = store.run(id);
    ATTN_ASSERT(run.has_value(), "a measurement points at a missing run");
    result.runs[id] = std::move(*run);
  }
  return result;
}

}  // namespace attn
