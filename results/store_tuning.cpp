// The tuner's part of the store: attempts, winners and measurement lookups (attn-tune tune).
#include <algorithm>

#include "base/errors.hpp"
#include "base/process_identity.hpp"
#include "results/sqlite.hpp"
#include "results/store.hpp"
#include "results/store_rows.hpp"

namespace attn {

int64_t Store::begin_attempt(const AttemptRecord& a) {
  Statement s(*db_, R"sql(
    INSERT INTO attempts (uid, run_id, device_id, workload_id, variant, config_key, policy,
                          strategy, rung, shard, worker_pid, status, started_at, heartbeat_at)
    VALUES (lower(hex(randomblob(16))), :run_id, :device_id, :workload_id, :variant, :config_key,
            :policy, :strategy, :rung, :shard, :worker_pid, 'started', :now, :now))sql");
  s.bind(":run_id", a.run_id)
      .bind(":device_id", a.device_id)
      .bind(":workload_id", a.workload_id)
      .bind(":variant", a.variant)
      .bind(":config_key", a.config_key)
      .bind(":policy", a.policy)
      .bind(":strategy", a.strategy)
      .bind(":rung", a.rung)
      .bind(":shard", a.shard)
      .bind(":worker_pid", a.worker_pid)
      .bind(":now", utc_timestamp_now());
  s.run();
  return db_->last_insert_rowid();
}

Claim Store::claim_attempt(const AttemptRecord& a, const ClaimRules& rules) {
  ATTN_ASSERT(!rules.device_ids.empty(), "claim_attempt: no device");
  Transaction transaction(*db_);
  Claim claim;
  // A result already stored answers the case: the latest one on any of the sweep's devices.
  std::optional<int64_t> measured;
  for (int64_t device_id : rules.device_ids) {
    Statement s(*db_, R"sql(
      SELECT max(id) FROM measurements
      WHERE workload_id = ? AND device_id = ? AND variant = ? AND config_key = ? AND policy = ?
        AND disposition NOT IN ('crashed', 'timed_out'))sql");
    s.bind(1, a.workload_id).bind(2, device_id).bind(3, a.variant).bind(4, a.config_key);
    s.bind(5, a.policy);
    if (s.step() && !s.is_null(0)) measured = std::max(measured.value_or(0), s.column_int64(0));
  }
  if (measured) {
    Statement s(*db_, measurement_select_sql() + " WHERE id = ?");
    s.bind(1, *measured);
    std::vector<StoredMeasurement> rows = read_measurements(*db_, s);
    ATTN_ASSERT(rows.size() == 1, "claim_attempt: the measurement just found is gone");
    claim.kind = Claim::Kind::measured;
    claim.measurement = std::move(rows.front());
    transaction.commit();
    return claim;
  }
  for (int64_t device_id : rules.device_ids) {
    Statement s(*db_, R"sql(
      SELECT count(*) FROM attempts
      WHERE workload_id = ? AND device_id = ? AND variant = ? AND config_key = ?
        AND status = 'finished' AND disposition IN ('crashed', 'timed_out'))sql");
    s.bind(1, a.workload_id).bind(2, device_id).bind(3, a.variant).bind(4, a.config_key);
    if (s.step()) claim.failures += s.column_int64(0);
  }
  if (claim.failures >= rules.quarantine_after) {
    claim.kind = Claim::Kind::quarantined;
    transaction.commit();
    return claim;
  }
  // Open attempts of the case: another tuner's claim, live or abandoned.
  for (int64_t device_id : rules.device_ids) {
    Statement s(*db_, R"sql(
      SELECT r.status, (julianday('now') - julianday(a.heartbeat_at)) * 86400.0, r.owner_host,
             r.owner_pid, r.owner_start
      FROM attempts a JOIN runs r ON r.id = a.run_id
      WHERE a.workload_id = ? AND a.device_id = ? AND a.variant = ? AND a.config_key = ?
        AND a.policy = ? AND a.status = 'started')sql");
    s.bind(1, a.workload_id).bind(2, device_id).bind(3, a.variant).bind(4, a.config_key);
    s.bind(5, a.policy);
    while (s.step()) {
      const std::optional<double> age = s.column_optional_double(1);
      if (s.column_text(0) != "running" || !age || *age > rules.stale_seconds) continue;
      std::optional<ProcessIdentity> holder;
      if (const std::optional<int64_t> pid = s.column_optional_int64(3)) {
        holder = ProcessIdentity{s.column_optional_text(2).value_or(""), *pid,
                                 s.column_optional_text(4).value_or("")};
        if (owner_state(*holder) == OwnerState::gone) continue;
      }
      claim.kind = Claim::Kind::busy;
      claim.holder = holder;
      transaction.commit();
      return claim;
    }
  }
  claim.kind = Claim::Kind::claimed;
  claim.attempt_id = begin_attempt(a);
  transaction.commit();
  return claim;
}

void Store::beat_attempts(int64_t run_id) {
  Statement s(*db_, "UPDATE attempts SET heartbeat_at = ? WHERE run_id = ? AND status = 'started'");
  s.bind(1, utc_timestamp_now()).bind(2, run_id);
  s.run();
}

void Store::finish_attempt(int64_t attempt_id, Disposition disposition,
                           std::optional<int64_t> measurement_id, const std::string& note) {
  Statement s(*db_, R"sql(
    UPDATE attempts SET status = 'finished', disposition = ?, measurement_id = ?, note = ?,
                        finished_at = ?
    WHERE id = ? AND status = 'started')sql");
  s.bind(1, to_string(disposition))
      .bind(2, measurement_id)
      .bind(3, note)
      .bind(4, utc_timestamp_now())
      .bind(5, attempt_id);
  s.run();
  ATTN_ASSERT(db_->changes() == 1,
              "finish_attempt: no started attempt " + std::to_string(attempt_id));
}

int64_t Store::finish_attempt_with(int64_t attempt_id, int64_t run_id, int64_t device_id,
                                   int64_t workload_id, const Measurement& m) {
  Transaction transaction(*db_);
  const int64_t measurement_id = add_measurement(run_id, device_id, workload_id, m);
  finish_attempt(attempt_id, m.disposition, measurement_id, m.reason);
  transaction.commit();
  return measurement_id;
}

void Store::discard_attempt(int64_t attempt_id) {
  Statement s(*db_, "DELETE FROM attempts WHERE id = ? AND status = 'started'");
  s.bind(1, attempt_id);
  s.run();
}

std::vector<AttemptFailures> Store::attempt_failures(int64_t workload_id, int64_t device_id,
                                                     const std::string& variant) const {
  Statement s(*db_, R"sql(
    SELECT config_key, count(*) FROM attempts
    WHERE workload_id = ? AND device_id = ? AND variant = ?
      AND status = 'finished' AND disposition IN ('crashed', 'timed_out')
    GROUP BY config_key ORDER BY config_key)sql");
  s.bind(1, workload_id).bind(2, device_id).bind(3, variant);
  std::vector<AttemptFailures> out;
  while (s.step()) out.push_back({s.column_text(0), s.column_int64(1)});
  return out;
}

int64_t Store::attempts_of_run(int64_t run_id, const std::string& status) const {
  Statement s(*db_, "SELECT count(*) FROM attempts WHERE run_id = ? AND status = ?");
  s.bind(1, run_id).bind(2, status);
  ATTN_ASSERT(s.step(), "count(*) returned no row");
  return s.column_int64(0);
}

void Store::add_winners(const std::vector<WinnerRecord>& winners) {
  Transaction transaction(*db_);
  Statement s(*db_, R"sql(
    INSERT INTO winners (run_id, device_id, workload_id, scope, verdict, variant, config_key,
                         measurement_id, median_us, relative_difference, created_at)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?))sql");
  for (const WinnerRecord& w : winners) {
    s.bind(1, w.run_id)
        .bind(2, w.device_id)
        .bind(3, w.workload_id)
        .bind(4, w.scope)
        .bind(5, w.verdict)
        .bind(6, w.variant)
        .bind(7, w.config_key)
        .bind(8, w.measurement_id)
        .bind(9, w.median_us)
        .bind(10, w.relative_difference)
        .bind(11, utc_timestamp_now());
    s.run();
    s.reset();
  }
  transaction.commit();
}

