// The winners over what a results database holds, measuring nothing: what `attn-tune merge
// --winners` prints once the shards of a sweep are merged. Per workload, device model and variant,
// the candidates are the latest passed `confirm` result of each config, as a sweep's are
// (tuner/tune_sweep.hpp), and choose_winner picks among them; the best over all variants is chosen
// the same way from each variant's winner and the configs tied with it.
//
// The shards of a sweep on a cluster ran on different boards of one model, and a device is one
// board (its UUID is part of its fingerprint: docs/database.md). Their results are pooled here
// when the devices differ in nothing but the UUID (for a CPU, the host name): the same kind, name,
// compute capability, SMs, memory, driver, CUDA and NVRTC versions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "results/records.hpp"
#include "results/store.hpp"
#include "tuner/winner.hpp"

namespace attn {

// What devices of one model share: everything in the fingerprint but the UUID.
std::string device_model_key(const DeviceRecord& device);

struct VariantWinner {
  std::string variant;
  size_t configs = 0;  // configs with a passed confirm result: the candidates
  WinnerChoice choice;
};

struct StoredWinners {
  std::string workload_name, workload_hash;
  std::string device_name;
  size_t devices = 0;                   // boards of the model with results pooled
  std::vector<VariantWinner> variants;  // by name
  std::optional<WinnerChoice> overall;
};

// For each of `workload_hashes` and each model of `device_fingerprints` (the devices of the
// model in `store` pooled), over the variants matching `variant_glob` (empty: every variant but
// peer results, `peer.*`). Workloads and devices the store lacks, and pairs without a passed
// confirm result, are left out.
std::vector<StoredWinners> choose_stored_winners(
    const Store& store, const std::vector<std::string>& workload_hashes,
    const std::vector<std::string>& device_fingerprints, const std::string& variant_glob);

}  // namespace attn
