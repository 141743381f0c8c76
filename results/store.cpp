#include "results/store.hpp"

#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <thread>

#include "base/build_info.hpp"
#include "base/errors.hpp"
#include "base/process_identity.hpp"
#include "results/sqlite.hpp"
#include "results/store_rows.hpp"

namespace attn {

namespace {

constexpr int kBusyTimeoutMs = 10000;
// PRAGMA application_id of every attn-bench database: "attn" in ASCII. It tells our files from
// other SQLite files that also use user_version.
constexpr int kApplicationId = 0x6174746e;

// Schema v1. Times are ISO 8601 UTC text (utc_timestamp_now()). Statistics are NULL when there
// are no samples, verification columns NULL when the output was not checked. docs/database.md
// describes every column; keep it in step.
constexpr const char* kSchemaV1 = R"sql(
CREATE TABLE schema_migrations (
  version      INTEGER PRIMARY KEY,
  description  TEXT NOT NULL,
  tool_version TEXT NOT NULL,
  applied_at   TEXT NOT NULL
);

CREATE TABLE runs (
  id           INTEGER PRIMARY KEY,
  tool         TEXT NOT NULL,
  tool_version TEXT NOT NULL,
  git_commit   TEXT NOT NULL,
  build_type   TEXT NOT NULL,
  command_line TEXT NOT NULL,
  host         TEXT NOT NULL,
  started_at   TEXT NOT NULL,
  finished_at  TEXT,
  status       TEXT NOT NULL DEFAULT 'running'
);

CREATE TABLE devices (
  id               INTEGER PRIMARY KEY,
  fingerprint      TEXT NOT NULL UNIQUE,
  kind             TEXT NOT NULL CHECK (kind IN ('gpu', 'cpu')),
  name             TEXT NOT NULL,
  uuid             TEXT NOT NULL,
  cc_major         INTEGER NOT NULL,
  cc_minor         INTEGER NOT NULL,
  sm_count         INTEGER NOT NULL,
  memory_bytes     INTEGER NOT NULL,
  l2_bytes         INTEGER NOT NULL,
  sm_clock_khz     INTEGER NOT NULL,
  memory_clock_khz INTEGER NOT NULL,
  memory_bus_bits  INTEGER NOT NULL,
  driver_version   TEXT NOT NULL,
  cuda_version     TEXT NOT NULL,
  nvrtc_version    TEXT NOT NULL,
  first_seen_at    TEXT NOT NULL,
  last_seen_at     TEXT NOT NULL
);

CREATE TABLE workloads (
  id             INTEGER PRIMARY KEY,
  hash           TEXT NOT NULL UNIQUE,
  name           TEXT NOT NULL,
  canonical_json TEXT NOT NULL,
  created_at     TEXT NOT NULL
);

CREATE TABLE measurements (
  id            INTEGER PRIMARY KEY,
  run_id        INTEGER NOT NULL REFERENCES runs (id),
  device_id     INTEGER NOT NULL REFERENCES devices (id),
  workload_id   INTEGER NOT NULL REFERENCES workloads (id),
  family        TEXT NOT NULL,
  variant       TEXT NOT NULL,
  config_key    TEXT NOT NULL,
  config_json   TEXT NOT NULL,
  backend       TEXT NOT NULL,
  disposition   TEXT NOT NULL CHECK (disposition IN ('passed', 'incorrect', 'unsupported',
                  'compile_failed', 'launch_failed', 'crashed', 'timed_out')),
  reason        TEXT NOT NULL,
  policy        TEXT NOT NULL,
  sample_count  INTEGER NOT NULL CHECK (sample_count >= 0),
  median_us     REAL,
  mean_us       REAL,
  stddev_us     REAL,
  min_us        REAL,
  max_us        REAL,
  p10_us        REAL,
  p90_us        REAL,
  bytes         REAL NOT NULL,
  flops         REAL NOT NULL,
  gbps          REAL,
  tflops        REAL,
  verified      INTEGER NOT NULL CHECK (verified IN (0, 1)),
  max_abs_error REAL,
  rel_l2_error  REAL,
  nonfinite     INTEGER,
  elements      INTEGER,
  tolerance     REAL,
  reference     TEXT,
  created_at    TEXT NOT NULL
);
CREATE INDEX measurements_by_run ON measurements (run_id);
CREATE INDEX measurements_by_variant_config ON measurements (variant, config_key);
CREATE INDEX measurements_by_workload ON measurements (workload_id);
CREATE INDEX measurements_by_device ON measurements (device_id);

CREATE TABLE samples (
  measurement_id INTEGER NOT NULL REFERENCES measurements (id) ON DELETE CASCADE,
  idx            INTEGER NOT NULL CHECK (idx >= 0),
  time_us        REAL NOT NULL,
  PRIMARY KEY (measurement_id, idx)
) WITHOUT ROWID;

PRAGMA application_id = 1635021934;
)sql";
static_assert(kApplicationId == 1635021934, "kSchemaV1 writes kApplicationId as a literal");

// Schema v2 (attn-bench calibrate and the measurement core, issue 4): how each measurement was
// timed (timer, stop reason, noise, warm-up, discarded samples), the clocks and temperature it was
// taken at, a stability flag, the ceiling it is set against; per-sample SM clock and discard flag;
// the device ceilings; and the A/A repeat checks. Columns added to v1 tables are nullable (or
// default), so rows written by v1 stay valid and read back with those fields empty.
constexpr const char* kSchemaV2 = R"sql(
ALTER TABLE measurements ADD COLUMN timer TEXT;
ALTER TABLE measurements ADD COLUMN launches_per_sample INTEGER;
ALTER TABLE measurements ADD COLUMN stop_reason TEXT;
ALTER TABLE measurements ADD COLUMN noise REAL;
ALTER TABLE measurements ADD COLUMN noise_target REAL;
ALTER TABLE measurements ADD COLUMN warmup_samples INTEGER;
ALTER TABLE measurements ADD COLUMN discarded_samples INTEGER;
ALTER TABLE measurements ADD COLUMN outliers INTEGER;
ALTER TABLE measurements ADD COLUMN unstable INTEGER NOT NULL DEFAULT 0 CHECK (unstable IN (0, 1));
ALTER TABLE measurements ADD COLUMN unstable_reason TEXT NOT NULL DEFAULT '';
ALTER TABLE measurements ADD COLUMN expected_clock_mhz REAL;
ALTER TABLE measurements ADD COLUMN median_clock_mhz REAL;
ALTER TABLE measurements ADD COLUMN min_clock_mhz REAL;
ALTER TABLE measurements ADD COLUMN max_clock_mhz REAL;
ALTER TABLE measurements ADD COLUMN temperature_start_c REAL;
ALTER TABLE measurements ADD COLUMN temperature_end_c REAL;
ALTER TABLE measurements ADD COLUMN nvml_sm_clock_mhz REAL;
ALTER TABLE measurements ADD COLUMN clock_event_reasons INTEGER;
ALTER TABLE measurements ADD COLUMN ceiling TEXT;
ALTER TABLE measurements ADD COLUMN ceiling_fraction REAL;

ALTER TABLE samples ADD COLUMN sm_clock_mhz REAL;
ALTER TABLE samples ADD COLUMN discarded INTEGER NOT NULL DEFAULT 0 CHECK (discarded IN (0, 1));

CREATE TABLE ceilings (
  id                 INTEGER PRIMARY KEY,
  device_fingerprint TEXT NOT NULL REFERENCES devices (fingerprint),
  metric             TEXT NOT NULL CHECK (metric IN ('read_gbps', 'copy_gbps', 'memcpy_gbps',
                       'bf16_tflops')),
  value              REAL NOT NULL CHECK (value > 0),
  method             TEXT NOT NULL,
  sample_count       INTEGER NOT NULL CHECK (sample_count >= 0),
  noise              REAL NOT NULL,
  unstable           INTEGER NOT NULL CHECK (unstable IN (0, 1)),
  tool_version       TEXT NOT NULL,
  git_commit         TEXT NOT NULL,
  measured_at        TEXT NOT NULL
);
CREATE INDEX ceilings_by_device ON ceilings (device_fingerprint, metric, measured_at);

CREATE TABLE repeat_checks (
  id                    INTEGER PRIMARY KEY,
  run_id                INTEGER NOT NULL REFERENCES runs (id),
  first_measurement_id  INTEGER NOT NULL REFERENCES measurements (id),
  second_measurement_id INTEGER NOT NULL REFERENCES measurements (id),
  relative_difference   REAL NOT NULL,
  verdict               TEXT NOT NULL CHECK (verdict IN ('SAME', 'FASTER', 'SLOWER')),
  created_at            TEXT NOT NULL
);
CREATE INDEX repeat_checks_by_run ON repeat_checks (run_id);
)sql";

