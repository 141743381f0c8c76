// The fields of a Measurement (results/measurement.hpp), described once. Per field: its column in
// the `measurements` table and the column's SQL type, its place in the JSON of
// results/measurement_json.hpp, when the store writes it as NULL, and an accessor. Generated from
// this table: the column lists of the store's INSERT and SELECT, the bindings and the reading of a
// row by column name (results/store_rows.hpp), and the JSON both ways. Adding a field is one line
// in the table (measurement_fields.cpp) plus, for a new column, a migration: docs/database.md,
// "Adding a column to measurements".
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "results/measurement.hpp"

namespace attn {

// A value as SQLite holds it: NULL, INTEGER, REAL or TEXT.
using SqlValue = std::variant<std::monostate, int64_t, double, std::string>;

// Which values the store writes as NULL besides an empty optional, and what NULL reads back as
// (the field's default unless said otherwise).
enum class SqlNull {
  none,
  empty_text,    // '' is NULL: a ceiling or timer that is not set
  not_positive,  // 0 or less is NULL: a clock that was not read
  nan,           // NaN is NULL (SQLite has no NaN), and NULL reads back as NaN
};

struct MeasurementField {
  const char* column;       // in `measurements`; nullptr for the samples (the `samples` table)
  const char* sql_type;     // "TEXT", "INTEGER" or "REAL", as the schema declares the column
  const char* json_object;  // the JSON object it sits in ("stats", ...); nullptr: the top level
  const char* json_key;
  bool nullable;  // a std::optional: NULL in SQL, null or absent in JSON
  // When this returns false the store writes NULL and reads the field's default: the statistics
  // of a measurement without samples, the timing details of one not timed, the errors of one not
  // verified. It may only look at fields above it in the table: a row is read in table order.
  // nullptr: always stored.
  bool (*stored)(const Measurement&);
  SqlNull sql_null;
  // The accessor. The from_* throw a std::exception (nlohmann::json::exception,
  // std::invalid_argument) for a value of the wrong type or an unknown disposition.
  std::function<nlohmann::json(const Measurement&)> to_json;
  std::function<void(Measurement&, const nlohmann::json&)> from_json;
  std::function<SqlValue(const Measurement&)> to_sql;           // empty when `column` is nullptr
  std::function<void(Measurement&, const SqlValue&)> from_sql;  // never given NULL
};

// Every field, in the order of results/measurement.hpp.
const std::vector<MeasurementField>& measurement_fields();

// The value the store binds for `field` of `m` (after `stored` and `sql_null`); monostate: NULL.
SqlValue sql_value(const MeasurementField& field, const Measurement& m);
// Sets `field` of `m` from the column's value as read (monostate for NULL), unless `stored(m)` is
// false. NULL leaves the field as it is, the default in a fresh Measurement (SqlNull::nan: NaN).
void set_from_sql(const MeasurementField& field, Measurement& m, const SqlValue& value);

// Columns computed from the fields, written beside them for SQL queries (`avg(gbps)`) and never
// read back: Measurement computes them (gbps(), tflops()).
struct DerivedColumn {
  const char* column;
  const char* sql_type;
  SqlValue (*value)(const Measurement&);
};
const std::vector<DerivedColumn>& measurement_derived_columns();

}  // namespace attn
