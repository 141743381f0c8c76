// attn-tune merge: copy the rows of another attn-bench database that this one lacks. The other
// file is attached read-side as `src`; every insert maps its ids to ours through the identities
// that are the same in both files (run and measurement uids, device fingerprints, workload
// hashes). Column lists come from this database's own schema (PRAGMA table_info), never from
// input, and both files are at the same schema version (Store migrates the other one first).
#include <functional>

#include "base/errors.hpp"
#include "results/sqlite.hpp"
#include "results/store.hpp"

namespace attn {

namespace {

// Columns of `table` in the main database, without those in `skip`, as "a, b, c" with `prefix`
// ("s.") before each.
std::string columns(Database& db, const char* table, const std::vector<std::string>& skip,
                    const std::string& prefix) {
  Statement s(db, std::string("SELECT name FROM pragma_table_info(?) ORDER BY cid"));
  s.bind(1, table);
  std::string out;
  while (s.step()) {
    const std::string name = s.column_text(0);
    bool skipped = false;
    for (const std::string& k : skip) skipped |= k == name;
    if (skipped) continue;
    out += (out.empty() ? "" : ", ") + prefix + name;
  }
  return out;
}

}  // namespace

MergeCounts Store::merge_from(const std::string& path) {
  { Store other(path); }  // refuses a newer or foreign file, migrates an older one
  Database& db = *db_;
  {
    Statement attach(db, "ATTACH DATABASE ? AS src");
    attach.bind(1, path);
    attach.run();
  }
  MergeCounts counts;
  try {
    Transaction transaction(db);
    auto run = [&](const std::string& sql, int64_t& counter) {
      Statement s(db, sql);
      s.run();
      counter += db.changes();
    };
    const std::string device_cols = columns(db, "devices", {"id"}, "");
    run("INSERT INTO main.devices (" + device_cols + ") SELECT " +
            columns(db, "devices", {"id"}, "s.") +
            " FROM src.devices s WHERE s.fingerprint NOT IN (SELECT fingerprint FROM "
            "main.devices)",
        counts.devices);
    run("INSERT INTO main.workloads (" + columns(db, "workloads", {"id"}, "") + ") SELECT " +
            columns(db, "workloads", {"id"}, "s.") +
            " FROM src.workloads s WHERE s.hash NOT IN (SELECT hash FROM main.workloads)",
        counts.workloads);
    run("INSERT INTO main.runs (" + columns(db, "runs", {"id"}, "") + ") SELECT " +
            columns(db, "runs", {"id"}, "s.") +
            " FROM src.runs s WHERE s.uid NOT IN (SELECT uid FROM main.runs)",
        counts.runs);
    // The joins that map a source row's run, device and workload ids to ours.
    const std::string map_case =
        " JOIN src.runs sr ON sr.id = s.run_id JOIN main.runs r ON r.uid = sr.uid"
        " JOIN src.devices sd ON sd.id = s.device_id"
        " JOIN main.devices d ON d.fingerprint = sd.fingerprint"
        " JOIN src.workloads sw ON sw.id = s.workload_id JOIN main.workloads w ON w.hash = sw.hash";
    const std::vector<std::string> case_keys = {"id", "run_id", "device_id", "workload_id"};
    run("INSERT INTO main.measurements (" + columns(db, "measurements", case_keys, "") +
            ", run_id, device_id, workload_id) SELECT " +
            columns(db, "measurements", case_keys, "s.") + ", r.id, d.id, w.id" +
            " FROM src.measurements s" + map_case +
            " WHERE s.uid NOT IN (SELECT uid FROM main.measurements)",
        counts.measurements);
    run("INSERT OR IGNORE INTO main.samples (" + columns(db, "samples", {"measurement_id"}, "") +
            ", measurement_id) SELECT " + columns(db, "samples", {"measurement_id"}, "s.") +
            ", mm.id FROM src.samples s JOIN src.measurements sm ON sm.id = s.measurement_id"
            " JOIN main.measurements mm ON mm.uid = sm.uid",
        counts.samples);
    std::vector<std::string> attempt_keys = case_keys;
    attempt_keys.push_back("measurement_id");
    run("INSERT INTO main.attempts (" + columns(db, "attempts", attempt_keys, "") +
            ", run_id, device_id, workload_id, measurement_id) SELECT " +
            columns(db, "attempts", attempt_keys, "s.") + ", r.id, d.id, w.id, mm.id" +
            " FROM src.attempts s" + map_case +
            " LEFT JOIN src.measurements sm ON sm.id = s.measurement_id"
            " LEFT JOIN main.measurements mm ON mm.uid = sm.uid"
            " WHERE s.uid NOT IN (SELECT uid FROM main.attempts)",
        counts.attempts);
    run("INSERT INTO main.winners (" + columns(db, "winners", attempt_keys, "") +
            ", run_id, device_id, workload_id, measurement_id) SELECT " +
            columns(db, "winners", attempt_keys, "s.") + ", r.id, d.id, w.id, mm.id" +
            " FROM src.winners s" + map_case +
            " JOIN src.measurements sm ON sm.id = s.measurement_id"
            " JOIN main.measurements mm ON mm.uid = sm.uid"
            " WHERE NOT EXISTS (SELECT 1 FROM main.winners x WHERE x.run_id = r.id"
            " AND x.scope = s.scope AND x.variant = s.variant AND x.config_key = s.config_key)",
        counts.winners);
    run("INSERT INTO main.ceilings (" + columns(db, "ceilings", {"id"}, "") + ") SELECT " +
            columns(db, "ceilings", {"id"}, "s.") +
            " FROM src.ceilings s WHERE NOT EXISTS (SELECT 1 FROM main.ceilings x WHERE"
            " x.device_fingerprint = s.device_fingerprint AND x.metric = s.metric"
            " AND x.measured_at = s.measured_at AND x.value = s.value)",
        counts.ceilings);
    const std::vector<std::string> check_keys = {"id", "run_id", "first_measurement_id",
                                                 "second_measurement_id"};
    run("INSERT INTO main.repeat_checks (" + columns(db, "repeat_checks", check_keys, "") +
            ", run_id, first_measurement_id, second_measurement_id) SELECT " +
            columns(db, "repeat_checks", check_keys, "s.") + ", r.id, m1.id, m2.id" +
            " FROM src.repeat_checks s JOIN src.runs sr ON sr.id = s.run_id"
            " JOIN main.runs r ON r.uid = sr.uid"
            " JOIN src.measurements s1 ON s1.id = s.first_measurement_id"
            " JOIN main.measurements m1 ON m1.uid = s1.uid"
            " JOIN src.measurements s2 ON s2.id = s.second_measurement_id"
            " JOIN main.measurements m2 ON m2.uid = s2.uid"
            " WHERE NOT EXISTS (SELECT 1 FROM main.repeat_checks x WHERE"
            " x.first_measurement_id = m1.id AND x.second_measurement_id = m2.id)",
        counts.repeat_checks);
    transaction.commit();
  } catch (...) {
    db.exec("DETACH DATABASE src");
    throw;
  }
  db.exec("DETACH DATABASE src");
  return counts;
}

}  // namespace attn
