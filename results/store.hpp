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

// A device row: its identity, what it is, and when it was first and last upserted.
struct StoredDevice {
  int64_t id = 0;
  std::string fingerprint;
  DeviceRecord record;
  std::string first_seen_at, last_seen_at;
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

// One evaluation the tuner started: written before the evaluation, finished after it. A row left
// 'started' is an evaluation that never came back (the process crashed or was killed).
struct AttemptRecord {
  int64_t run_id = 0, device_id = 0, workload_id = 0;
  std::string variant, config_key, policy, strategy;
  int rung = 0;
  std::string shard = "0/1";  // "i/n"
  std::optional<int64_t> worker_pid;
};

// Per config of one (workload, device, variant): attempts that never came back or came back
// crashed or timed out (the quarantine counts these).
struct AttemptFailures {
  std::string config_key;
  int64_t count = 0;
};

// The config chosen for a scope (a variant, or "*" for all variants of a workload) and the configs
// a statistical test could not tell from it.
struct WinnerRecord {
  int64_t run_id = 0, device_id = 0, workload_id = 0;
  std::string scope;    // variant name, or "*"
  std::string verdict;  // "winner" or "tied"
  std::string variant, config_key;
  int64_t measurement_id = 0;
  double median_us = 0;
  double relative_difference = 0;  // (median - winner's median) / winner's median
};

// Which measurements find_measurements returns; unset fields match everything.
struct MeasurementFilter {
  std::optional<int64_t> workload_id, device_id;
  std::optional<std::string> variant, policy;
  bool passed_only = false;
};

// Rows `merge_from` copied (rows already present are not counted).
struct MergeCounts {
  int64_t runs = 0, devices = 0, workloads = 0, measurements = 0, samples = 0, attempts = 0,
          winners = 0, ceilings = 0, repeat_checks = 0;
};

struct StoreCounts {
  int64_t runs = 0, devices = 0, workloads = 0, measurements = 0;
};

class Store {
 public:
  static constexpr int kSchemaVersion = 3;

  // Opens (creating if needed) and migrates. ":memory:" gives a private in-memory database.
  // Throws EnvironmentError if the file's schema is newer than kSchemaVersion or it is not a
  // database; the file is not modified in that case.
  explicit Store(const std::string& path);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  int schema_version() const;
  // The connection, for pragmas a caller needs (tests: max_page_count, query_only).
  Database& database() { return *db_; }

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

  // The tuner (store_tuning.cpp).
  int64_t begin_attempt(const AttemptRecord& attempt);
  void finish_attempt(int64_t attempt_id, Disposition disposition,
                      std::optional<int64_t> measurement_id, const std::string& note = {});
  // The measurement an attempt produced (with its samples) and the attempt finished with it, in
  // one transaction: a kill at any point leaves both or neither. Returns the measurement's id.
  int64_t finish_attempt_with(int64_t attempt_id, int64_t run_id, int64_t device_id,
                              int64_t workload_id, const Measurement& measurement);
  // Removes an attempt still 'started' that an infrastructure failure (not the config) stopped,
  // so that it does not count towards the config's quarantine.
  void discard_attempt(int64_t attempt_id);
  std::vector<AttemptFailures> attempt_failures(int64_t workload_id, int64_t device_id,
                                                const std::string& variant) const;
  int64_t attempts_of_run(int64_t run_id, const std::string& status) const;
  void add_winners(const std::vector<WinnerRecord>& winners);
  std::vector<WinnerRecord> winners_of_run(int64_t run_id) const;
  std::vector<StoredMeasurement> find_measurements(const MeasurementFilter& filter) const;
  // Passed measurements of a variant on the workload and device given by hash and fingerprint.
  std::vector<StoredMeasurement> measurements_for(const std::string& workload_hash,
                                                  const std::string& device_fingerprint,
                                                  const std::string& variant) const;
  std::optional<int64_t> workload_id(const std::string& hash) const;
  std::optional<int64_t> device_id(const std::string& fingerprint) const;

  // Copies every row of the attn-bench database at `path` that this one lacks (runs and
  // measurements by uid, devices by fingerprint, workloads by hash, the rest by what they point
  // at), in one transaction: merging the same file twice adds nothing the second time.
  // `path` is opened (and migrated) as a Store first, so a newer or foreign file is refused.
  MergeCounts merge_from(const std::string& path);

  StoreCounts counts() const;
  std::vector<StoredMeasurement> measurements_of_run(int64_t run_id) const;
  // Single rows by id; nullopt when there is none.
  std::optional<StoredRun> run(int64_t run_id) const;
  std::optional<DeviceRecord> device(int64_t device_id) const;
  std::optional<WorkloadRecord> workload(int64_t workload_id) const;

  // Read-only listings for attn-tune compare and report (store_queries.cpp), ordered by id.
  std::vector<StoredDevice> devices() const;
  std::vector<StoredRun> runs() const;

 private:
  std::unique_ptr<Database> db_;
};

}  // namespace attn
