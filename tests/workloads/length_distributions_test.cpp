// Drawn lengths: deterministic in the seed, inside their clamps, with roughly the asked moments;
// trace phases; limits apply to the drawn lengths.
#include <algorithm>
#include <cmath>
#include <map>

#include <gtest/gtest.h>

#include "tests/workloads/test_util.hpp"
#include "workloads/counter_rng.hpp"
#include "workloads/length_sampling.hpp"
#include "workloads/workload_validation.hpp"

namespace attn {
namespace {

LengthSpec make(LengthDistribution d, int64_t min, int64_t max) {
  LengthSpec l;
  l.distribution = d;
  l.min = min;
  l.max = max;
  return l;
}

std::vector<int64_t> draws(const LengthSpec& l, int n, uint64_t seed = 1) {
  std::vector<int64_t> out;
  const uint64_t key = stream_key(seed, kLengthStreamBase);
  for (int i = 0; i < n; ++i) out.push_back(draw_length(l, key, uint64_t(i)));
  return out;
}

double mean_of(const std::vector<int64_t>& v) {
  double sum = 0;
  for (int64_t x : v) sum += double(x);
  return sum / double(v.size());
}

TEST(LengthDistributions, UniformCoversItsRangeEvenly) {
  auto v = draws(make(LengthDistribution::uniform, 10, 19), 20000);
  std::map<int64_t, int> counts;
  for (int64_t x : v) ++counts[x];
  ASSERT_EQ(counts.size(), 10u);
  EXPECT_EQ(counts.begin()->first, 10);
  EXPECT_EQ(counts.rbegin()->first, 19);
  for (auto [value, count] : counts) EXPECT_NEAR(count, 2000, 200) << value;
}

TEST(LengthDistributions, NormalHasItsMomentsAndClamps) {
  LengthSpec l = make(LengthDistribution::normal, 0, 1000000);
  l.mean = 500;
  l.stddev = 50;
  auto v = draws(l, 20000);
  const double mean = mean_of(v);
  double var = 0;
  for (int64_t x : v) var += (double(x) - mean) * (double(x) - mean);
  EXPECT_NEAR(mean, 500, 2);
  EXPECT_NEAR(std::sqrt(var / double(v.size())), 50, 2);
  l.min = 480;
  l.max = 510;
  for (int64_t x : draws(l, 2000)) {
    ASSERT_GE(x, 480);
    ASSERT_LE(x, 510);
  }
}

TEST(LengthDistributions, LognormalMedianAndClamp) {
  LengthSpec l = make(LengthDistribution::lognormal, 16, 32768);
  l.median = 1100;
  l.sigma = 1.0;
  auto v = draws(l, 20001);
  std::nth_element(v.begin(), v.begin() + 10000, v.end());
  EXPECT_NEAR(double(v[10000]), 1100, 40);
  EXPECT_GE(*std::min_element(v.begin(), v.end()), 16);
  EXPECT_LE(*std::max_element(v.begin(), v.end()), 32768);
}

TEST(LengthDistributions, ZipfMatchesItsProbabilities) {
  LengthSpec l = make(LengthDistribution::zipf, 5, 14);  // k = 0..9, P ~ 1 / (k + 1)^1.2
  l.exponent = 1.2;
  const int n = 50000;
  std::map<int64_t, int> counts;
  for (int64_t x : draws(l, n)) ++counts[x];
  double norm = 0;
  for (int k = 0; k < 10; ++k) norm += std::pow(k + 1.0, -1.2);
  for (int k = 0; k < 10; ++k) {
    const double expected = n * std::pow(k + 1.0, -1.2) / norm;
    EXPECT_NEAR(counts[5 + k], expected, 5 * std::sqrt(expected) + 10) << "k " << k;
  }
  // A wide range stays fast and in range.
  l = make(LengthDistribution::zipf, 1, int64_t(1) << 20);
  l.exponent = 1.0;
  for (int64_t x : draws(l, 100000)) {
    ASSERT_GE(x, 1);
    ASSERT_LE(x, int64_t(1) << 20);
  }
}

TEST(LengthDistributions, DeterministicInTheSeed) {
  LengthSpec l = make(LengthDistribution::lognormal, 1, 100000);
  l.median = 300;
  l.sigma = 1.5;
  EXPECT_EQ(draws(l, 1000, 7), draws(l, 1000, 7));
  EXPECT_NE(draws(l, 1000, 7), draws(l, 1000, 8));
}

TEST(LengthDistributions, ParsedSpecsExpandAndLimitsApplyToDrawnLengths) {
  nlohmann::json doc = test::valid_workload_json();
  doc["schema_version"] = 2;
  doc["sequences"] = nlohmann::json::parse(R"([
    {"context_len": {"distribution": "uniform", "min": 100, "max": 200},
     "query_len": {"distribution": "zipf", "exponent": 1.1, "max": 8}, "count": 50}])");
  WorkloadSpec spec = parse_workload(doc.dump(), "t");
  auto lengths = expand_sequences(spec);
  ASSERT_EQ(lengths.size(), 50u);
  int64_t total_kv = 0;
  for (auto l : lengths) {
    EXPECT_GE(l.context_len, 100);
    EXPECT_LE(l.context_len, 200);
    EXPECT_GE(l.query_len, 1);
    EXPECT_LE(l.query_len, 8);
    total_kv += l.context_len + l.query_len;
  }
  EXPECT_EQ(workload_totals(spec).total_kv, total_kv);
  // A huge max is fine when the drawn lengths are small; huge drawn lengths are refused.
  doc["sequences"][0]["context_len"] = {
      {"distribution", "uniform"}, {"min", 1 << 30}, {"max", int64_t(1) << 40}};
  EXPECT_PROBLEM(test::problems_of(doc), "/sequences: the total of kv tokens");
}

WorkloadSpec trace_spec(const std::string& phase, int64_t chunk = 0) {
  nlohmann::json doc = test::valid_workload_json();
  doc["schema_version"] = 2;
  nlohmann::json trace = {
      {"file", "builtin:chat-sample"}, {"phase", phase}, {"first", 10}, {"count", 200}};
  if (chunk) trace["chunk"] = chunk;
  doc["sequences"] = nlohmann::json::array({{{"trace", trace}}});
  return parse_workload(doc.dump(), "t");
}

TEST(Traces, PhasesTurnRowsIntoLengths) {
  const WorkloadSpec prefill = trace_spec("prefill");
  const auto& rows = prefill.sequences[0].trace->rows;
  ASSERT_EQ(rows.size(), 1000u);
  EXPECT_EQ(prefill.sequences[0].trace->resolved_path, "builtin:chat-sample");
  EXPECT_EQ(prefill.sequences[0].trace->sha256.size(), 64u);
  auto p = expand_sequences(prefill);
  ASSERT_EQ(p.size(), 200u);
  for (size_t i = 0; i < p.size(); ++i) {
    EXPECT_EQ(p[i].context_len, 0);
    EXPECT_EQ(p[i].query_len, rows[10 + i].first);
  }
  auto d = expand_sequences(trace_spec("decode"));
  bool some_progress = false;
  for (size_t i = 0; i < d.size(); ++i) {
    EXPECT_EQ(d[i].query_len, 1);
    EXPECT_GE(d[i].context_len, rows[10 + i].first);
    EXPECT_LE(d[i].context_len, rows[10 + i].first + rows[10 + i].second - 1);
    some_progress = some_progress || d[i].context_len > rows[10 + i].first;
  }
  EXPECT_TRUE(some_progress);
  auto c = expand_sequences(trace_spec("chunked_prefill", 256));
  for (size_t i = 0; i < c.size(); ++i) {
    const int64_t prompt = rows[10 + i].first;
    EXPECT_EQ(c[i].context_len % 256, 0);
    EXPECT_LT(c[i].context_len, prompt);
    EXPECT_EQ(c[i].query_len, std::min<int64_t>(256, prompt - c[i].context_len));
  }
}

TEST(Traces, RelativeFilesResolveAgainstTheWorkloadsDirectory) {
  nlohmann::json doc = test::valid_workload_json();
  doc["schema_version"] = 2;
  doc["sequences"] = nlohmann::json::parse(R"([{"trace": {"file": "bad-trace.csv"}}])");
  const std::string dir = std::string(ATTN_SOURCE_DIR) + "/tests/workloads/malformed";
  auto problems = [&](const std::string& base) {
    try {
      parse_workload(doc.dump(), "t", base);
    } catch (const InputError& e) {
      return e.problems();
    }
    return std::vector<std::string>{};
  };
  EXPECT_PROBLEM(problems(dir), "line 3: column \"prompt_len\": expected an integer");
  EXPECT_PROBLEM(problems(""), "cannot open \"bad-trace.csv\"");
}

}  // namespace
}  // namespace attn