// Schema v3 (attn-tune, issue 9): a random uid on runs and measurements, so that `attn-tune merge`
// recognises a row it already copied (ids differ between files); the attempts the tuner writes
// before each evaluation (a row left 'started' is an evaluation that never came back: a crash or a
// kill -9); the winners it chose, with the configs tied with them. Existing rows get fresh uids.
constexpr const char* kSchemaV3 = R"sql(
ALTER TABLE runs ADD COLUMN uid TEXT;
UPDATE runs SET uid = lower(hex(randomblob(16)));
CREATE UNIQUE INDEX runs_by_uid ON runs (uid);
ALTER TABLE measurements ADD COLUMN uid TEXT;
UPDATE measurements SET uid = lower(hex(randomblob(16)));
CREATE UNIQUE INDEX measurements_by_uid ON measurements (uid);
CREATE INDEX measurements_by_case ON measurements (workload_id, device_id, variant, config_key);

CREATE TABLE attempts (
  id             INTEGER PRIMARY KEY,
  uid            TEXT NOT NULL UNIQUE,
  run_id         INTEGER NOT NULL REFERENCES runs (id),
  device_id      INTEGER NOT NULL REFERENCES devices (id),
  workload_id    INTEGER NOT NULL REFERENCES workloads (id),
  variant        TEXT NOT NULL,
  config_key     TEXT NOT NULL,
  policy         TEXT NOT NULL,
  strategy       TEXT NOT NULL,
  rung           INTEGER NOT NULL CHECK (rung >= 0),
  shard          TEXT NOT NULL,
  worker_pid     INTEGER,
  status         TEXT NOT NULL CHECK (status IN ('started', 'finished')),
  disposition    TEXT CHECK (disposition IS NULL OR disposition IN ('passed', 'incorrect',
                   'unsupported', 'compile_failed', 'launch_failed', 'crashed', 'timed_out')),
  measurement_id INTEGER REFERENCES measurements (id),
  note           TEXT NOT NULL DEFAULT '',
  started_at     TEXT NOT NULL,
  finished_at    TEXT
);
CREATE INDEX attempts_by_case ON attempts (workload_id, device_id, variant, config_key);
CREATE INDEX attempts_by_run ON attempts (run_id);

