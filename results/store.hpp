// Store: the SQLite file every result goes into. One writer, WAL, busy_timeout, prepared statements
// with bound values only. The schema version lives in PRAGMA user_version and is migrated forward
// on open; a database written by a newer attn-bench is refused and left untouched. See
// docs/database.md for the tables.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "results/ceilings.hpp"
#include "results/measurement.hpp"
#include "results/records.hpp"

namespace attn {

class Database;  // results/sqlite.hpp

struct StoredMeasurement {
  int64_t id = 0;
  int64_t run_id = 0, device_id = 0, workload_id = 0;
  Measurement measurement;
};

struct StoredRun {
  int64_t id = 0;
  RunRecord record;
  std::optional<std::string> finished_at;  // empty while running, or when the run was interrupted
  std::string status;                      // "running" until finish_run
};

// An A/A check: one case measured twice in one process (attn-bench run --repeat-check).
struct RepeatCheckRecord {
  int64_t run_id = 0;
  int64_t first_measurement_id = 0, second_measurement_id = 0;
  double relative_difference = 0;  // (median_second - median_first) / median_first
  std::string verdict;             // "SAME", "FASTER", "SLOWER" (tuner/sample_statistics.hpp)
};

struct StoreCounts {
  int64_t runs = 0, devices = 0, workloads = 0, measurements = 0;
};

class Store {
 public:
  static constexpr int kSchemaVersion = 2;

  // Opens (creating if needed) and migrates. ":memory:" gives a private in-memory database.
  // Throws EnvironmentError if the file's schema is newer than kSchemaVersion or it is not a
  // database; the file is not modified in that case.
  explicit Store(const std::string& path);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  int schema_version() const;

  int64_t begin_run(const RunRecord& run);
  // status: "completed", "failed_cases", "error: ..."
  void finish_run(int64_t run_id, const std::string& status);
  int64_t upsert_device(const DeviceRecord& device);        // by fingerprint
  int64_t upsert_workload(const WorkloadRecord& workload);  // by hash
  // Writes the measurement and its raw samples in one transaction.
  int64_t add_measurement(int64_t run_id, int64_t device_id, int64_t workload_id,
                          const Measurement& measurement);

  // Ceilings of a device already upserted (by its fingerprint); throws if there is no such device.
  int64_t add_ceiling(const std::string& device_fingerprint, const CeilingRecord& ceiling);
  // The latest record of each metric for the device; empty when it was never calibrated.
  DeviceCeilings ceilings(const std::string& device_fingerprint) const;

  int64_t add_repeat_check(const RepeatCheckRecord& check);
  std::vector<RepeatCheckRecord> repeat_checks_of_run(int64_t run_id) const;

  StoreCounts counts() const;
  std::vector<StoredMeasurement> measurements_of_run(int64_t run_id) const;
  // Single rows by id; nullopt when there is none.
  std::optional<StoredRun> run(int64_t run_id) const;
  std::optional<DeviceRecord> device(int64_t device_id) const;
  std::optional<WorkloadRecord> workload(int64_t workload_id) const;

 private:
  std::unique_ptr<Database> db_;
};

}  // namespace attn
