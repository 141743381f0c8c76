// Device ceilings: what `attn-bench calibrate` measured on one device with kernels of our own
// (read bandwidth, copy bandwidth, the driver's device-to-device copy for reference, and bf16
// tensor-core rate), and the fraction of a ceiling a result reaches. Plain data: the store keeps
// the records, the tuner sets each result against the ceiling of its family's bound.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "results/records.hpp"

namespace attn {

// Metric names, as stored in ceilings.metric.
inline constexpr const char* kReadGbps = "read_gbps";      // streaming read kernel, GB/s
inline constexpr const char* kCopyGbps = "copy_gbps";      // copy kernel, bytes read + written
inline constexpr const char* kMemcpyGbps = "memcpy_gbps";  // cuMemcpyDtoD, read + written
inline constexpr const char* kBf16Tflops = "bf16_tflops";  // bf16 GEMM on the tensor cores

struct CeilingRecord {
  std::string metric;  // one of the names above
  double value = 0;    // GB/s (1e9 bytes/s) or TFLOP/s
  std::string method;  // the kernel and config that measured it, and the problem size
  int64_t sample_count = 0;
  double noise = 0;  // relative noise of the median
  bool unstable = false;
  std::string tool_version, git_commit;
  std::string measured_at;  // ISO 8601 UTC; empty: the store sets it
  // The SM clock it was measured at (the median clock-probe reading of its samples, else NVML's
  // reading at the end); empty when not known: calibrated before schema v6 recorded it, or with
  // neither reading.
  std::optional<double> sm_clock_mhz;
};

// "at 1620 MHz", or "SM clock not recorded" for a ceiling without one.
std::string describe_clock(const CeilingRecord& record);

// The latest record of each metric for one device.
struct DeviceCeilings {
  std::map<std::string, CeilingRecord> by_metric;
  bool empty() const { return by_metric.empty(); }
  std::optional<double> value(const std::string& metric) const;
};

// Which ceiling a result is set against: memory-bound families against the read bandwidth,
// compute-bound ones against the bf16 tensor-core rate.
enum class Bound { memory, compute };

// What a result achieved, as setting it against a ceiling needs it.
struct AchievedRate {
  double gbps = 0;          // the logical minimum bytes / median
  double unique_gbps = 0;   // the unique minimum bytes / median; 0 when not known
  double tflops = 0;        // useful FLOPs / median
  double sm_clock_mhz = 0;  // the SM clock the result ran at; 0 when not known
};

// A result against its bound's ceiling. Memory: the read bandwidth as calibrated (DRAM bandwidth
// does not follow the SM clock). Compute: the tensor cores' rate is proportional to the SM clock,
// and the calibration GEMM runs power-limited at a lower clock than attention kernels, so the
// calibrated rate is scaled to the result's clock (value x result clock / calibration clock) when
// both clocks are known, and used as measured otherwise (clock_scaled says which).
struct CeilingFraction {
  std::string ceiling;                  // "read_bw" or "bf16_tensor"
  std::optional<double> fraction;       // achieved / ceiling_value; nullopt: no such ceiling
  std::optional<double> ceiling_value;  // GB/s or TFLOP/s, as the fraction is against it
  // Memory: the unique minimum's rate over the ceiling (shared prefix rows once), when known.
  std::optional<double> unique_fraction;
  // Compute: the clocks, and the datasheet peak at the result's clock (DeviceRecord known to
  // results/tensor_peak.hpp).
  std::optional<double> calibrated_mhz;  // the ceiling's clock; nullopt: not recorded
  double result_mhz = 0;                 // the result's clock; 0: not known
  bool clock_scaled = false;
  std::optional<double> peak_tflops;
  std::optional<double> peak_fraction;  // achieved / peak_tflops
  bool above_ceiling() const { return fraction && *fraction > 1.0; }
  bool above_peak() const { return peak_fraction && *peak_fraction > 1.0; }
};
// `device`, when given, adds the datasheet peak of a compute-bound result.
CeilingFraction fraction_of_ceiling(Bound bound, const AchievedRate& rate,
                                    const DeviceCeilings& ceilings,
                                    const DeviceRecord* device = nullptr);

}  // namespace attn