CREATE TABLE winners (
  id                  INTEGER PRIMARY KEY,
  run_id              INTEGER NOT NULL REFERENCES runs (id),
  device_id           INTEGER NOT NULL REFERENCES devices (id),
  workload_id         INTEGER NOT NULL REFERENCES workloads (id),
  scope               TEXT NOT NULL,
  verdict             TEXT NOT NULL CHECK (verdict IN ('winner', 'tied')),
  variant             TEXT NOT NULL,
  config_key          TEXT NOT NULL,
  measurement_id      INTEGER NOT NULL REFERENCES measurements (id),
  median_us           REAL NOT NULL,
  relative_difference REAL NOT NULL,
  created_at          TEXT NOT NULL
);
CREATE INDEX winners_by_run ON winners (run_id);
)sql";

// Schema v4: devices.driver_version held the CUDA version the driver supports ("13.0", from
// cuDriverGetVersion), not the driver. That column becomes cuda_driver_version, and
// driver_version holds the NVIDIA driver's own version ("580.159.04", from NVML), '' where it is
// unknown: every row written before v4. Fingerprints do not change: one whose driver is unknown
// hashes as before (DeviceRecord::fingerprint).
constexpr const char* kSchemaV4 = R"sql(
ALTER TABLE devices RENAME COLUMN driver_version TO cuda_driver_version;
ALTER TABLE devices ADD COLUMN driver_version TEXT NOT NULL DEFAULT '';
)sql";

// Schema v5 (reliability of processes and records): which process owns a run (host, pid and the
// process's start time, base/process_identity.hpp), so that the next process that opens the file
// for writing closes as 'interrupted' a run left 'running' by a process that is gone; and the
// heartbeat of an attempt, which its tuner renews while it evaluates, so that another tuner on the
// same sweep can tell a claim on a config that is being worked on from one that was abandoned.
// Rows written before have no owner and no heartbeat (NULL): their runs are never closed this way.
constexpr const char* kSchemaV5 = R"sql(
ALTER TABLE runs ADD COLUMN owner_host TEXT;
ALTER TABLE runs ADD COLUMN owner_pid INTEGER;
ALTER TABLE runs ADD COLUMN owner_start TEXT;
ALTER TABLE attempts ADD COLUMN heartbeat_at TEXT;
)sql";

// Schema v6 (bytes users can trust): the unique minimum traffic of a measurement (rows of pages
// shared through a common prefix once; `bytes` stays the logical minimum), and the SM clock each
// ceiling was measured at, so that a compute ceiling can be set against a kernel at the clock the
// kernel ran at. Both nullable: rows written before read back as not known.
constexpr const char* kSchemaV6 = R"sql(
ALTER TABLE measurements ADD COLUMN unique_bytes REAL;
ALTER TABLE ceilings ADD COLUMN sm_clock_mhz REAL CHECK (sm_clock_mhz IS NULL OR sm_clock_mhz > 0);
)sql";

// Schema v7 (a planner instead of fixed defaults): what a variant's planner chose for the batch
// beyond its config (the work's split over CTAs). Rows written before have none ('').
constexpr const char* kSchemaV7 = R"sql(
ALTER TABLE measurements ADD COLUMN plan TEXT NOT NULL DEFAULT '';
)sql";

// Each step takes the database from version - 1 to version, in one transaction that also sets
// PRAGMA user_version. Steps are only ever appended; a released step is never edited. A column
// added to `measurements` is also a row of the field table (results/measurement_fields.cpp), which
// generates its INSERT, SELECT and JSON: docs/database.md, "Adding a column to measurements".
struct Migration {
  int version;
  const char* description;
  const char* sql;
};
constexpr Migration kMigrations[] = {
    {1, "create runs, devices, workloads, measurements, samples", kSchemaV1},
    {2,
     "timing details, clocks, stability and ceiling fraction of measurements; sample clocks; "
     "ceilings; repeat_checks",
     kSchemaV2},
    {3, "uids of runs and measurements; attempts; winners", kSchemaV3},
    {4,
     "the NVIDIA driver version of devices (driver_version), the CUDA version it supports "
     "(cuda_driver_version, the old driver_version)",
     kSchemaV4},
    {5, "owner process (host, pid, start time) of runs; heartbeat of attempts", kSchemaV5},
    {6, "unique minimum bytes of measurements; SM clock of ceilings", kSchemaV6},
    {7, "the planner's choices of measurements (plan)", kSchemaV7},
};
static_assert(sizeof(kMigrations) / sizeof(kMigrations[0]) == Store::kSchemaVersion,
              "one migration per schema version; the last one is Store::kSchemaVersion");

