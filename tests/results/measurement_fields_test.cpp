// The field table (results/measurement_fields.hpp) against what it describes: every member of
// Measurement and of its parts has a row, and every column of `measurements` is a row's (or one
// the store fills itself), with the type the schema declares.
#include "results/measurement_fields.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <set>
#include <type_traits>
#include <utility>

#include "results/sqlite.hpp"
#include "results/store.hpp"

namespace attn {
namespace {

// How many members an aggregate has: the largest number of initializers T{...} accepts, each one
// an AnyMember that converts to whatever member it initialises.
struct AnyMember {
  template <typename T>
  operator T() const;
};

template <typename T, typename Indices, typename = void>
struct BraceInitialisable : std::false_type {};
template <typename T, size_t... I>
struct BraceInitialisable<T, std::index_sequence<I...>,
                          std::void_t<decltype(T{(void(I), AnyMember{})...})>> : std::true_type {};

template <typename T, size_t N = 0>
constexpr size_t aggregate_members() {
  static_assert(std::is_aggregate_v<T>, "the count works on aggregates only");
  if constexpr (BraceInitialisable<T, std::make_index_sequence<N + 1>>::value) {
    return aggregate_members<T, N + 1>();
  } else {
    return N;
  }
}

size_t rows_in(const char* json_object) {
  size_t n = 0;
  for (const MeasurementField& f : measurement_fields()) {
    const bool same = json_object == nullptr
                          ? f.json_object == nullptr
                          : f.json_object && !std::strcmp(f.json_object, json_object);
    n += same ? 1 : 0;
  }
  return n;
}

TEST(MeasurementFields, EveryMemberOfMeasurementAndItsPartsHasARow) {
  const char* fix = ": add the new member to the table in results/measurement_fields.cpp";
  EXPECT_EQ(aggregate_members<Statistics>(), rows_in("stats")) << "Statistics" << fix;
  EXPECT_EQ(aggregate_members<TimingDetails>(), rows_in("timing")) << "TimingDetails" << fix;
  EXPECT_EQ(aggregate_members<ClockRecord>(), rows_in("clocks")) << "ClockRecord" << fix;
  EXPECT_EQ(aggregate_members<Verification>(), rows_in("verification")) << "Verification" << fix;
  // Measurement's own members, and one member per part: stats, timing, clocks, verification.
  EXPECT_EQ(aggregate_members<Measurement>(), rows_in(nullptr) + 4) << "Measurement" << fix;
}

TEST(MeasurementFields, TheMemberCountSeesEveryKindOfMember) {
  struct Example {
    std::string text;
    std::optional<double> maybe;
    std::vector<bool> flags;
    Statistics part;
    Disposition disposition = Disposition::passed;
    size_t count = 0;
  };
  EXPECT_EQ(aggregate_members<Example>(), 6u);
}

TEST(MeasurementFields, ColumnsAndJsonPlacesAreUnique) {
  std::set<std::string> columns, places;
  for (const MeasurementField& f : measurement_fields()) {
    if (f.column) {
      EXPECT_TRUE(columns.insert(f.column).second) << f.column;
    }
    const std::string place = std::string(f.json_object ? f.json_object : "") + "/" + f.json_key;
    EXPECT_TRUE(places.insert(place).second) << place;
    // A JSON key of the top level never names one of the objects.
    if (!f.json_object) {
      EXPECT_EQ(rows_in(f.json_key), 0u) << f.json_key;
    }
  }
  for (const DerivedColumn& d : measurement_derived_columns()) {
    EXPECT_TRUE(columns.insert(d.column).second) << d.column;
  }
}

TEST(MeasurementFields, EveryColumnOfTheSchemaIsInTheTableWithItsType) {
  Store store(":memory:");
  Statement s(store.database(), "SELECT name, type FROM pragma_table_info('measurements')");
  std::map<std::string, std::string> schema;
  while (s.step()) schema[s.column_text(0)] = s.column_text(1);

  std::map<std::string, std::string> described;
  for (const MeasurementField& f : measurement_fields()) {
    if (f.column) {
      described[f.column] = f.sql_type;
    } else {
      EXPECT_EQ(f.sql_type, nullptr) << f.json_key;
      EXPECT_EQ(f.stored, nullptr) << f.json_key;
    }
  }
  for (const DerivedColumn& d : measurement_derived_columns()) described[d.column] = d.sql_type;
  for (const auto& [column, type] : described) {
    ASSERT_TRUE(schema.count(column)) << column << " is in the table but no migration adds it";
    EXPECT_EQ(schema[column], type) << column;
  }
  const std::set<std::string> store_keys = {"id",          "run_id",     "device_id",
                                            "workload_id", "created_at", "uid"};
  for (const auto& [column, type] : schema) {
    EXPECT_TRUE(described.count(column) || store_keys.count(column))
        << "measurements." << column << " is in no row of results/measurement_fields.cpp";
  }
}

}  // namespace
}  // namespace attn
