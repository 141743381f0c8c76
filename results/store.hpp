// Store: the SQLite file every result goes into. One writer, WAL, busy_timeout, prepared statements
// with bound values only. The schema version lives in PRAGMA user_version and is migrated forward
// on open; a database written by a newer attn-bench is refused and left untouched. See
// docs/database.md for the tables.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/process_identity.hpp"
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
struct StoredRun {
  int64_t id = 0;
  std::string uid;  // random, 32 hex digits (schema v3); what merge recognises a run by
  RunRecord record;
  std::optional<std::string> finished_at;  // empty while running
  std::string status;                      // "running" until finish_run
  // The process that began it (schema v5); nullopt for rows written before.
  std::optional<ProcessIdentity> owner;
};

// An A/A check: one case measured twice in one process (attn-bench run --repeat-check).
struct RepeatCheckRecord {
  int64_t run_id = 0;
  int64_t first_measurement_id = 0, second_measurement_id = 0;
  double relative_difference = 0;  // (median_second - median_first) / median_first
  std::string verdict;             // "SAME", "FASTER", "SLOWER" (base/sample_statistics.hpp)
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

// How claim_attempt decides (tuner/tune_sweep.hpp): a case is one (workload, variant, config,
// policy) on any of `device_ids` (the sweep's devices: a result or a claim on any of them counts).
struct ClaimRules {
  std::vector<int64_t> device_ids;
  int quarantine_after = 2;   // finished attempts that crashed or timed out that stop a config
  double stale_seconds = 60;  // a claim whose heartbeat is older than this is abandoned
};

// What claim_attempt found, and did.
struct Claim {
  enum class Kind {
    claimed,      // no result and no live claim: the attempt row is written, the case is ours
    measured,     // a result is stored (by an earlier run, or another tuner just now)
    busy,         // another tuner's live claim: evaluating it now; ask again later
    quarantined,  // the config crashed or timed out quarantine_after times
  };
  Kind kind = Kind::claimed;
  int64_t attempt_id = 0;                        // claimed
  std::optional<StoredMeasurement> measurement;  // measured: the latest result
  int64_t failures = 0;                          // quarantined: how many
  std::optional<ProcessIdentity> holder;         // busy: whose claim (nullopt: rows before v5)
};

// Per config of one (workload, device, variant): finished attempts that came back crashed or
// timed out (the quarantine counts these). An attempt left 'started' by a process that is gone (a
// kill -9 of the tuner) is not the config's fault and is not counted.
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

// How a store is opened. read_only: the file must exist and is never written (opened with
// SQLITE_OPEN_READONLY; in a folder this user cannot write, where SQLite cannot create the -shm
// file of a WAL database, as immutable: StoreOpening::immutable); one at an older schema is copied
// into memory and the copy migrated, so reads see the current schema while the file keeps its
// version. The identity checks (not an SQLite file, another program's, a newer schema) are the
// same either way.
enum class StoreAccess { read_write, read_only };

// What Store found when it opened the file, before any migration.
struct StoreOpening {
  std::string path;
  StoreAccess access = StoreAccess::read_write;
  int file_schema_version = 0;  // PRAGMA user_version as found (0: a new or empty file)
  int64_t application_id = 0;   // as found (0 for a new file; attn-bench's is 0x6174746e)
  std::string journal_mode;     // of the file: "wal", "delete", ... ("memory" for ":memory:")
  bool migrated = false;        // some step was applied (read_only: to the in-memory copy only)
  // read_only: the file was read as immutable (SQLite's immutable=1), without the -shm file a
  // WAL reader needs, because this user cannot create files in its folder. Changes another
  // process makes meanwhile are not seen, nor those still in the file's -wal (unread_wal_bytes).
  bool immutable = false;
  int64_t unread_wal_bytes = 0;  // size of PATH-wal when read as immutable (0: none)
  // read_write: runs left 'running' by a process of this host that is gone, closed as
  // 'interrupted' on this opening.
  int64_t stale_runs_closed = 0;
};

// One row of schema_migrations.
struct MigrationRecord {
  int version = 0;
  std::string description, tool_version, applied_at;
};

// A devices row with its identity and history, its calibrated ceilings and how many measurements
// point at it.
struct StoredDevice {
  int64_t id = 0;
  std::string fingerprint;  // as stored
  DeviceRecord record;
  std::string first_seen_at, last_seen_at;
  DeviceCeilings ceilings;  // latest record of each metric; empty when never calibrated
  int64_t measurements = 0, passed = 0;
};

struct StoredWorkload {
  int64_t id = 0;
  WorkloadRecord record;
  std::string created_at;
  int64_t measurements = 0;
  std::vector<std::string> families;  // of its measurements, sorted
};

struct FamilyCounts {
  std::string family;
  int64_t variants = 0, configs = 0;  // distinct variant names and (variant, config) pairs
  int64_t workloads = 0, devices = 0;
  int64_t measurements = 0, passed = 0;
};

// What `attn-tune db info` prints: every count and every device, run and workload.
struct StoreSummary {
  std::vector<MigrationRecord> migrations;
  StoreCounts counts;
  std::vector<std::pair<std::string, int64_t>> measurements_by_disposition;  // most first
  int64_t unstable = 0;  // passed measurements flagged unstable
  int64_t samples = 0;
  std::vector<std::pair<std::string, int64_t>> measurements_by_policy;  // most first
  int64_t attempts = 0, attempts_started = 0;                           // started: never finished
  int64_t winners = 0, ceilings = 0, repeat_checks = 0;
  std::vector<StoredDevice> devices;
  std::vector<std::pair<StoredRun, int64_t>> runs;  // with the measurements each wrote
  std::vector<StoredWorkload> workloads;
  std::vector<FamilyCounts> families;
};

// A measurement without its samples and details: what export ranks configs by.
struct MeasurementBrief {
  int64_t id = 0;
  std::string uid;
  int64_t run_id = 0, device_id = 0, workload_id = 0;
  std::string family, variant, config_key, config_json, policy;
  Disposition disposition = Disposition::passed;
  bool unstable = false;
  int64_t sample_count = 0;
  std::optional<double> median_us, p10_us, p90_us;  // NULL when not timed
  std::string created_at;
};

class Store {
 public:
  static constexpr int kSchemaVersion = 7;