int64_t read_pragma_int(Database& db, const char* pragma) {
  Statement s(db, std::string("PRAGMA ") + pragma);
  ATTN_ASSERT(s.step(), std::string("PRAGMA ") + pragma + " returned no row");
  return s.column_int64(0);
}

int read_user_version(Database& db) {
  return int(read_pragma_int(db, "user_version"));
}

// Switches the file to WAL (persistent in the file; a no-op once it is). Two processes opening a
// new file at once race here: the switch needs an exclusive lock, and SQLite answers SQLITE_BUSY
// at once instead of calling the busy handler, so retry for as long as the busy timeout.
std::string enable_wal(Database& db) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(kBusyTimeoutMs);
  for (;;) {
    try {
      Statement s(db, "PRAGMA journal_mode = WAL");
      return s.step() ? s.column_text(0) : std::string();
    } catch (const CallError& e) {
      if ((e.status() & 0xff) != SQLITE_BUSY || std::chrono::steady_clock::now() >= until) throw;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// "file:///abs/path?immutable=1": `path` made absolute, every byte but the unreserved ones and
// '/' percent-encoded (a '?', '#' or '%' in a file name must not end the path).
std::string immutable_uri(const std::string& path) {
  std::error_code error;
  std::string absolute = std::filesystem::absolute(path, error).string();
  if (error) absolute = path;
  static const char* const kHex = "0123456789ABCDEF";
  std::string uri = "file://";
  for (const char c : absolute) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '/' || c == '.' || c == '_' || c == '-' || c == '~') {
      uri += c;
    } else {
      uri += '%';
      uri += kHex[u >> 4];
      uri += kHex[u & 15];
    }
  }
  return uri + "?immutable=1";
}

}  // namespace

Store::Store(const std::string& path) : Store(path, StoreAccess::read_write) {}

Store::Store(const std::string& path, StoreAccess access) {
  if (path.empty()) throw UsageError("the results database path is empty");
  const bool in_memory = path == ":memory:";
  const bool read_only = access == StoreAccess::read_only;
  opening_.path = path;
  opening_.access = access;
  const auto open = [&](const std::string& name, int flags) {
    try {
      db_ = std::make_unique<Database>(name, flags);
    } catch (const CallError& e) {
      throw EnvironmentError("cannot open the results database '" + path + "': " + e.what());
    }
    db_->busy_timeout(kBusyTimeoutMs);
  };
  open(path, read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);

  // Identify the file with reads only: nothing below writes until we know it is ours and not
  // newer than this binary, so a refused file is left exactly as it was.
  int version = 0;
  int64_t application_id = 0, schema_objects = 0;
  // One read transaction, so that the three agree: another process may be creating this file
  // right now, and between separate reads it could commit its first migration (tables,
  // application_id and user_version at once), which would look like another program's file.
  const auto identify = [&] {
    try {
      db_->exec("BEGIN");
      version = read_user_version(*db_);
      application_id = read_pragma_int(*db_, "application_id");
      Statement s(*db_, "SELECT count(*) FROM sqlite_master");
      ATTN_ASSERT(s.step(), "count(*) returned no row");
      schema_objects = s.column_int64(0);
      s.reset();
      db_->exec("COMMIT");
    } catch (const CallError&) {
      if (db_->in_transaction()) {
        sqlite3_exec(db_->handle(), "ROLLBACK", nullptr, nullptr, nullptr);
      }
      throw;
    }
  };
  try {
    try {
      identify();
    } catch (const CallError& e) {
      // A reader of a WAL database needs its -shm file (and SQLite a hot journal's folder). In a
      // folder this user cannot write SQLite cannot create it, and answers READONLY (or
      // CANTOPEN) to the first read. Read the file as immutable then: no side file, no lock.
      const int code = e.status() & 0xff;
      if (!read_only || in_memory || (code != SQLITE_READONLY && code != SQLITE_CANTOPEN)) throw;
      db_.reset();
      open(immutable_uri(path), SQLITE_OPEN_READONLY | SQLITE_OPEN_URI);
      opening_.immutable = true;
      std::error_code error;
      const auto wal_bytes = std::filesystem::file_size(path + "-wal", error);
      opening_.unread_wal_bytes = error ? 0 : int64_t(wal_bytes);
      identify();
    }
  } catch (const CallError& e) {
    if ((e.status() & 0xff) == SQLITE_NOTADB) {
      throw EnvironmentError("'" + path +
                             "' is not an attn-bench database: it is not an SQLite file. It was "
                             "left untouched; pass another --db.");
    }
    throw EnvironmentError("cannot read the results database '" + path + "': " + e.what());
  }
  const std::string not_ours =
      "'" + path + "' is not an attn-bench database: it is an SQLite file of another program " +
      "(application_id " + std::to_string(application_id) + ", user_version " +
      std::to_string(version) + "). It was left untouched; pass another --db.";
  if (application_id != 0 && application_id != kApplicationId) throw EnvironmentError(not_ours);
  if (version > kSchemaVersion) {
    throw EnvironmentError("'" + path +
                           "' was written by a newer attn-bench: its schema version is " +
                           std::to_string(version) + ", this attn-bench knows versions up to " +
                           std::to_string(kSchemaVersion) +
                           ". It was left untouched; use a newer attn-bench to read it.");
  }
  if (application_id == 0 && (version != 0 || schema_objects != 0)) {
    throw EnvironmentError(not_ours);
  }
  opening_.file_schema_version = version;
  opening_.application_id = application_id;

  if (read_only) {
    if (opening_.immutable) {
      // An immutable connection reports "delete" whatever the file is; its header says: bytes 18
      // and 19 (the file format's write and read versions) are 2 in WAL mode, 1 otherwise.
      std::ifstream file(path, std::ios::binary);
      char header[20] = {};
      file.read(header, sizeof header);
      opening_.journal_mode = file && header[18] == 2 ? "wal" : "delete";
    } else {
      Statement s(*db_, "PRAGMA journal_mode");
      if (s.step()) opening_.journal_mode = s.column_text(0);
    }
    if (version < kSchemaVersion) {
      // Migrate a copy: the file keeps its version and bytes.
      auto copy = std::make_unique<Database>(":memory:", SQLITE_OPEN_READWRITE);
      copy_database(*db_, *copy);
      db_ = std::move(copy);
    }
    db_->exec("PRAGMA foreign_keys = ON");
    migrate();
    db_->exec("PRAGMA query_only = ON");  // what a caller does with database() cannot write
    return;
  }

  if (!in_memory) {
    // A damaged file is refused before anything is written to it (enable_wal below rewrites the
    // header of a file in rollback mode): a write into a file whose b-trees are broken can lose
    // the rows that are still readable. The file is left byte for byte as it was.
    const std::vector<std::string> damage = integrity_problems(*db_, /*quick=*/true, 3);
    if (!damage.empty()) {
      // SQLite's report, on one line and short: `db check` lists it in full.
      std::string found;
      for (const std::string& line : damage) found += (found.empty() ? "" : "; ") + line;
      for (char& c : found) c = c == '\n' ? ';' : c;
      if (found.size() > 300) found = found.substr(0, 300) + "...";
      throw EnvironmentError("'" + path + "' is damaged: SQLite's quick_check reports: " + found +
                             ". It was left untouched; `attn-tune db check --db " + path +
                             "` lists the damage. Restore it from a copy, or pass another --db "
                             "(`sqlite3 FILE .recover` may save what is readable).");
    }
    // WAL: readers (compare, report) never block the one writer. The mode is persistent in the
    // file. A file system without shared memory keeps the rollback journal, which still works.
    opening_.journal_mode = enable_wal(*db_);
  } else {
    opening_.journal_mode = "memory";
  }
  db_->exec("PRAGMA foreign_keys = ON");
  db_->exec("PRAGMA synchronous = NORMAL");
  migrate();
  opening_.stale_runs_closed = close_runs_of_gone_processes();
}

