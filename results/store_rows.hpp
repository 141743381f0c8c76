// Internal to results/: the SQL of a measurement row, generated from the field table
// (results/measurement_fields.hpp) and shared by the store's write and query functions (store.cpp,
// store_tuning.cpp): the INSERT and its bindings, the SELECT and the reading of its rows by column
// name, and the WHERE clause of a MeasurementFilter.
#pragma once

#include <string>
#include <vector>

#include "results/sqlite.hpp"
#include "results/store.hpp"

namespace attn {

// "INSERT INTO measurements (run_id, device_id, workload_id, created_at, uid, <every column of the
// field table and the derived columns>) VALUES (:run_id, ..., :<column>, ...)". The uid is drawn
// by SQLite; the caller binds :run_id, :device_id, :workload_id and :created_at.
const std::string& measurement_insert_sql();
// Binds :<column> of every field and derived column of `m` on a statement of
// measurement_insert_sql.
void bind_measurement(Statement& insert, const Measurement& m);

// "SELECT id, run_id, device_id, workload_id, <every column of the field table> FROM
// measurements": append WHERE / ORDER BY.
const std::string& measurement_select_sql();
// Steps `select` (prepared from measurement_select_sql) to the end, reading each row by column
// name, and its samples.
std::vector<StoredMeasurement> read_measurements(Database& db, Statement& select);

// " WHERE ... ORDER BY id" selecting the rows a MeasurementFilter keeps, with the parameters
// :workload, :device, :variant, :policy and :passed that bind_measurement_filter binds.
extern const char* const kMeasurementFilterWhere;
void bind_measurement_filter(Statement& statement, const MeasurementFilter& filter);

}  // namespace attn