  // Opens (creating if needed) and migrates. ":memory:" gives a private in-memory database.
  // Throws EnvironmentError if the file's schema is newer than kSchemaVersion or it is not a
  // database; the file is not modified in that case.
  explicit Store(const std::string& path);
  // As above with read_write; read_only never writes the file (StoreAccess) and throws
  // EnvironmentError when it does not exist.
  Store(const std::string& path, StoreAccess access);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  int schema_version() const;
  const StoreOpening& opening() const { return opening_; }
  // The connection, for pragmas a caller needs (tests: max_page_count, query_only).
  Database& database() { return *db_; }

  // Records this process as the run's owner (base/process_identity.hpp).
  int64_t begin_run(const RunRecord& run);
  // status: "completed", "failed_cases", "interrupted", "error: ..."
  void finish_run(int64_t run_id, const std::string& status);
  // Closes as 'interrupted' every run left 'running' whose owner was a process of this host that
  // is gone (killed, crashed, its pid now another process's); finished_at becomes the time of its
  // last record. Done on every read_write opening; returns how many it closed.
  int64_t close_runs_of_gone_processes();
  // What a process about to exit at once (a second Ctrl-C, a fatal signal) does with its runs:
  // from a connection of its own, closes this process's runs still 'running' in the database at
  // `path` with `status`, waiting at most `timeout_ms` for the write lock. Never throws; returns
  // how many it closed (0 when it could not: the next writer closes them as 'interrupted').
  static int64_t close_runs_of_this_process(const std::string& path, const std::string& status,
                                            int timeout_ms) noexcept;
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
  // Claims a case for this process in one write transaction (BEGIN IMMEDIATE), so that tuners on
  // one sweep never evaluate the same case twice: a stored result (any disposition but crashed or
  // timed out) answers it; a quarantined config is refused; an open attempt of another process
  // whose run is 'running', whose heartbeat is at most `stale_seconds` old and whose owner is not
  // known to be gone (base/process_identity.hpp) makes it busy; otherwise the attempt row is
  // written with a fresh heartbeat (an abandoned claim is taken over and stays 'started').
  Claim claim_attempt(const AttemptRecord& attempt, const ClaimRules& rules);
  // Renews the heartbeat of the run's open attempts (AttemptHeartbeat calls it).
  void beat_attempts(int64_t run_id);
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
  // Read-side listings (store_reads.cpp): db info, export, compare and report.
  StoreSummary summary() const;
  std::vector<StoredDevice> devices() const;  // by id
  std::vector<StoredRun> runs() const;        // by id
  std::vector<MigrationRecord> migrations() const;
  std::vector<MeasurementBrief> measurement_briefs(const MeasurementFilter& filter) const;
  std::vector<StoredMeasurement> measurements_of_run(int64_t run_id) const;
  // Single rows by id; nullopt when there is none.
  std::optional<StoredRun> run(int64_t run_id) const;
  std::optional<DeviceRecord> device(int64_t device_id) const;
  std::optional<WorkloadRecord> workload(int64_t workload_id) const;

 private:
  void migrate();

  std::unique_ptr<Database> db_;
  StoreOpening opening_;
};

}  // namespace attn