void Store::migrate() {
  for (const Migration& migration : kMigrations) {
    if (read_user_version(*db_) >= migration.version) continue;
    Transaction transaction(*db_);
    // Re-read under the write lock: another process may have migrated since we looked.
    const int current = read_user_version(*db_);
    if (current >= migration.version) continue;
    ATTN_ASSERT(current == migration.version - 1, "migrations must be applied in order");
    db_->exec(migration.sql);
    Statement record(*db_,
                     "INSERT INTO schema_migrations (version, description, tool_version, "
                     "applied_at) VALUES (?, ?, ?, ?)");
    record.bind(1, migration.version)
        .bind(2, migration.description)
        .bind(3, tool_version())
        .bind(4, utc_timestamp_now());
    record.run();
    // PRAGMA takes no bound parameters; the number comes from kMigrations, never from input.
    db_->exec(("PRAGMA user_version = " + std::to_string(migration.version)).c_str());
    transaction.commit();
    opening_.migrated = true;
  }
}

Store::~Store() = default;

int Store::schema_version() const {
  return read_user_version(*db_);
}

int64_t Store::begin_run(const RunRecord& run) {
  const std::string started_at = run.started_at.empty() ? utc_timestamp_now() : run.started_at;
  ATTN_ASSERT(
      is_utc_timestamp(started_at),
      "RunRecord::started_at must be ISO 8601 UTC (utc_timestamp_now()), got '" + started_at + "'");
  const ProcessIdentity owner = this_process();
  Statement s(*db_, R"sql(
    INSERT INTO runs (tool, tool_version, git_commit, build_type, command_line, host, started_at,
                      status, uid, owner_host, owner_pid, owner_start)
    VALUES (:tool, :tool_version, :git_commit, :build_type, :command_line, :host, :started_at,
            'running', lower(hex(randomblob(16))), :owner_host, :owner_pid, :owner_start))sql");
  s.bind(":tool", run.tool)
      .bind(":tool_version", run.tool_version)
      .bind(":git_commit", run.git_commit)
      .bind(":build_type", run.build_type)
      .bind(":command_line", run.command_line)
      .bind(":host", run.host)
      .bind(":started_at", started_at)
      .bind(":owner_host", owner.host)
      .bind(":owner_pid", owner.pid)
      .bind(":owner_start", owner.start);
  s.run();
  return db_->last_insert_rowid();
}

