// Measurement: what one (variant, config) on one workload produced: its disposition, the raw timing
// samples and their statistics, the verification outcome and the achieved rates. Plain data; the
// timing core (measure/) fills it and the store (results/) records it. Every member of Measurement
// and of its parts is a row of the field table (results/measurement_fields.hpp), which gives its
// column and its JSON key; a test fails while one is missing there.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace attn {

enum class Disposition {
  passed,          // ran, verified against the reference within tolerance, timed
  incorrect,       // ran, but its output differs from the reference (or was not fully written)
  unsupported,     // the variant declined this problem or config; the reason says why
  compile_failed,  // NVRTC rejected the rendered program; the reason holds the log's head
  launch_failed,   // the launch or the run returned a CUDA error
  crashed,         // the worker died (sticky CUDA error, signal)
  timed_out,       // a phase passed its deadline
};
std::string to_string(Disposition disposition);
std::optional<Disposition> disposition_from_string(const std::string& text);

// Order statistics of timing samples, in microseconds.
struct Statistics {
  size_t count = 0;
  double median = 0, mean = 0, stddev = 0, min = 0, max = 0, p10 = 0, p90 = 0;
  double relative_noise() const { return mean > 0 ? stddev / mean : 0; }
};
Statistics summarize(std::vector<double> samples);

struct Verification {
  bool checked = false;
  double max_abs_error = 0;
  double rel_l2_error = 0;  // ||out - ref|| / ||ref||
  int64_t nonfinite = 0;  // elements that are NaN or inf (a poisoned, unwritten output shows here)
  int64_t elements = 0;
  double tolerance = 0;   // the rel_l2 limit for the output dtype
  std::string reference;  // which oracle: "cpu_reference", "naive_dense"
};

// How the samples were taken (measure/timing_core.hpp).
struct TimingDetails {
  std::string timer;            // "events", "graph" or "cpu"; empty when not timed
  int launches_per_sample = 1;  // graph: launches replayed per sample (a sample is their mean)
  std::string stop_reason;      // "noise", "max_samples", "max_time" or "interrupted" (Ctrl-C)
  double noise = 0;             // relative noise of the median over the kept samples (bootstrap)
  double noise_target = 0;      // the policy's limit
  int64_t warmup_samples = 0;
  int64_t discarded = 0;  // samples taken below the expected SM clock, left out of the statistics
  int64_t outliers = 0;   // kept samples farther than 5 MADs from the median (kept in the median)
};

// The clocks and temperature the samples were taken at. Zero / empty when not read.
struct ClockRecord {
  double expected_mhz = 0;                          // the clock samples were filtered against
  double median_mhz = 0, min_mhz = 0, max_mhz = 0;  // of the kept samples' probe readings
  std::optional<double> temperature_start_c, temperature_end_c;  // NVML, when present
  std::optional<double> nvml_sm_clock_mhz;                       // NVML, at the end
  std::optional<int64_t> clock_event_reasons;                    // NVML bit mask, at the end
};

struct Measurement {
  std::string family;   // "paged_decode"
  std::string variant;  // "paged_decode.sm80_simt"
  std::string
      config_key;  // canonical config, e.g. "heads_per_cta=4,num_splits=0,tile_tokens=64,warps=4"
  std::string config_json;  // the same config as a JSON object
  // What the variant's planner chose for this batch beyond the config (how the work was dealt to
  // CTAs, e.g. "balanced: 99 CTAs per KV head ..."); empty when the variant plans nothing.
  std::string plan;
  std::string backend;      // "cuda" or "cpu"
  Disposition disposition = Disposition::unsupported;
  std::string reason;  // why it is not `passed`; empty when passed
  std::string policy;  // name of the measurement policy, with overrides: "confirm(noise=0.01)"
  // Every sample in the order taken, discarded ones too; `stats` are of the kept ones only.
  std::vector<double> samples_us;
  std::vector<double> sample_clock_mhz;  // empty, or one SM clock reading per sample (0: none)
  std::vector<bool> sample_discarded;    // empty (none discarded), or one flag per sample
  Statistics stats;
  TimingDetails timing;
  ClockRecord clocks;
  bool unstable = false;        // measured, but not to be trusted: unstable_reason says why
  std::string unstable_reason;  // "noise 1.2% > 0.5% (max_time)", "18% of samples throttled"
  // The device ceiling this result is set against (results/ceilings.hpp): "read_bw" for
  // memory-bound families, "bf16_tensor" for compute-bound ones; empty when the device has none.
  std::string ceiling;
  std::optional<double> ceiling_fraction;  // achieved rate / ceiling
  Verification verification;
  // Minimum traffic of the problem (workloads/traffic.hpp): `bytes` reads rows of K/V pages that
  // sequences share through a common prefix once per sequence (logical), `unique_bytes` once
  // (empty in results recorded before it was counted).
  double bytes = 0;
  std::optional<double> unique_bytes;
  double flops = 0;  // useful FLOPs of the problem
  double gbps() const { return stats.median > 0 ? bytes / (stats.median * 1e3) : 0; }
  // unique_bytes / median in GB/s; 0 when either is missing.
  double unique_gbps() const {
    return stats.median > 0 && unique_bytes ? *unique_bytes / (stats.median * 1e3) : 0;
  }
  double tflops() const { return stats.median > 0 ? flops / (stats.median * 1e6) : 0; }
  // The kept samples (samples_us without the discarded ones).
  std::vector<double> kept_samples() const;
};

}  // namespace attn