std::vector<WinnerRecord> Store::winners_of_run(int64_t run_id) const {
  Statement s(*db_, R"sql(
    SELECT device_id, workload_id, scope, verdict, variant, config_key, measurement_id, median_us,
           relative_difference
    FROM winners WHERE run_id = ? ORDER BY id)sql");
  s.bind(1, run_id);
  std::vector<WinnerRecord> out;
  while (s.step()) {
    WinnerRecord w;
    w.run_id = run_id;
    int c = 0;
    w.device_id = s.column_int64(c++);
    w.workload_id = s.column_int64(c++);
    w.scope = s.column_text(c++);
    w.verdict = s.column_text(c++);
    w.variant = s.column_text(c++);
    w.config_key = s.column_text(c++);
    w.measurement_id = s.column_int64(c++);
    w.median_us = s.column_double(c++);
    w.relative_difference = s.column_double(c++);
    out.push_back(std::move(w));
  }
  return out;
}

std::vector<StoredMeasurement> Store::find_measurements(const MeasurementFilter& f) const {
  Statement s(*db_, measurement_select_sql() + kMeasurementFilterWhere);
  bind_measurement_filter(s, f);
  return read_measurements(*db_, s);
}

std::vector<StoredMeasurement> Store::measurements_for(const std::string& workload_hash,
                                                       const std::string& device_fingerprint,
                                                       const std::string& variant) const {
  const std::optional<int64_t> w = workload_id(workload_hash);
  const std::optional<int64_t> d = device_id(device_fingerprint);
  if (!w || !d) return {};
  MeasurementFilter f;
  f.workload_id = w;
  f.device_id = d;
  f.variant = variant;
  f.passed_only = true;
  return find_measurements(f);
}

std::optional<int64_t> Store::workload_id(const std::string& hash) const {
  Statement s(*db_, "SELECT id FROM workloads WHERE hash = ?");
  s.bind(1, hash);
  if (!s.step()) return std::nullopt;
  return s.column_int64(0);
}

std::optional<int64_t> Store::device_id(const std::string& fingerprint) const {
  Statement s(*db_, "SELECT id FROM devices WHERE fingerprint = ?");
  s.bind(1, fingerprint);
  if (!s.step()) return std::nullopt;
  return s.column_int64(0);
}

}  // namespace attn
