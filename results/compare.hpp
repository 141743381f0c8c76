// attn-tune compare: two sides of the results database (two devices, two runs, or two variants on
// one device) on the workloads both measured. Per workload: each side's best config, the speed-up
// of B over A with a bootstrap interval (median_ratio_interval) and the verdict and regression it
// gives (speedup_verdict, is_regression), the fraction of each device's ceiling, whether the
// best config differs, the transfer regret of running A's best config on B, the rank correlation
// of the configs both sides measured, and the roofline's prediction of B from A.
//
// The arithmetic (compare_workload, spearman_correlation, transfer_regret, match_device) works on
// plain values so that it can be tested on synthetic samples; compare() reads a Store.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/sample_statistics.hpp"
#include "results/ceilings.hpp"
#include "results/store.hpp"

namespace attn {

enum class CompareMode { devices, runs, variants };
std::string to_string(CompareMode mode);

// One config's result on one side: the measurement that speaks for it (representatives()).
struct ConfigTiming {
  int64_t measurement_id = 0, run_id = 0, device_id = 0;
  std::string family, variant, config_key, policy;
  double median_us = 0;
  double bytes = 0, flops = 0;         // minimum traffic (logical) and useful FLOPs of the problem
  std::optional<double> unique_bytes;  // unique minimum traffic, when recorded
  double sm_clock_mhz = 0;             // the clock it ran at (achieved_rate); 0: not known
  std::vector<double> samples;         // the kept samples, microseconds
  bool unstable = false;
  AchievedRate rate() const;  // from the median
};

// Per (variant, config key), the measurement that speaks for the config: passed and timed, of the
// most thorough policy (any policy over `screen`), and of those the latest. Sorted by variant and
// key.
std::vector<ConfigTiming> representatives(const std::vector<StoredMeasurement>& measurements);

// Spearman's rank correlation of paired values: the Pearson correlation of their ranks, tied
// values taking the mean of the ranks they span. nullopt for fewer than 3 pairs or when either
// side's values are all equal (no ranking to correlate).
std::optional<double> spearman_correlation(const std::vector<double>& x,
                                           const std::vector<double>& y);

// What running A's best config on B loses against B's own best: t_B(A's best) / t_B(B's best) - 1.
double transfer_regret(double b_time_of_a_best_us, double b_best_us);

// The two sides' configs on one workload.
struct WorkloadSides {
  std::string workload, workload_hash;
  std::vector<ConfigTiming> a, b;  // representatives(); each non-empty
};

// The default regression threshold: 2% (attn-tune compare --threshold 2).
constexpr double kDefaultRegressionThreshold = 0.02;

// B against A from the speed-up interval (A's median / B's median, median_ratio_interval): FASTER
// when the whole interval lies above 1, SLOWER when it lies below 1, else SAME (it holds 1).
Verdict speedup_verdict(const RatioInterval& speedup);
// Whether B is slower than A by more than `threshold` (0.02: 2%) over the whole speed-up interval:
// its upper end x (1 + threshold) is below 1, i.e. B's time / A's time - 1 exceeds the threshold
// at every point of the interval. A ratio at the threshold up to rounding is not beyond it.
bool is_regression(const RatioInterval& speedup, double threshold);

struct CompareSettings {
  // Variants mode: a config is its key whatever the variant (the two variants' configs are matched
  // by key); otherwise by variant and key.
  bool configs_by_key = false;
  double threshold = kDefaultRegressionThreshold;  // is_regression's (0.05 = 5%)
  std::map<int64_t, DeviceCeilings> ceilings;  // by device id; a device without one: not calibrated
  std::map<int64_t, DeviceRecord> devices;     // by device id, for the datasheet peak
};

struct WorkloadComparison {
  std::string workload, workload_hash, family;
  ConfigTiming a_best, b_best;  // the lowest median of each side
  // B's best against A's best: the 95% intervals of the two medians and relative_difference =
  // (median_b - median_a) / median_a. (Its verdict, from the medians' intervals, is not the
  // comparison's: `verdict` is.)
  Comparison comparison;
  RatioInterval speedup;            // median_a / median_b: above 1, B is faster
  Verdict verdict = Verdict::same;  // speedup_verdict(speedup)
  std::string ceiling;  // "read_bw" or "bf16_tensor" (the family's bound); empty: unknown family
  std::optional<double> a_fraction, b_fraction;  // of each best's device ceiling
  CeilingFraction a_against, b_against;          // the same, with what explains a fraction > 1
  bool best_differs = false;
  std::optional<ConfigTiming> a_best_on_b;  // B's measurement of A's best config, when it has one
  std::optional<double> transfer_regret;    // of a_best_on_b against b_best
  std::optional<Verdict> a_best_on_b_verdict;  // a_best_on_b against b_best (SAME: a tie on B)
  size_t common_configs = 0;                   // configs both sides measured
  std::optional<double> spearman;              // over the common configs
  std::optional<double> predicted_b_us;        // from A's best time and the two ceilings
  std::optional<double> prediction_error;      // measured B / predicted - 1
  bool regression = false;                     // is_regression(speedup, threshold)
};

WorkloadComparison compare_workload(const WorkloadSides& sides, const CompareSettings& settings);

// The device `text` names: a whole fingerprint or UUID, else the one device whose fingerprint or
// UUID starts with it (with or without "GPU-") or whose name holds it, case-insensitively.
// Throws UsageError when none or several match, listing the candidates.
const StoredDevice& match_device(const std::vector<StoredDevice>& devices, const std::string& text);
// "NVIDIA H100 80GB HBM3 (5f1c2a3b)": the name and the fingerprint's first 8 digits.
std::string device_label(const StoredDevice& device);

// What the user asked: two --device, two --run or two --variant (with one --device or none).
struct CompareRequest {
  std::vector<std::string> devices;
  std::vector<int64_t> runs;
  std::vector<std::string> variants;  // globs (kernels/registry.hpp glob_match)
  std::string workload;               // glob on the workload name; empty: every workload
  double threshold = kDefaultRegressionThreshold;  // as CompareSettings::threshold
};

struct CompareSide {
  std::string label;  // the device, "run 3 (attn-tune tune, ...)", or the variant glob
  std::vector<int64_t> device_ids, run_ids;  // where its compared measurements came from, sorted
};

struct CompareSummary {
  size_t faster = 0, same = 0, slower = 0, regressions = 0;
  std::optional<double> geomean_speedup;  // of the speed-up estimates
};

struct CompareResult {
  CompareMode mode = CompareMode::devices;
  double threshold = 0;
  CompareSide a, b;
  std::vector<StoredDevice> devices;           // those the compared measurements are on, by id
  std::map<int64_t, DeviceCeilings> ceilings;  // of those devices
  std::vector<WorkloadComparison> rows;        // by workload name, then hash
  std::vector<std::string> only_a, only_b;     // workloads only one side measured
  CompareSummary summary;
};

// Throws UsageError for a request that names no two sides, names what the database lacks (a
// device, a run), is ambiguous, or leaves no workload measured by both sides.
CompareResult compare(const Store& store, const CompareRequest& request);

}  // namespace attn
