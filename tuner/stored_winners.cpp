#include "tuner/stored_winners.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "base/glob.hpp"
#include "measure/timing_policy.hpp"

namespace attn {

std::string device_model_key(const DeviceRecord& device) {
  DeviceRecord model = device;
  model.uuid.clear();
  return model.fingerprint();
}

std::vector<StoredWinners> choose_stored_winners(
    const Store& store, const std::vector<std::string>& workload_hashes,
    const std::vector<std::string>& device_fingerprints, const std::string& variant_glob) {
  // The models asked for, in the order first named, and every device of each in the store.
  const std::vector<StoredDevice> devices = store.devices();
  std::vector<std::string> models;
  std::map<std::string, std::vector<const StoredDevice*>> boards;
  for (const std::string& fingerprint : device_fingerprints) {
    for (const StoredDevice& d : devices) {
      if (d.fingerprint != fingerprint) continue;
      const std::string model = device_model_key(d.record);
      if (std::find(models.begin(), models.end(), model) == models.end()) models.push_back(model);
    }
  }
  for (const StoredDevice& d : devices) {
    const std::string model = device_model_key(d.record);
    if (std::find(models.begin(), models.end(), model) != models.end()) {
      boards[model].push_back(&d);
    }
  }
  const auto wanted = [&](const std::string& variant) {
    return variant_glob.empty() ? variant.rfind("peer.", 0) != 0
                                : glob_match(variant_glob, variant);
  };

  std::vector<StoredWinners> out;
  std::set<std::string> seen;
  for (const std::string& hash : workload_hashes) {
    if (!seen.insert(hash).second) continue;
    const std::optional<int64_t> workload_id = store.workload_id(hash);
    if (!workload_id) continue;
    const std::optional<WorkloadRecord> workload = store.workload(*workload_id);
    for (const std::string& model : models) {
      // The latest passed confirm result of each (variant, config) on any board of the model.
      std::map<std::pair<std::string, std::string>, StoredMeasurement> latest;
      std::set<int64_t> measured_on;
      for (const StoredDevice* d : boards[model]) {
        MeasurementFilter filter;
        filter.workload_id = *workload_id;
        filter.device_id = d->id;
        filter.policy = confirm_policy().name;
        filter.passed_only = true;
        for (StoredMeasurement& row : store.find_measurements(filter)) {
          if (!wanted(row.measurement.variant)) continue;
          measured_on.insert(d->id);
          const auto key = std::make_pair(row.measurement.variant, row.measurement.config_key);
          auto it = latest.find(key);
          if (it == latest.end() || it->second.id < row.id) latest[key] = std::move(row);
        }
      }
      if (latest.empty()) continue;
      StoredWinners winners;
      winners.workload_name = workload ? workload->name : hash;
      winners.workload_hash = hash;
      winners.device_name = boards[model].front()->record.name;
      winners.devices = measured_on.size();
      std::map<std::string, std::vector<Candidate>> by_variant;
      for (const auto& [key, row] : latest) {
        const Measurement& m = row.measurement;
        by_variant[key.first].push_back(
            {m.variant, m.config_key, row.id, m.kept_samples(), m.stats.median});
      }
      std::vector<Candidate> finalists;
      for (auto& [variant, candidates] : by_variant) {
        const size_t configs = candidates.size();
        std::optional<WinnerChoice> choice = choose_winner(std::move(candidates));
        if (!choice) continue;
        finalists.push_back(choice->winner);
        for (const Candidate& c : choice->tied) finalists.push_back(c);
        winners.variants.push_back({variant, configs, std::move(*choice)});
      }
      winners.overall = choose_winner(std::move(finalists));
      out.push_back(std::move(winners));
    }
  }
  return out;
}

}  // namespace attn