namespace {

// A closed run's finished_at when its process is gone: the time of its last record (its start,
// an attempt begun, finished or beating, a measurement), not the time someone noticed.
constexpr const char* kLastSignOfLife = R"sql(
  max(started_at,
      coalesce((SELECT max(max(a.started_at, coalesce(a.finished_at, ''),
                               coalesce(a.heartbeat_at, '')))
                FROM attempts a WHERE a.run_id = runs.id), ''),
      coalesce((SELECT max(m.created_at) FROM measurements m WHERE m.run_id = runs.id), '')))sql";

}  // namespace

int64_t Store::close_runs_of_gone_processes() {
  // Reads first, and takes the write lock only when some run's process is gone.
  std::vector<int64_t> gone;
  {
    Statement s(*db_, R"sql(
      SELECT id, owner_host, owner_pid, coalesce(owner_start, '') FROM runs
      WHERE status = 'running' AND owner_pid IS NOT NULL AND owner_host = ?)sql");
    s.bind(1, this_host_name());
    while (s.step()) {
      const ProcessIdentity owner{s.column_text(1), s.column_int64(2), s.column_text(3)};
      if (owner_state(owner) == OwnerState::gone) gone.push_back(s.column_int64(0));
    }
  }
  if (gone.empty()) return 0;
  Transaction transaction(*db_);
  Statement close(*db_, std::string("UPDATE runs SET status = 'interrupted', finished_at = ") +
                            kLastSignOfLife + " WHERE id = ? AND status = 'running'");
  int64_t closed = 0;
  for (int64_t id : gone) {
    close.bind(1, id);
    close.run();
    closed += db_->changes();
    close.reset();
  }
  transaction.commit();
  return closed;
}

int64_t Store::close_runs_of_this_process(const std::string& path, const std::string& status,
                                          int timeout_ms) noexcept {
  try {
    const ProcessIdentity me = this_process();
    Database db(path, SQLITE_OPEN_READWRITE);
    db.busy_timeout(timeout_ms);
    Statement s(db, R"sql(
      UPDATE runs SET status = ?, finished_at = ?
      WHERE status = 'running' AND owner_host = ? AND owner_pid = ? AND owner_start = ?)sql");
    s.bind(1, status).bind(2, utc_timestamp_now()).bind(3, me.host).bind(4, me.pid);
    s.bind(5, me.start);
    s.run();
    return db.changes();
  } catch (...) {  // a database that cannot take it now is closed by the next writer instead
    return 0;
  }
}

void Store::finish_run(int64_t run_id, const std::string& status) {
  Statement s(*db_, "UPDATE runs SET finished_at = ?, status = ? WHERE id = ?");
  s.bind(1, utc_timestamp_now()).bind(2, status).bind(3, run_id);
  s.run();
  ATTN_ASSERT(db_->changes() == 1, "finish_run: no run with id " + std::to_string(run_id));
}

int64_t Store::upsert_device(const DeviceRecord& device) {
  // The fingerprint holds the identity; clocks, L2 and bus width are refreshed on every upsert.
  Statement s(*db_, R"sql(
    INSERT INTO devices (fingerprint, kind, name, uuid, cc_major, cc_minor, sm_count, memory_bytes,
                         l2_bytes, sm_clock_khz, memory_clock_khz, memory_bus_bits, driver_version,
                         cuda_driver_version, cuda_version, nvrtc_version, first_seen_at,
                         last_seen_at)
    VALUES (:fingerprint, :kind, :name, :uuid, :cc_major, :cc_minor, :sm_count, :memory_bytes,
            :l2_bytes, :sm_clock_khz, :memory_clock_khz, :memory_bus_bits, :driver_version,
            :cuda_driver_version, :cuda_version, :nvrtc_version, :now, :now)
    ON CONFLICT (fingerprint) DO UPDATE SET
      l2_bytes = excluded.l2_bytes,
      sm_clock_khz = excluded.sm_clock_khz,
      memory_clock_khz = excluded.memory_clock_khz,
      memory_bus_bits = excluded.memory_bus_bits,
      last_seen_at = excluded.last_seen_at
    RETURNING id)sql");
  s.bind(":fingerprint", device.fingerprint())
      .bind(":kind", device.kind)
      .bind(":name", device.name)
      .bind(":uuid", device.uuid)
      .bind(":cc_major", device.cc_major)
      .bind(":cc_minor", device.cc_minor)
      .bind(":sm_count", device.sm_count)
      .bind(":memory_bytes", device.memory_bytes)
      .bind(":l2_bytes", device.l2_bytes)
      .bind(":sm_clock_khz", device.sm_clock_khz)
      .bind(":memory_clock_khz", device.memory_clock_khz)
      .bind(":memory_bus_bits", device.memory_bus_bits)
      .bind(":driver_version", device.driver_version)
      .bind(":cuda_driver_version", device.cuda_driver_version)
      .bind(":cuda_version", device.cuda_version)
      .bind(":nvrtc_version", device.nvrtc_version)
      .bind(":now", utc_timestamp_now());
  ATTN_ASSERT(s.step(), "INSERT ... RETURNING id returned no row");
  const int64_t id = s.column_int64(0);
  ATTN_ASSERT(!s.step(), "INSERT ... RETURNING id returned more than one row");
  return id;
}

