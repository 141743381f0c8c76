#include "results/measurement_fields.hpp"

#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <type_traits>

#include "base/errors.hpp"

namespace attn {

namespace {

using nlohmann::json;

template <typename T>
struct IsOptional : std::false_type {};
template <typename T>
struct IsOptional<std::optional<T>> : std::true_type {};

template <typename T>
struct IsVector : std::false_type {};
template <typename T>
struct IsVector<std::vector<T>> : std::true_type {};

// One member's value as JSON and back: as nlohmann writes the type, a disposition as its name, an
// empty optional as null.
template <typename T>
json to_json_value(const T& value) {
  if constexpr (IsOptional<T>::value) {
    return value ? to_json_value(*value) : json(nullptr);
  } else if constexpr (std::is_same_v<T, Disposition>) {
    return to_string(value);
  } else {
    return value;
  }
}

Disposition parse_disposition(const std::string& text) {
  const std::optional<Disposition> d = disposition_from_string(text);
  if (!d) throw std::invalid_argument("unknown '" + text + "'");
  return *d;
}

template <typename T>
void from_json_value(const json& j, T& value) {
  if constexpr (IsOptional<T>::value) {
    if (j.is_null()) {
      value.reset();
    } else {
      typename T::value_type v{};
      from_json_value(j, v);
      value = v;
    }
  } else if constexpr (std::is_same_v<T, Disposition>) {
    value = parse_disposition(j.get<std::string>());
  } else {
    value = j.get<T>();
  }
}

// One member's value as SQL and back: text, a disposition as its name, an integer (a flag as 0 or
// 1), a double; an empty optional as NULL.
template <typename T>
SqlValue to_sql_value(const T& value) {
  if constexpr (IsOptional<T>::value) {
    return value ? to_sql_value(*value) : SqlValue();
  } else if constexpr (std::is_same_v<T, std::string>) {
    return value;
  } else if constexpr (std::is_same_v<T, Disposition>) {
    return to_string(value);
  } else if constexpr (std::is_same_v<T, bool>) {
    return int64_t(value ? 1 : 0);
  } else if constexpr (std::is_integral_v<T>) {
    return int64_t(value);
  } else {
    static_assert(std::is_same_v<T, double>, "a column holds text, an integer or a double");
    return value;
  }
}

template <typename T>
void from_sql_value(const SqlValue& sql, T& value) {
  if constexpr (IsOptional<T>::value) {
    typename T::value_type v{};
    from_sql_value(sql, v);
    value = v;
  } else if constexpr (std::is_same_v<T, std::string>) {
    value = std::get<std::string>(sql);
  } else if constexpr (std::is_same_v<T, Disposition>) {
    value = parse_disposition(std::get<std::string>(sql));
  } else if constexpr (std::is_same_v<T, bool>) {
    value = std::get<int64_t>(sql) != 0;
  } else if constexpr (std::is_integral_v<T>) {
    value = T(std::get<int64_t>(sql));
  } else {
    static_assert(std::is_same_v<T, double>, "a column holds text, an integer or a double");
    value = std::get<double>(sql);
  }
}

// The SQL side of a field: its column, the column's type, when it is stored, what is NULL.
struct Column {
  const char* name;
  const char* type;
  bool (*stored)(const Measurement&) = nullptr;
  SqlNull null = SqlNull::none;
};
// The raw samples are rows of the `samples` table, not columns (Store::add_measurement).
constexpr Column kSamplesTable{nullptr, nullptr};

// `ref(m)` is the member of `m`, a const one for a const Measurement.
template <typename T, typename Ref>
MeasurementField make_field(Column column, const char* json_object, const char* json_key, Ref ref) {
  MeasurementField f;
  f.column = column.name;
  f.sql_type = column.type;
  f.json_object = json_object;
  f.json_key = json_key;
  f.nullable = IsOptional<T>::value;
  f.stored = column.stored;
  f.sql_null = column.null;
  f.to_json = [ref](const Measurement& m) { return to_json_value(ref(m)); };
  f.from_json = [ref](Measurement& m, const json& j) { from_json_value(j, ref(m)); };
  if constexpr (!IsVector<T>::value) {
    f.to_sql = [ref](const Measurement& m) { return to_sql_value(ref(m)); };
    f.from_sql = [ref](Measurement& m, const SqlValue& v) { from_sql_value(v, ref(m)); };
  }
  return f;
}

// A member of Measurement, at the top level of the JSON.
template <typename T>
MeasurementField field(Column column, const char* json_key, T Measurement::*member) {
  return make_field<T>(
      column, nullptr, json_key, [member](auto& m) -> auto& { return m.*member; });
}

// One of Measurement's parts, written as an object of the JSON.
template <typename P>
struct Part {
  P Measurement::*member;
  const char* json_object;
};

// A member of a part.
template <typename P, typename T>
MeasurementField field(Column column, Part<P> part, const char* json_key, T P::*member) {
  return make_field<T>(
      column, part.json_object, json_key,
      [ part, member ](auto& m) -> auto& { return (m.*part.member).*member; });
}

// Statistics are NULL when nothing was timed, so that SQL aggregates never see a fake zero; the
// timing details when it was not timed; the errors when the output was not checked.
bool sampled(const Measurement& m) {
  return m.stats.count > 0;
}
bool timed(const Measurement& m) {
  return !m.timing.timer.empty();
}
bool verified(const Measurement& m) {
  return m.verification.checked;
}

std::vector<MeasurementField> make_fields() {
  using M = Measurement;
  using S = Statistics;
  using T = TimingDetails;
  using C = ClockRecord;
  using V = Verification;
  const Part<S> stats{&M::stats, "stats"};
  const Part<T> timing{&M::timing, "timing"};
  const Part<C> clocks{&M::clocks, "clocks"};
  const Part<V> checks{&M::verification, "verification"};
  constexpr auto always = nullptr;
  constexpr SqlNull kEmpty = SqlNull::empty_text;
  constexpr SqlNull kNotPositive = SqlNull::not_positive;
  // Each row: {column, SQL type, stored when, NULL for}, [part,] JSON key, member.
  return {
      field({"family", "TEXT"}, "family", &M::family),
      field({"variant", "TEXT"}, "variant", &M::variant),
      field({"config_key", "TEXT"}, "config_key", &M::config_key),
      field({"config_json", "TEXT"}, "config_json", &M::config_json),
      field({"plan", "TEXT"}, "plan", &M::plan),
      field({"backend", "TEXT"}, "backend", &M::backend),
      field({"disposition", "TEXT"}, "disposition", &M::disposition),
      field({"reason", "TEXT"}, "reason", &M::reason),
      field({"policy", "TEXT"}, "policy", &M::policy),
      field(kSamplesTable, "samples_us", &M::samples_us),
      field(kSamplesTable, "sample_clock_mhz", &M::sample_clock_mhz),
      field(kSamplesTable, "sample_discarded", &M::sample_discarded),
      field({"sample_count", "INTEGER"}, stats, "count", &S::count),
      field({"median_us", "REAL", sampled}, stats, "median", &S::median),
      field({"mean_us", "REAL", sampled}, stats, "mean", &S::mean),
      field({"stddev_us", "REAL", sampled}, stats, "stddev", &S::stddev),
      field({"min_us", "REAL", sampled}, stats, "min", &S::min),
      field({"max_us", "REAL", sampled}, stats, "max", &S::max),
      field({"p10_us", "REAL", sampled}, stats, "p10", &S::p10),
      field({"p90_us", "REAL", sampled}, stats, "p90", &S::p90),
      field({"timer", "TEXT", always, kEmpty}, timing, "timer", &T::timer),
      field({"launches_per_sample", "INTEGER", timed}, timing, "launches_per_sample",
            &T::launches_per_sample),
      field({"stop_reason", "TEXT", timed}, timing, "stop_reason", &T::stop_reason),
      field({"noise", "REAL", timed}, timing, "noise", &T::noise),
      field({"noise_target", "REAL", timed}, timing, "noise_target", &T::noise_target),
      field({"warmup_samples", "INTEGER", timed}, timing, "warmup_samples", &T::warmup_samples),
      field({"discarded_samples", "INTEGER", timed}, timing, "discarded", &T::discarded),
      field({"outliers", "INTEGER", timed}, timing, "outliers", &T::outliers),
      field({"expected_clock_mhz", "REAL", always, kNotPositive}, clocks, "expected_mhz",
            &C::expected_mhz),
      field({"median_clock_mhz", "REAL", always, kNotPositive}, clocks, "median_mhz",
            &C::median_mhz),
      field({"min_clock_mhz", "REAL", always, kNotPositive}, clocks, "min_mhz", &C::min_mhz),
      field({"max_clock_mhz", "REAL", always, kNotPositive}, clocks, "max_mhz", &C::max_mhz),
      field({"temperature_start_c", "REAL"}, clocks, "temperature_start_c",
            &C::temperature_start_c),
      field({"temperature_end_c", "REAL"}, clocks, "temperature_end_c", &C::temperature_end_c),
      field({"nvml_sm_clock_mhz", "REAL"}, clocks, "nvml_sm_clock_mhz", &C::nvml_sm_clock_mhz),
      field({"clock_event_reasons", "INTEGER"}, clocks, "clock_event_reasons",
            &C::clock_event_reasons),
      field({"unstable", "INTEGER"}, "unstable", &M::unstable),
      field({"unstable_reason", "TEXT"}, "unstable_reason", &M::unstable_reason),
      field({"ceiling", "TEXT", always, kEmpty}, "ceiling", &M::ceiling),
      field({"ceiling_fraction", "REAL"}, "ceiling_fraction", &M::ceiling_fraction),
      field({"verified", "INTEGER"}, checks, "checked", &V::checked),
      field({"max_abs_error", "REAL", verified, SqlNull::nan}, checks, "max_abs_error",
            &V::max_abs_error),
      field({"rel_l2_error", "REAL", verified, SqlNull::nan}, checks, "rel_l2_error",
            &V::rel_l2_error),
      field({"nonfinite", "INTEGER", verified}, checks, "nonfinite", &V::nonfinite),
      field({"elements", "INTEGER", verified}, checks, "elements", &V::elements),
      field({"tolerance", "REAL", verified}, checks, "tolerance", &V::tolerance),
      field({"reference", "TEXT", verified}, checks, "reference", &V::reference),
      field({"bytes", "REAL"}, "bytes", &M::bytes),
      field({"unique_bytes", "REAL"}, "unique_bytes", &M::unique_bytes),
      field({"flops", "REAL"}, "flops", &M::flops),
  };
}

bool has_rate(const Measurement& m) {
  return m.stats.count > 0 && m.stats.median > 0;
}

}  // namespace

const std::vector<MeasurementField>& measurement_fields() {
  static const std::vector<MeasurementField> fields = make_fields();
  return fields;
}

SqlValue sql_value(const MeasurementField& field, const Measurement& m) {
  ATTN_ASSERT(field.column != nullptr, std::string(field.json_key) + " is not a column");
  if (field.stored && !field.stored(m)) return {};
  SqlValue value = field.to_sql(m);
  const double* number = std::get_if<double>(&value);
  const int64_t* integer = std::get_if<int64_t>(&value);
  const std::string* text = std::get_if<std::string>(&value);
  switch (field.sql_null) {
    case SqlNull::none:
      break;
    case SqlNull::empty_text:
      if (text && text->empty()) return {};
      break;
    case SqlNull::not_positive:
      if ((number && !(*number > 0)) || (integer && *integer <= 0)) return {};
      break;
    case SqlNull::nan:
      if (number && std::isnan(*number)) return {};
      break;
  }
  return value;
}

void set_from_sql(const MeasurementField& field, Measurement& m, const SqlValue& value) {
  if (field.stored && !field.stored(m)) return;
  if (std::holds_alternative<std::monostate>(value)) {
    if (field.sql_null == SqlNull::nan) {
      field.from_sql(m, SqlValue(std::numeric_limits<double>::quiet_NaN()));
    }
    return;
  }
  field.from_sql(m, value);
}

const std::vector<DerivedColumn>& measurement_derived_columns() {
  static const std::vector<DerivedColumn> columns = {
      {"gbps", "REAL",
       [](const Measurement& m) { return has_rate(m) ? SqlValue(m.gbps()) : SqlValue(); }},
      {"tflops", "REAL",
       [](const Measurement& m) { return has_rate(m) ? SqlValue(m.tflops()) : SqlValue(); }},
  };
  return columns;
}

}  // namespace attn
