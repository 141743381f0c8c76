#include "results/device_json.hpp"

#include <string>

namespace attn {

using json = nlohmann::ordered_json;  // keys in the order written

json ceilings_json(const DeviceCeilings& ceilings) {
  json out = json::object();
  for (const auto& [metric, r] : ceilings.by_metric) {
    out[metric] = {{"value", r.value},
                   {"method", r.method},
                   {"measured_at", r.measured_at},
                   {"sample_count", r.sample_count},
                   {"noise", r.noise},
                   {"unstable", r.unstable},
                   {"tool_version", r.tool_version},
                   {"git_commit", r.git_commit},
                   {"sm_clock_mhz", r.sm_clock_mhz ? json(*r.sm_clock_mhz) : json(nullptr)}};
  }
  return out;
}

json device_json(const StoredDevice& d) {
  const DeviceRecord& r = d.record;
  return {{"id", d.id},
          {"fingerprint", d.fingerprint},
          {"kind", r.kind},
          {"name", r.name},
          {"uuid", r.uuid},
          {"compute_capability", std::to_string(r.cc_major) + "." + std::to_string(r.cc_minor)},
          {"sm_count", r.sm_count},
          {"memory_bytes", r.memory_bytes},
          {"l2_bytes", r.l2_bytes},
          {"sm_clock_khz", r.sm_clock_khz},
          {"memory_clock_khz", r.memory_clock_khz},
          {"memory_bus_bits", r.memory_bus_bits},
          // null when unknown (a CPU, no NVML, a row written before schema v4)
          {"driver_version", r.driver_version.empty() ? json(nullptr) : json(r.driver_version)},
          {"cuda_driver_version", r.cuda_driver_version},
          {"cuda_version", r.cuda_version},
          {"nvrtc_version", r.nvrtc_version},
          {"first_seen_at", d.first_seen_at},
          {"last_seen_at", d.last_seen_at},
          {"ceilings", ceilings_json(d.ceilings)}};
}

json run_json(const StoredRun& r) {
  return {{"id", r.id},
          {"uid", r.uid},
          {"tool", r.record.tool},
          {"tool_version", r.record.tool_version},
          {"git_commit", r.record.git_commit},
          {"build_type", r.record.build_type},
          {"command_line", r.record.command_line},
          {"host", r.record.host},
          {"started_at", r.record.started_at},
          {"finished_at", r.finished_at ? json(*r.finished_at) : json(nullptr)},
          {"status", r.status}};
}

}  // namespace attn
