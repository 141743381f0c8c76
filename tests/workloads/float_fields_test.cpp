// Fields read as doubles but used as 32-bit floats (Batch::softmax_scale, logits_soft_cap,
// sink_logits) are checked in float range: 1e39 would become infinity and every output NaN, 1e-50
// would become 0.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/workloads/test_util.hpp"
#include "workloads/batch.hpp"

namespace attn {
namespace {

using nlohmann::json;
using test::problems_of;
using test::valid_workload_json;

json with_model_field(const char* key, const json& value) {
  json doc = valid_workload_json();
  doc["schema_version"] = 2;
  doc["model"][key] = value;
  return doc;
}

TEST(FloatFields, ScaleAndSoftCapMustStayFiniteAsFloats) {
  for (const char* key : {"softmax_scale", "logits_soft_cap"}) {
    SCOPED_TRACE(key);
    EXPECT_PROBLEM(problems_of(with_model_field(key, 1e39)),
                   std::string("/model/") + key +
                       ": must be at most 3.4028235e+38 (it is used as a 32-bit float), got 1e+39");
    EXPECT_PROBLEM(problems_of(with_model_field(key, 1e-50)),
                   std::string("/model/") + key + ": rounds to 0 as a 32-bit float");
    EXPECT_PROBLEM(problems_of(with_model_field(key, 0.0)), "must be a finite number > 0");
  }
}

TEST(FloatFields, ValuesInFloatRangeAreKeptAndStayFinite) {
  for (const double value : {3.0e38, 1e-30, 0.125}) {
    json doc = with_model_field("softmax_scale", value);
    doc["model"]["logits_soft_cap"] = value;
    const Batch batch = generate_batch(parse_workload(doc.dump(), "t"));
    EXPECT_TRUE(std::isfinite(batch.softmax_scale)) << value;
    EXPECT_GT(batch.softmax_scale, 0.0f) << value;
    EXPECT_TRUE(std::isfinite(batch.logits_soft_cap)) << value;
    EXPECT_GT(batch.logits_soft_cap, 0.0f) << value;
  }
}

TEST(FloatFields, SinkLogitsMustStayFiniteAsFloats) {
  json doc = with_model_field("attention_sinks", json::array({0.5, 1e39, -1e39, 1.0, 0, 0, 0, 0}));
  const std::vector<std::string> problems = problems_of(doc);
  EXPECT_PROBLEM(problems,
                 "/model/attention_sinks/1: expected a finite number of at most "
                 "3.4028235e+38 in magnitude (it is used as a 32-bit float)");
  EXPECT_PROBLEM(problems, "/model/attention_sinks/2:");
  EXPECT_EQ(problems.size(), 2u) << test::joined(problems);
}

}  // namespace
}  // namespace attn
