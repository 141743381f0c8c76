// The JSON Schema of kernel spec files names the features the parser knows, with the values the
// parser accepts: a feature added to the schema of batches (workloads/batch_features.hpp) that the
// spec schema does not list, or a choice it lists that the parser refuses, fails here.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "kernels/user/kernel_spec_schema.hpp"
#include "kernels/user/user_kernel_spec.hpp"
#include "workloads/batch_features.hpp"

namespace attn {
namespace {

nlohmann::json spec_schema() {
  return nlohmann::json::parse(kernel_spec_schema_text());
}

TEST(KernelSpecSchema, ListsEveryFeatureOfTheBatchSchema) {
  const nlohmann::json features = spec_schema().at("/properties/features/properties"_json_pointer);
  std::set<std::string> listed, known;
  for (const auto& [name, value] : features.items()) listed.insert(name);
  for (const FeatureInfo& info : feature_schema()) known.insert(info.name);
  EXPECT_EQ(listed, known);
}

TEST(KernelSpecSchema, ChoicesAreTheParsersLessVllm) {
  const nlohmann::json features = spec_schema().at("/properties/features/properties"_json_pointer);
  for (const FeatureInfo& info : feature_schema()) {
    if (info.kind != FeatureKind::choice) continue;
    SCOPED_TRACE(info.name);
    std::vector<std::string> expected = info.choices;
    expected.erase(std::remove(expected.begin(), expected.end(), "vllm"), expected.end());
    EXPECT_EQ(features.at(info.name).at("/items/enum"_json_pointer).get<std::vector<std::string>>(),
              expected);
  }
}

TEST(KernelSpecSchema, AxisNamesMayNotBeBatchQuantitiesOrFunctions) {
  const std::vector<std::string> refused =
      spec_schema()
          .at("/properties/axes/propertyNames/not/enum"_json_pointer)
          .get<std::vector<std::string>>();
  std::vector<std::string> expected = batch_quantity_names();
  const std::vector<std::string>& functions = Expression::functions();
  expected.insert(expected.end(), functions.begin(), functions.end());
  EXPECT_EQ(std::set<std::string>(refused.begin(), refused.end()),
            std::set<std::string>(expected.begin(), expected.end()));
}

TEST(KernelSpecSchema, RequiresTheFeaturesEveryBatchReports) {
  const auto required = spec_schema()
                            .at("/properties/features/required"_json_pointer)
                            .get<std::vector<std::string>>();
  EXPECT_EQ(std::set<std::string>(required.begin(), required.end()),
            (std::set<std::string>{feature::kQueries, feature::kMask, feature::kKvLayout,
                                   feature::kDtype, feature::kHeadDim, feature::kPageSize}));
}

}  // namespace
}  // namespace attn
