#include "results/store_rows.hpp"

#include <map>
#include <string_view>

#include "base/errors.hpp"
#include "results/measurement_fields.hpp"

namespace attn {

namespace {

// The columns the store itself fills, beside the field table's.
constexpr const char* kInsertKeys = "run_id, device_id, workload_id, created_at, uid";
constexpr const char* kInsertKeyValues =
    ":run_id, :device_id, :workload_id, :created_at, lower(hex(randomblob(16)))";
constexpr const char* kSelectKeys = "id, run_id, device_id, workload_id";

void bind_value(Statement& s, const std::string& parameter, const SqlValue& value) {
  const int index = s.parameter_index(parameter.c_str());
  if (const auto* i = std::get_if<int64_t>(&value)) {
    s.bind(index, *i);
  } else if (const auto* d = std::get_if<double>(&value)) {
    s.bind(index, *d);
  } else if (const auto* t = std::get_if<std::string>(&value)) {
    s.bind(index, *t);
  } else {
    s.bind_null(index);
  }
}

// The value of `column` in the current row, read as its declared type; monostate for NULL.
SqlValue column_value(const Statement& s, int column, std::string_view sql_type) {
  if (s.is_null(column)) return {};
  if (sql_type == "TEXT") return s.column_text(column);
  if (sql_type == "INTEGER") return s.column_int64(column);
  ATTN_ASSERT(sql_type == "REAL",
              "a column is TEXT, INTEGER or REAL, not " + std::string(sql_type));
  return s.column_double(column);
}

// The index of each column of a prepared statement, by name.
class ColumnIndex {
 public:
  explicit ColumnIndex(const Statement& s) {
    for (int c = 0; c < s.column_count(); ++c) index_[s.column_name(c)] = c;
  }
  int at(const std::string& name) const {
    const auto it = index_.find(name);
    ATTN_ASSERT(it != index_.end(), "the measurement SELECT has no column '" + name + "'");
    return it->second;
  }

 private:
  std::map<std::string, int> index_;
};

}  // namespace

const std::string& measurement_insert_sql() {
  static const std::string sql = [] {
    std::string columns = kInsertKeys, values = kInsertKeyValues;
    auto add = [&](const char* column) {
      columns += std::string(", ") + column;
      values += std::string(", :") + column;
    };
    for (const MeasurementField& f : measurement_fields()) {
      if (f.column) add(f.column);
    }
    for (const DerivedColumn& d : measurement_derived_columns()) add(d.column);
    return "INSERT INTO measurements (" + columns + ") VALUES (" + values + ")";
  }();
  return sql;
}

void bind_measurement(Statement& insert, const Measurement& m) {
  for (const MeasurementField& f : measurement_fields()) {
    if (f.column) bind_value(insert, std::string(":") + f.column, sql_value(f, m));
  }
  for (const DerivedColumn& d : measurement_derived_columns()) {
    bind_value(insert, std::string(":") + d.column, d.value(m));
  }
}

const std::string& measurement_select_sql() {
  static const std::string sql = [] {
    std::string columns = kSelectKeys;
    for (const MeasurementField& f : measurement_fields()) {
      if (f.column) columns += std::string(", ") + f.column;
    }
    return "SELECT " + columns + " FROM measurements";
  }();
  return sql;
}

std::vector<StoredMeasurement> read_measurements(Database& db, Statement& s) {
  const std::vector<MeasurementField>& fields = measurement_fields();
  const ColumnIndex index(s);
  const int id = index.at("id"), run_id = index.at("run_id"), device_id = index.at("device_id"),
            workload_id = index.at("workload_id");
  std::vector<int> field_columns;  // -1: not a column
  for (const MeasurementField& f : fields)
    field_columns.push_back(f.column ? index.at(f.column) : -1);

  Statement samples(db,
                    "SELECT idx, time_us, sm_clock_mhz, discarded FROM samples "
                    "WHERE measurement_id = ? ORDER BY idx");
  std::vector<StoredMeasurement> out;
  while (s.step()) {
    StoredMeasurement row;
    row.id = s.column_int64(id);
    row.run_id = s.column_int64(run_id);
    row.device_id = s.column_int64(device_id);
    row.workload_id = s.column_int64(workload_id);
    Measurement& m = row.measurement;
    // In table order: whether a field is stored may depend on one above it.
    for (size_t i = 0; i < fields.size(); ++i) {
      if (field_columns[i] < 0) continue;
      const MeasurementField& f = fields[i];
      const SqlValue value = column_value(s, field_columns[i], f.sql_type);
      try {
        set_from_sql(f, m, value);
      } catch (const std::exception& e) {  // an unknown disposition
        throw_internal(
            "set_from_sql", __FILE__, __LINE__,
            "measurement " + std::to_string(row.id) + ", column " + f.column + ": " + e.what());
      }
    }

    samples.reset();
    samples.bind(1, row.id);
    bool any_clock = false, any_discarded = false;
    while (samples.step()) {
      ATTN_ASSERT(samples.column_int64(0) == int64_t(m.samples_us.size()),
                  "samples of measurement " + std::to_string(row.id) + " are not numbered 0..n-1");
      m.samples_us.push_back(samples.column_double(1));
      const double mhz = samples.column_optional_double(2).value_or(0);
      const bool discarded = samples.column_int64(3) != 0;
      any_clock = any_clock || mhz > 0;
      any_discarded = any_discarded || discarded;
      m.sample_clock_mhz.push_back(mhz);
      m.sample_discarded.push_back(discarded);
    }
    if (!any_clock) m.sample_clock_mhz.clear();
    if (!any_discarded) m.sample_discarded.clear();
    out.push_back(std::move(row));
  }
  return out;
}

const char* const kMeasurementFilterWhere = R"sql(
    WHERE (:workload IS NULL OR workload_id = :workload)
      AND (:device IS NULL OR device_id = :device)
      AND (:variant IS NULL OR variant = :variant)
      AND (:policy IS NULL OR policy = :policy)
      AND (:passed = 0 OR disposition = 'passed')
    ORDER BY id)sql";

void bind_measurement_filter(Statement& s, const MeasurementFilter& f) {
  s.bind(":workload", f.workload_id)
      .bind(":device", f.device_id)
      .bind(":variant", f.variant)
      .bind(":policy", f.policy)
      .bind(":passed", int64_t(f.passed_only ? 1 : 0));
}

}  // namespace attn
