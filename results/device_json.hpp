// A stored device and a stored run as JSON: what `attn-tune db info --json` and `attn-tune export`
// (JSON) print for each, field for field, so the two never describe one differently.
#pragma once

#include <nlohmann/json.hpp>

#include "results/store.hpp"

namespace attn {

// Every ceiling record of the device: value, method, when, samples, noise, stability, and the tool
// version and commit that measured it.
nlohmann::ordered_json ceilings_json(const DeviceCeilings& ceilings);

// Identity (fingerprint), hardware, clocks, software versions, first and last seen, ceilings.
nlohmann::ordered_json device_json(const StoredDevice& device);

// Id, uid, provenance (tool, version, commit, build type, command line, host), start, finish
// (null while running or after an interruption) and status.
nlohmann::ordered_json run_json(const StoredRun& run);

}  // namespace attn