int64_t Store::upsert_workload(const WorkloadRecord& workload) {
  ATTN_ASSERT(!workload.hash.empty(), "WorkloadRecord::hash is empty");
  Statement insert(*db_, R"sql(
    INSERT INTO workloads (hash, name, canonical_json, created_at) VALUES (?, ?, ?, ?)
    ON CONFLICT (hash) DO NOTHING)sql");
  insert.bind(1, workload.hash)
      .bind(2, workload.name)
      .bind(3, workload.canonical_json)
      .bind(4, utc_timestamp_now());
  insert.run();
  Statement select(*db_, "SELECT id, canonical_json FROM workloads WHERE hash = ?");
  select.bind(1, workload.hash);
  ATTN_ASSERT(select.step(), "workload row missing right after its insert");
  // The hash is of the canonical JSON, so one hash with two texts is a bug in whoever hashed.
  ATTN_ASSERT(select.column_text(1) == workload.canonical_json,
              "workload hash " + workload.hash + " is already stored with another canonical JSON");
  return select.column_int64(0);
}

int64_t Store::add_measurement(int64_t run_id, int64_t device_id, int64_t workload_id,
                               const Measurement& m) {
  Transaction transaction(*db_);
  Statement insert(*db_, measurement_insert_sql());
  insert.bind(":run_id", run_id)
      .bind(":device_id", device_id)
      .bind(":workload_id", workload_id)
      .bind(":created_at", utc_timestamp_now());
  bind_measurement(insert, m);
  insert.run();
  const int64_t id = db_->last_insert_rowid();

  ATTN_ASSERT(m.sample_clock_mhz.empty() || m.sample_clock_mhz.size() == m.samples_us.size(),
              "sample_clock_mhz must be empty or hold one reading per sample");
  ATTN_ASSERT(m.sample_discarded.empty() || m.sample_discarded.size() == m.samples_us.size(),
              "sample_discarded must be empty or hold one flag per sample");
  Statement sample(*db_,
                   "INSERT INTO samples (measurement_id, idx, time_us, sm_clock_mhz, discarded) "
                   "VALUES (?, ?, ?, ?, ?)");
  for (size_t i = 0; i < m.samples_us.size(); ++i) {
    const double mhz = m.sample_clock_mhz.empty() ? 0 : m.sample_clock_mhz[i];
    const bool discarded = !m.sample_discarded.empty() && m.sample_discarded[i];
    sample.bind(1, id)
        .bind(2, int64_t(i))
        .bind(3, m.samples_us[i])
        .bind(4, mhz > 0 ? std::optional<double>(mhz) : std::nullopt)
        .bind(5, int64_t(discarded ? 1 : 0));
    sample.run();
    sample.reset();
  }
  transaction.commit();
  return id;
}

int64_t Store::add_ceiling(const std::string& device_fingerprint, const CeilingRecord& c) {
  const std::string measured_at = c.measured_at.empty() ? utc_timestamp_now() : c.measured_at;
  ATTN_ASSERT(is_utc_timestamp(measured_at), "CeilingRecord::measured_at must be ISO 8601 UTC");
  Statement s(*db_, R"sql(
    INSERT INTO ceilings (device_fingerprint, metric, value, method, sample_count, noise, unstable,
                          tool_version, git_commit, measured_at, sm_clock_mhz)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?))sql");
  s.bind(1, device_fingerprint)
      .bind(2, c.metric)
      .bind(3, c.value)
      .bind(4, c.method)
      .bind(5, c.sample_count)
      .bind(6, c.noise)
      .bind(7, int64_t(c.unstable ? 1 : 0))
      .bind(8, c.tool_version)
      .bind(9, c.git_commit)
      .bind(10, measured_at)
      .bind(11, c.sm_clock_mhz && *c.sm_clock_mhz > 0 ? c.sm_clock_mhz : std::nullopt);
  s.run();
  return db_->last_insert_rowid();
}

DeviceCeilings Store::ceilings(const std::string& device_fingerprint) const {
  // Timestamps sort in time order; the id breaks ties within one millisecond.
  Statement s(*db_, R"sql(
    SELECT metric, value, method, sample_count, noise, unstable, tool_version, git_commit,
           measured_at, sm_clock_mhz
    FROM ceilings WHERE device_fingerprint = ? ORDER BY measured_at, id)sql");
  s.bind(1, device_fingerprint);
  DeviceCeilings out;
  while (s.step()) {
    CeilingRecord c;
    int i = 0;
    c.metric = s.column_text(i++);
    c.value = s.column_double(i++);
    c.method = s.column_text(i++);
    c.sample_count = s.column_int64(i++);
    c.noise = s.column_double(i++);
    c.unstable = s.column_int64(i++) != 0;
    c.tool_version = s.column_text(i++);
    c.git_commit = s.column_text(i++);
    c.measured_at = s.column_text(i++);
    c.sm_clock_mhz = s.column_optional_double(i++);
    out.by_metric[c.metric] = c;  // later rows replace earlier ones
  }
  return out;
}

