// Measurement: what one (variant, config) on one workload produced: its disposition, the raw timing
// samples and their statistics, the verification outcome and the achieved rates. Plain data; the
// timing core (tuner/) fills it and the store (results/) records it.
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

struct Measurement {
  std::string family;   // "paged_decode"
  std::string variant;  // "paged_decode.splitkv"
  std::string
      config_key;  // canonical config, e.g. "heads_per_cta=4,num_splits=0,tile_tokens=64,warps=4"
  std::string config_json;  // the same config as a JSON object
  std::string backend;      // "cuda" or "cpu"
  Disposition disposition = Disposition::unsupported;
  std::string reason;  // why it is not `passed`; empty when passed
  std::string policy;  // name of the measurement policy
  std::vector<double> samples_us;
  Statistics stats;
  Verification verification;
  double bytes = 0;  // minimum traffic of the problem
  double flops = 0;  // useful FLOPs of the problem
  double gbps() const { return stats.median > 0 ? bytes / (stats.median * 1e3) : 0; }
  double tflops() const { return stats.median > 0 ? flops / (stats.median * 1e6) : 0; }
};

}  // namespace attn
