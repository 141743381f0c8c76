// attn-tune export: the best (variant, config) per (device, family, workload bucket) from the
// passed measurements of a results database, with the regret of each bucket's choice, where it
// came from, and which bucket regions have no data. Rendering to JSON and to a C++ header is in
// results/export_render.hpp. docs/export.md describes the rules.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "results/store.hpp"
#include "results/workload_shape.hpp"

namespace attn {

struct ExportOptions {
  // --device: each picks one device by fingerprint (or a prefix of 6+ hex digits), UUID, or a
  // case-insensitive part of its name. Empty: the one device with results, else a usage error.
  std::vector<std::string> devices;
  bool all_devices = false;
  std::vector<std::string> families;  // empty: every family
  std::string variant_glob;           // empty: every variant
  bool include_unstable = false;  // passed measurements flagged unstable are left out unless set
};

// A bucket: the family and the workload shape's axes, batch size and context length as
// power-of-two buckets (pow2_bucket), the rest exact.
struct BucketKey {
  std::string family;
  int gqa_ratio = 0, head_dim = 0;
  std::string dtype, kv_dtype;
  int page_size = 0;
  int batch_bucket = 0, context_bucket = 0;

  bool operator<(const BucketKey& other) const;
  bool operator==(const BucketKey& other) const;
};
BucketKey bucket_of(const std::string& family, const WorkloadShape& shape);

// The measurement that stands for one (variant, config) on one workload: the latest one under the
// most thorough policy it was measured with (confirm, then any other but screen, then screen).
struct CaseTime {
  std::string variant, config_key, config_json;
  double median_us = 0;
  std::optional<double> p10_us, p90_us;
  int64_t measurement_id = 0;
  std::string measurement_uid;
  int64_t run_id = 0;
  std::string policy;
  int64_t sample_count = 0;
  bool unstable = false;
};

// A workload of a bucket: its best case and the bucket's choice on it.
struct BucketMember {
  int64_t workload_id = 0;
  std::string name, hash;
  WorkloadShape shape;
  int64_t cases = 0;               // (variant, config) pairs with a usable measurement
  CaseTime best;                   // the lowest median
  std::optional<CaseTime> chosen;  // the bucket's choice; empty when it was not measured here
  std::optional<double> slowdown;  // chosen / best - 1
};

struct ExportEntry {
  BucketKey bucket;
  std::string variant, config_key;
  std::vector<std::pair<std::string, int64_t>> config;  // axis values, sorted by axis
  std::vector<BucketMember> members;                    // by batch size, context length, name
  int covered = 0;                                      // members the choice was measured on
  bool partial = false;    // no (variant, config) was measured on every member
  int64_t candidates = 0;  // (variant, config) pairs measured on `covered` members
  double max_regret = 0;   // over the covered members: chosen / best - 1
  double mean_regret = 0;
};

// Which buckets of one family on one device have data. The axes are the values of the workloads
// measured in this family on this device (passed or not); the regions are their cross product.
enum class CellStatus { exported, no_passed, no_data };
std::string to_string(CellStatus status);
struct CoverageCell {
  BucketKey bucket;
  CellStatus status = CellStatus::no_data;
  std::vector<std::string> workloads;  // no_passed: the workloads measured there
};
struct FamilyCoverage {
  std::string family;
  std::vector<int> batch_buckets, context_buckets;
  std::vector<int> gqa_ratios, head_dims, page_sizes;
  std::vector<std::pair<std::string, std::string>> dtypes;  // (dtype, kv_dtype)
  std::vector<CoverageCell> cells;                          // every cell of the cross product
  int64_t count(CellStatus status) const;
};

struct ExportDeviceTable {
  StoredDevice device;
  std::vector<ExportEntry> entries;  // by bucket
  std::vector<FamilyCoverage> coverage;
  int64_t measurements_used = 0;  // usable measurements (after filters)
  int64_t unstable_left_out = 0;  // passed but unstable, left out (include_unstable unset)
};

// A workload with measurements that could not be bucketed.
struct SkippedWorkload {
  int64_t id = 0;
  std::string name, hash, reason;
};

struct ExportResult {
  std::vector<ExportDeviceTable> tables;  // one per chosen device, by device id
  std::map<int64_t, StoredRun> runs;      // every run an exported measurement came from
  std::vector<SkippedWorkload> skipped;
  ExportOptions options;
  std::string database_path;
  int schema_version = 0;
};

// Throws UsageError when the device choice is missing (several devices, none chosen), matches
// nothing or several devices, or when nothing passed measurements match the filters.
ExportResult build_export(const Store& store, const ExportOptions& options);

// The devices the options pick among `devices` (those with usable results); the same rules and
// errors as build_export.
std::vector<const StoredDevice*> choose_devices(const std::vector<StoredDevice>& all,
                                                const std::vector<int64_t>& with_results,
                                                const ExportOptions& options);

}  // namespace attn