int64_t Store::add_repeat_check(const RepeatCheckRecord& check) {
  Statement s(*db_, R"sql(
    INSERT INTO repeat_checks (run_id, first_measurement_id, second_measurement_id,
                               relative_difference, verdict, created_at)
    VALUES (?, ?, ?, ?, ?, ?))sql");
  s.bind(1, check.run_id)
      .bind(2, check.first_measurement_id)
      .bind(3, check.second_measurement_id)
      .bind(4, check.relative_difference)
      .bind(5, check.verdict)
      .bind(6, utc_timestamp_now());
  s.run();
  return db_->last_insert_rowid();
}

std::vector<RepeatCheckRecord> Store::repeat_checks_of_run(int64_t run_id) const {
  Statement s(*db_, R"sql(
    SELECT first_measurement_id, second_measurement_id, relative_difference, verdict
    FROM repeat_checks WHERE run_id = ? ORDER BY id)sql");
  s.bind(1, run_id);
  std::vector<RepeatCheckRecord> out;
  while (s.step()) {
    RepeatCheckRecord r;
    r.run_id = run_id;
    r.first_measurement_id = s.column_int64(0);
    r.second_measurement_id = s.column_int64(1);
    r.relative_difference = s.column_double(2);
    r.verdict = s.column_text(3);
    out.push_back(r);
  }
  return out;
}

StoreCounts Store::counts() const {
  Statement s(*db_,
              "SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM devices), "
              "(SELECT count(*) FROM workloads), (SELECT count(*) FROM measurements)");
  ATTN_ASSERT(s.step(), "count(*) returned no row");
  StoreCounts c;
  c.runs = s.column_int64(0);
  c.devices = s.column_int64(1);
  c.workloads = s.column_int64(2);
  c.measurements = s.column_int64(3);
  return c;
}

std::vector<StoredMeasurement> Store::measurements_of_run(int64_t run_id) const {
  Statement s(*db_, measurement_select_sql() + " WHERE run_id = ? ORDER BY id");
  s.bind(1, run_id);
  return read_measurements(*db_, s);
}

std::optional<StoredRun> Store::run(int64_t run_id) const {
  Statement s(*db_, R"sql(
    SELECT tool, tool_version, git_commit, build_type, command_line, host, started_at,
           finished_at, status, uid, owner_host, owner_pid, owner_start
    FROM runs WHERE id = ?)sql");
  s.bind(1, run_id);
  if (!s.step()) return std::nullopt;
  StoredRun run;
  run.id = run_id;
  int c = 0;
  run.uid = s.column_optional_text(9).value_or("");
  run.record.tool = s.column_text(c++);
  run.record.tool_version = s.column_text(c++);
  run.record.git_commit = s.column_text(c++);
  run.record.build_type = s.column_text(c++);
  run.record.command_line = s.column_text(c++);
  run.record.host = s.column_text(c++);
  run.record.started_at = s.column_text(c++);
  run.finished_at = s.column_optional_text(c++);
  run.status = s.column_text(c++);
  if (const std::optional<int64_t> pid = s.column_optional_int64(11)) {
    run.owner = ProcessIdentity{s.column_optional_text(10).value_or(""), *pid,
                                s.column_optional_text(12).value_or("")};
  }
  return run;
}

std::optional<DeviceRecord> Store::device(int64_t device_id) const {
  Statement s(*db_, R"sql(
    SELECT kind, name, uuid, cc_major, cc_minor, sm_count, memory_bytes, l2_bytes, sm_clock_khz,
           memory_clock_khz, memory_bus_bits, driver_version, cuda_driver_version, cuda_version,
           nvrtc_version
    FROM devices WHERE id = ?)sql");
  s.bind(1, device_id);
  if (!s.step()) return std::nullopt;
  DeviceRecord d;
  int c = 0;
  d.kind = s.column_text(c++);
  d.name = s.column_text(c++);
  d.uuid = s.column_text(c++);
  d.cc_major = int(s.column_int64(c++));
  d.cc_minor = int(s.column_int64(c++));
  d.sm_count = int(s.column_int64(c++));
  d.memory_bytes = s.column_int64(c++);
  d.l2_bytes = s.column_int64(c++);
  d.sm_clock_khz = int(s.column_int64(c++));
  d.memory_clock_khz = int(s.column_int64(c++));
  d.memory_bus_bits = int(s.column_int64(c++));
  d.driver_version = s.column_text(c++);
  d.cuda_driver_version = s.column_text(c++);
  d.cuda_version = s.column_text(c++);
  d.nvrtc_version = s.column_text(c++);
  return d;
}

std::optional<WorkloadRecord> Store::workload(int64_t workload_id) const {
  Statement s(*db_, "SELECT hash, name, canonical_json FROM workloads WHERE id = ?");
  s.bind(1, workload_id);
  if (!s.step()) return std::nullopt;
  WorkloadRecord w;
  w.hash = s.column_text(0);
  w.name = s.column_text(1);
  w.canonical_json = s.column_text(2);
  return w;
}

}  // namespace attn
