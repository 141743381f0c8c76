// The read side of the store that `attn-tune db info` and `attn-tune export` use: listings of
// devices, runs and migrations, a summary with every count, and measurements without samples.
#include <map>
#include <string>

#include "base/errors.hpp"
#include "results/sqlite.hpp"
#include "results/store.hpp"
#include "results/store_rows.hpp"

namespace attn {

namespace {

// Rows of a "SELECT key, count(*) ... GROUP BY key ORDER BY count(*) DESC, key" query.
std::vector<std::pair<std::string, int64_t>> counted(Database& db, const char* sql) {
  Statement s(db, sql);
  std::vector<std::pair<std::string, int64_t>> out;
  while (s.step()) out.emplace_back(s.column_text(0), s.column_int64(1));
  return out;
}

int64_t scalar(Database& db, const char* sql) {
  Statement s(db, sql);
  ATTN_ASSERT(s.step(), std::string("no row from ") + sql);
  return s.column_int64(0);
}

}  // namespace

std::vector<MigrationRecord> Store::migrations() const {
  Statement s(*db_,
              "SELECT version, description, tool_version, applied_at FROM schema_migrations "
              "ORDER BY version");
  std::vector<MigrationRecord> out;
  while (s.step()) {
    out.push_back({int(s.column_int64(0)), s.column_text(1), s.column_text(2), s.column_text(3)});
  }
  return out;
}

std::vector<StoredDevice> Store::devices() const {
  Statement s(*db_, R"sql(
    SELECT d.id, d.fingerprint, d.first_seen_at, d.last_seen_at,
           (SELECT count(*) FROM measurements m WHERE m.device_id = d.id),
           (SELECT count(*) FROM measurements m WHERE m.device_id = d.id
                                                  AND m.disposition = 'passed')
    FROM devices d ORDER BY d.id)sql");
  std::vector<StoredDevice> out;
  while (s.step()) {
    StoredDevice d;
    d.id = s.column_int64(0);
    d.fingerprint = s.column_text(1);
    d.first_seen_at = s.column_text(2);
    d.last_seen_at = s.column_text(3);
    d.measurements = s.column_int64(4);
    d.passed = s.column_int64(5);
    out.push_back(std::move(d));
  }
  for (StoredDevice& d : out) {
    std::optional<DeviceRecord> record = device(d.id);
    ATTN_ASSERT(record.has_value(), "device row vanished while listing");
    d.record = std::move(*record);
    d.ceilings = ceilings(d.fingerprint);
  }
  return out;
}

std::vector<StoredRun> Store::runs() const {
  std::vector<int64_t> ids;
  {
    Statement s(*db_, "SELECT id FROM runs ORDER BY id");
    while (s.step()) ids.push_back(s.column_int64(0));
  }
  std::vector<StoredRun> out;
  for (int64_t id : ids) {
    std::optional<StoredRun> r = run(id);
    ATTN_ASSERT(r.has_value(), "run row vanished while listing");
    out.push_back(std::move(*r));
  }
  return out;
}

std::vector<MeasurementBrief> Store::measurement_briefs(const MeasurementFilter& f) const {
  Statement s(*db_, R"sql(
    SELECT id, uid, run_id, device_id, workload_id, family, variant, config_key, config_json,
           policy, disposition, unstable, sample_count, median_us, p10_us, p90_us, created_at
    FROM measurements)sql" + std::string(kMeasurementFilterWhere));
  bind_measurement_filter(s, f);
  std::vector<MeasurementBrief> out;
  while (s.step()) {
    MeasurementBrief m;
    int c = 0;
    m.id = s.column_int64(c++);
    m.uid = s.column_optional_text(c++).value_or("");
    m.run_id = s.column_int64(c++);
    m.device_id = s.column_int64(c++);
    m.workload_id = s.column_int64(c++);
    m.family = s.column_text(c++);
    m.variant = s.column_text(c++);
    m.config_key = s.column_text(c++);
    m.config_json = s.column_text(c++);
    m.policy = s.column_text(c++);
    const std::string disposition = s.column_text(c++);
    const std::optional<Disposition> parsed = disposition_from_string(disposition);
    ATTN_ASSERT(parsed.has_value(), "unknown disposition '" + disposition + "' in the database");
    m.disposition = *parsed;
    m.unstable = s.column_int64(c++) != 0;
    m.sample_count = s.column_int64(c++);
    m.median_us = s.column_optional_double(c++);
    m.p10_us = s.column_optional_double(c++);
    m.p90_us = s.column_optional_double(c++);
    m.created_at = s.column_text(c++);
    out.push_back(std::move(m));
  }
  return out;
}

StoreSummary Store::summary() const {
  Database& db = *db_;
  StoreSummary out;
  out.migrations = migrations();
  out.counts = counts();
  out.measurements_by_disposition = counted(db,
                                            "SELECT disposition, count(*) FROM measurements "
                                            "GROUP BY disposition ORDER BY count(*) DESC, 1");
  out.measurements_by_policy = counted(db,
                                       "SELECT policy, count(*) FROM measurements "
                                       "GROUP BY policy ORDER BY count(*) DESC, 1");
  out.unstable =
      scalar(db, "SELECT count(*) FROM measurements WHERE disposition = 'passed' AND unstable");
  out.samples = scalar(db, "SELECT count(*) FROM samples");
  out.attempts = scalar(db, "SELECT count(*) FROM attempts");
  out.attempts_started = scalar(db, "SELECT count(*) FROM attempts WHERE status = 'started'");
  out.winners = scalar(db, "SELECT count(*) FROM winners");
  out.ceilings = scalar(db, "SELECT count(*) FROM ceilings");
  out.repeat_checks = scalar(db, "SELECT count(*) FROM repeat_checks");
  out.devices = devices();

  std::map<int64_t, int64_t> per_run;
  {
    Statement s(db, "SELECT run_id, count(*) FROM measurements GROUP BY run_id");
    while (s.step()) per_run[s.column_int64(0)] = s.column_int64(1);
  }
  for (StoredRun& r : runs()) {
    const int64_t n = per_run.count(r.id) ? per_run[r.id] : 0;
    out.runs.emplace_back(std::move(r), n);
  }

  {
    Statement s(db, R"sql(
      SELECT w.id, w.hash, w.name, w.canonical_json, w.created_at,
             (SELECT count(*) FROM measurements m WHERE m.workload_id = w.id)
      FROM workloads w ORDER BY w.id)sql");
    while (s.step()) {
      StoredWorkload w;
      w.id = s.column_int64(0);
      w.record.hash = s.column_text(1);
      w.record.name = s.column_text(2);
      w.record.canonical_json = s.column_text(3);
      w.created_at = s.column_text(4);
      w.measurements = s.column_int64(5);
      out.workloads.push_back(std::move(w));
    }
    Statement f(db, "SELECT DISTINCT workload_id, family FROM measurements ORDER BY 1, 2");
    std::map<int64_t, std::vector<std::string>> families;
    while (f.step()) families[f.column_int64(0)].push_back(f.column_text(1));
    for (StoredWorkload& w : out.workloads) w.families = families[w.id];
  }

  Statement s(db, R"sql(
    SELECT family, count(DISTINCT variant), count(DISTINCT variant || '|' || config_key),
           count(DISTINCT workload_id), count(DISTINCT device_id), count(*),
           sum(disposition = 'passed')
    FROM measurements GROUP BY family ORDER BY family)sql");
  while (s.step()) {
    FamilyCounts c;
    c.family = s.column_text(0);
    c.variants = s.column_int64(1);
    c.configs = s.column_int64(2);
    c.workloads = s.column_int64(3);
    c.devices = s.column_int64(4);
    c.measurements = s.column_int64(5);
    c.passed = s.column_int64(6);
    out.families.push_back(std::move(c));
  }
  return out;
}

}  // namespace attn
