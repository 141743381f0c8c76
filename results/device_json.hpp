// A stored device as JSON: what `attn-tune db info --json` and `attn-tune export` (JSON) print
// for each device, field for field, so the two never describe a device differently.
#pragma once

#include <nlohmann/json.hpp>

#include "results/store.hpp"

namespace attn {

// Every ceiling record of the device: value, method, when, samples, noise, stability, and the tool
// version and commit that measured it.
nlohmann::ordered_json ceilings_json(const DeviceCeilings& ceilings);

// Identity (fingerprint), hardware, clocks, software versions, first and last seen, ceilings.
nlohmann::ordered_json device_json(const StoredDevice& device);

}  // namespace attn
