// Rows the store keeps beside measurements: the device (or CPU host) that ran them, the tool run
// that produced them, and the workload they ran on. Plain data with no CUDA types: apps/ and tuner/
// translate the device layer's DeviceInfo into a DeviceRecord.
#pragma once

#include <cstdint>
#include <string>

namespace attn {

struct DeviceRecord {
  std::string kind;  // "gpu" or "cpu"
  std::string name;  // "NVIDIA H100 80GB HBM3", or the CPU model
  std::string uuid;  // GPU UUID; for a CPU, the host name
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;  // GPU multiprocessors, or CPU hardware threads
  int64_t memory_bytes = 0;
  int64_t l2_bytes = 0;
  int sm_clock_khz = 0;
  int memory_clock_khz = 0;
  int memory_bus_bits = 0;
  // The NVIDIA driver, "580.159.04" (NVML's nvmlSystemGetDriverVersion); empty when unknown: a
  // CPU, a machine without NVML, or a row written before schema v4.
  std::string driver_version;
  std::string cuda_driver_version;  // the CUDA version the driver supports, "13.0"
                                    // (cuDriverGetVersion); empty for a CPU
  std::string cuda_version;         // toolkit the binary was built against
  std::string nvrtc_version;
  // A stable identity for upserts: kind, name, uuid, compute capability, SMs, memory and the
  // software versions, the driver's included, so that the same board under another driver is
  // another device. A record whose driver is unknown hashes as before the driver was recorded
  // (schema v3), so rows of older databases keep their fingerprints.
  std::string fingerprint() const;
  // "580.159.04 (supports CUDA 13.0)", "unknown (supports CUDA 13.0)" for a GPU whose driver
  // is not known, "-" when neither is (a CPU).
  std::string driver_text() const;
};

struct RunRecord {
  std::string tool;  // "attn-bench run"
  std::string tool_version;
  std::string git_commit;    // of the build; "+dirty" appended when the tree had changes
  std::string build_type;    // CMAKE_BUILD_TYPE
  std::string command_line;  // argv joined, each argument quoted when needed
  std::string host;
  std::string started_at;  // UTC, ISO 8601
};

// The current time as the store writes every timestamp: ISO 8601, UTC, milliseconds,
// e.g. "2025-01-31T12:34:56.789Z". Text in this form sorts in time order.
std::string utc_timestamp_now();
// True when `text` has exactly that form (fraction optional, 1 to 9 digits): what
// RunRecord::started_at must hold when it is not left empty.
bool is_utc_timestamp(const std::string& text);

struct WorkloadRecord {
  std::string hash;  // content_hash(spec)
  std::string name;
  std::string canonical_json;
};

}  // namespace attn
