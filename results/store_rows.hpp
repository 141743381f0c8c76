// Internal to results/: the one SELECT list of a measurement row and its reader, shared by the
// store's query functions (store.cpp, store_tuning.cpp, store_reads.cpp), and the WHERE clause of a
// MeasurementFilter.
#pragma once

#include <vector>

#include "results/sqlite.hpp"
#include "results/store.hpp"

namespace attn {

// "SELECT <every column read_measurements reads> FROM measurements": append WHERE / ORDER BY.
extern const char* const kMeasurementSelect;
// Steps `select` (prepared from kMeasurementSelect) to the end, reading each row and its samples.
std::vector<StoredMeasurement> read_measurements(Database& db, Statement& select);

// " WHERE ... ORDER BY id" selecting the rows a MeasurementFilter keeps, with the parameters
// :workload, :device, :variant, :policy and :passed that bind_measurement_filter binds.
extern const char* const kMeasurementFilterWhere;
void bind_measurement_filter(Statement& statement, const MeasurementFilter& filter);

}  // namespace attn
